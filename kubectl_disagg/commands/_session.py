"""The API server session of the commands that talk to one (`rollout`, `handover`,
`validate --server`), and its flags; the offline commands never import it, nor anything under
`kube/`."""

from __future__ import annotations

import click

from kubectl_disagg.commands._options import Options, gathered
from kubectl_disagg.core import sets
from kubectl_disagg.kube.client import set_verbosity
from kubectl_disagg.kube.executor import ClusterExecutor
from kubectl_disagg.kube.session import Session


def cluster(func):
    """--kubeconfig, --context and -v/--v, like kubectl."""
    func = click.option("-v", "--v", "verbosity", type=click.IntRange(min=0), default=0, expose_value=False,
                        callback=_set_verbosity, metavar="N",
                        help="Log level of the API requests on stderr, as kubectl's: 6 each request with its "
                             "status and latency, 7 also headers, 8 also bodies (cut at 10 KiB), 9 whole "
                             "bodies; credentials are masked.")(func)
    func = click.option("--context", default=None, expose_value=False, callback=gathered,
                        help="The kubeconfig context to use.")(func)
    return click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False), expose_value=False,
                        callback=gathered,
                        help="Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).")(func)


def _set_verbosity(ctx: click.Context, param: click.Parameter, level: int) -> None:
    if level:
        set_verbosity(level)


def session(options: Options) -> Session:
    """The connection a reading command opens (as a context manager) and closes."""
    return Session(options.kubeconfig, options.context)


def executor(options: Options) -> ClusterExecutor:
    """The connection a writing command (`rollout step`, `handover`) opens and closes: a
    session that also carries out actions."""
    return ClusterExecutor(options.kubeconfig, options.context)


def stored_set(cluster: Session, name: str, namespace: str | None):
    """The DisaggregatedSet object stored in the cluster (no controller acts on it), validated
    like a file: GitOps users apply the set itself and step or watch it by name."""
    namespace = namespace or cluster.default_namespace
    from kubectl_disagg.rollout.progressive import with_stored_policy  # its RolloutPolicy, if any

    return with_stored_policy(cluster, sets.set_from_object(cluster.get_set(name, namespace)), namespace)
