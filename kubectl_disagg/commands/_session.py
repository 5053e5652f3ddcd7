"""The API server session of the commands that talk to one (`rollout`, `handover`,
`validate --server`), and its flags; the offline commands never import it, nor anything under
`kube/`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from kubectl_disagg.commands import _inputs
from kubectl_disagg.commands._connection import impersonation
from kubectl_disagg.commands._options import F, Options, gathered
from kubectl_disagg.core.delivery import sets
from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client import Impersonation, set_verbosity
from kubectl_disagg.kube.named_set import Stored, find_set
from kubectl_disagg.kube.executor import ClusterExecutor
from kubectl_disagg.kube.session import Session
from kubectl_disagg.manifests.source import JsonObject

if TYPE_CHECKING:
    from kubectl_disagg.core.api.model import DisaggregatedSet
    from kubectl_disagg.gitops.directory import Directory
    from kubectl_disagg.inputs.tree import Reading, Tree


def cluster(func: F) -> F:
    """--kubeconfig, --context, --as, --as-group, --as-uid and -v/--v, like kubectl."""
    func = click.option("-v", "--v", "verbosity", type=click.IntRange(min=0), default=0, expose_value=False,
                        callback=_set_verbosity, metavar="N",
                        help="Log level of the API requests on stderr, as kubectl's: 6 each request with its "
                             "status and latency, 7 also headers, 8 also bodies (cut at 10 KiB), 9 whole "
                             "bodies; credentials are masked.")(func)
    func = impersonation(func)
    func = click.option("--context", default=None, expose_value=False, callback=gathered,
                        help="The kubeconfig context to use.")(func)
    return click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False), expose_value=False,
                        callback=gathered,
                        help="Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).")(func)


def _set_verbosity(ctx: click.Context, param: click.Parameter, level: int) -> None:
    if level:
        set_verbosity(level)


class Kubeconfig:
    """The `_options.Sessions` of a command run from the command line: the API server --kubeconfig and
    --context name (else $KUBECONFIG, then ~/.kube/config), as --as and its kin say, on the
    options' clock."""

    def session(self, options: Options) -> Session:
        return Session(options.kubeconfig, options.context, _impersonation(options), options.clock)

    def executor(self, options: Options) -> ClusterExecutor:
        return ClusterExecutor(options.kubeconfig, options.context, _impersonation(options), options.clock)


KUBECONFIG = Kubeconfig()


def session(options: Options) -> contextlib.AbstractContextManager[Session]:
    """The connection a reading command opens (as a context manager) and closes."""
    return (options.sessions or KUBECONFIG).session(options)


@contextlib.contextmanager
def session_and_directory(options: Options, state_file: str | None) -> Iterator[tuple[Session, Reading, Tree,
                                                                                   Directory]]:
    """A --gitops step's session and its -f tree with the directory loaded once (states included),
    a set that names no namespace placed as every --gitops command places it (`_inputs.
    gitops_namespace`); a kubeconfig that fails still lets the inputs' own problems be said first."""
    reading, tree = _inputs.gitops_tree(options, state_file)
    try:
        opened = session(options)
    except UserError:
        _inputs.gitops_directory(options, reading, tree, fallback="")  # the inputs' own problems first
        raise
    with opened as cluster:
        yield cluster, reading, tree, _inputs.gitops_directory(options, reading, tree)


def executor(options: Options) -> contextlib.AbstractContextManager[ClusterExecutor]:
    """The connection a writing command (`rollout step`, `handover`) opens and closes: a
    session that also carries out actions."""
    return (options.sessions or KUBECONFIG).executor(options)


def _impersonation(options: Options) -> Impersonation:
    return Impersonation(options.as_user, tuple(options.as_groups), options.as_uid)


def stored_set(cluster: Session, name: str, namespace: str | None) -> DisaggregatedSet:
    """The DisaggregatedSet object stored in the cluster (no controller acts on it), validated
    like a file: GitOps users apply the set itself and step or watch it by name."""
    obj = stored_object(cluster, name, namespace)
    from kubectl_disagg.rollout.progressive import with_stored_policy  # its RolloutPolicy, if any

    return with_stored_policy(cluster, sets.set_from_object(obj), namespace or cluster.default_namespace)


def stored_object(cluster: Session, name: str, namespace: str | None) -> JsonObject:
    """The set `name` as stored in the cluster. A set deployed with -f (only its LeaderWorkerSets
    carry the name) or none at all is an error that says so, with what runs and the command
    that works (`kube/named_set.find_set`, worded by `views/named_set`)."""
    found = find_set(cluster, name, namespace or cluster.default_namespace)
    if isinstance(found, Stored):
        return found.obj
    from kubectl_disagg.views.named_set import not_stored_lines

    raise UserError(not_stored_lines(found, click.get_current_context().info_name or "status", namespace))
