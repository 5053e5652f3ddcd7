"""`rollout history` and `rollout undo` in the cluster: the revisions a set has run, as `rollout
step` and the verbs keep them in its RolloutState object (core/delivery/history.py's rules)."""

from __future__ import annotations

from kubectl_disagg.core.delivery.history import RevisionEntry, entries, forged, history_of
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.source import dotted
from kubectl_disagg.rollout.progressive import read_state


def cluster_history(cluster, name: str, namespace: str) -> list[RevisionEntry]:
    """The entries of the set `name`'s RolloutState, oldest first (none: never stepped here);
    refused where the cluster does not serve the kind, or where an entry's templates do not hash
    to its revision (`rolloutstate/NAME: history[i].revision: ...`, every such entry at once)."""
    stored = read_state(cluster, name, namespace)
    problems = forged(stored)
    if problems:
        raise UserError([Problem(f"rolloutstate/{name}", 0, dotted(path), message) for path, message in problems])
    return entries(history_of(stored))
