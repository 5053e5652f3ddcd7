"""`kubectl disagg rollout dashboard`: the fleet in a browser, live (as `kubectl argo rollouts
dashboard` serves Argo's).

Flags → the hub of the namespace (one LIST+WATCH per kind, `dashboard.hub.Hub`) → the looks
(the cluster's stored sets, or with --gitops the directory's sets against the cluster) → the
server (`dashboard.app.start`), whose URL with its token is printed; it serves until Ctrl-C.
The actions go through the verbs' own library over the cluster's store made here (`ClusterStore`,
as `rollout promote` makes it), so the page records who acted exactly as the CLI does.
Everything under `kubectl_disagg.dashboard` is imported here alone, when the command runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from kubectl_disagg.commands import _inputs, _options, _session
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.commands._modes import GITOPS_INPUT, Command, Mode
from kubectl_disagg.exits import Exit

if TYPE_CHECKING:
    from kubectl_disagg.core.api.model import DisaggregatedSet
    from kubectl_disagg.dashboard.hub import Hub
    from kubectl_disagg.dashboard.server import Act
    from kubectl_disagg.gitops.directory import Directory
    from kubectl_disagg.kube.session import Session
    from kubectl_disagg.rollout.store import PositionStore

MODES = [Mode("gitops", needs=GITOPS_INPUT, refuses=("all_namespaces", "read_only"))]
LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 3200


@click.command(cls=Command, modes=MODES, exit_codes=[exit_section(Exit)])
@_options.filenames(required=False)
@_options.namespace
@click.option("-A", "--all-namespaces", "all_namespaces", is_flag=True,
              help="The sets of every namespace (one watch per kind across them).")
@_session.cluster
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="The port to listen on (0: any free one).")
@click.option("--address", default=LOOPBACK, show_default=True,
              help="The address to listen on; another than loopback is reachable by others, and warned of.")
@click.option("--read-only", is_flag=True, help="No action buttons: the page only shows.")
@click.option("--gitops", is_flag=True,
              help="The sets of -f DIR driven through git: the committed position beside the cluster's; the page "
                   "shows each action's command instead of a button (no button writes git).")
@_options.pass_options
def dashboard(options: _options.Options, all_namespaces: bool, port: int, address: str, read_only: bool,
              gitops: bool) -> int:
    """Serve a live view of the fleet in a browser, for the sets of a namespace (or a git directory).

    \b
    kubectl disagg rollout dashboard -n serving   # then open the URL it prints
    kubectl disagg rollout dashboard --gitops -f apps/llama/

    Per set: slices × roles by revision and readiness, the waves, the gate ahead,
    the budget, the history and recent events, as the cluster changes. It listens on 127.0.0.1 only (--address to change it, with a warning), and the URL it prints
    carries a token made for this run: share neither. In the cluster's mode the page can promote,
    pause, resume, abort and retry (each with a reason, recorded with who acted, as the CLI
    records it); --read-only removes the buttons.
    """
    from kubectl_disagg.dashboard import app
    from kubectl_disagg.dashboard.hub import KINDS, CachedCluster, Hub
    from kubectl_disagg.kube.client import EVENT, LWS, ROLLOUT_STATE, SERVICE
    from kubectl_disagg.views import dashboard as words

    if address not in (LOOPBACK, "localhost", "::1"):
        click.echo(words.exposed_warning(address), err=True)
    load = _git_directory(options) if gitops else None
    with _session.session(options) as cluster:
        if gitops:
            assert load is not None
            namespaces = {entry.namespace for entry in load().sets}
            namespace = namespaces.pop() if len(namespaces) == 1 else ""
            hub = Hub(cluster.client, namespace, (LWS, SERVICE, ROLLOUT_STATE, EVENT), options.clock)
            cached = CachedCluster(cluster, hub)
            from kubectl_disagg.dashboard.looks import git_looks

            where = " ".join(options.filenames)
            looks = git_looks(hub, cached, load, lambda name, namespace: words.git_commands(where), options.clock)
            scope, act = where, None
        else:
            namespace = "" if all_namespaces else (options.namespace or cluster.default_namespace)
            hub = Hub(cluster.client, namespace, KINDS, options.clock)
            cached = CachedCluster(cluster, hub)
            from kubectl_disagg.dashboard.looks import cluster_looks

            looks = cluster_looks(hub, cached, options.clock)
            scope = "all namespaces" if all_namespaces else f"namespace {namespace}"
            act = None if read_only else _actions(hub, cluster, options)
        served, stop = app.start(hub, looks, act, address, port, mode="gitops" if gitops else "cluster", scope=scope,
                                 clock=options.clock)
        assert served.server is not None
        click.echo(words.serving_line(served.url(), scope, act is not None))
        try:
            served.server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            stop.set()
            hub.stop()
            served.server.server_close()
    return 0


def _actions(hub: Hub, cluster: Session, options: _options.Options) -> Act:
    """The verbs over the cluster's store of the one set acted on, made as `rollout promote` makes it."""
    from kubectl_disagg.dashboard.actions import actions
    from kubectl_disagg.rollout.store import ClusterStore

    def store_for(ds: DisaggregatedSet, namespace: str) -> PositionStore:
        return ClusterStore(cluster, [ds], namespace, clock=options.clock)

    return actions(hub, store_for, lambda name, namespace, patch: cluster.patch_set(name, namespace, patch),
                   options.clock)


def _git_directory(options: _options.Options) -> Callable[[], Directory]:
    """The directory of -f, read and loaded again at each look (a commit moves the committed position)."""
    from kubectl_disagg.gitops import directory as directories

    def load() -> Directory:
        reading, tree, _ = _inputs.gitops_inputs(options)
        return directories.load(tree, reading, namespace=options.namespace,
                                fallback=_inputs.gitops_namespace(options), explicit_must_hold=True)
    return load
