"""The API server session of the commands that talk to one (`rollout`, `handover`,
`validate --server`); the offline commands never import it, nor anything under `kube/`."""

from __future__ import annotations

from kubectl_disagg.core import sets
from kubectl_disagg.kube.executor import ClusterExecutor
from kubectl_disagg.kube.session import Session


def session(kubeconfig: str | None, context: str | None) -> Session:
    """The connection a reading command opens (as a context manager) and closes."""
    return Session(kubeconfig, context)


def executor(kubeconfig: str | None, context: str | None) -> ClusterExecutor:
    """The connection a writing command (`rollout step`, `handover`) opens and closes: a
    session that also carries out actions."""
    return ClusterExecutor(kubeconfig, context)


def stored_set(cluster: Session, name: str, namespace: str | None):
    """The DisaggregatedSet object stored in the cluster (no controller acts on it), validated
    like a file: GitOps users apply the set itself and step or watch it by name."""
    namespace = namespace or cluster.default_namespace
    from kubectl_disagg.rollout.progressive import with_stored_policy  # its RolloutPolicy, if any

    return with_stored_policy(cluster, sets.set_from_object(cluster.get_set(name, namespace)), namespace)
