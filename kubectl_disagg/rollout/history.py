"""`rollout history` and `rollout undo` in the cluster: the revisions a set has run, as `rollout
step` and the verbs keep them in its RolloutState object (core/history.py's rules)."""

from __future__ import annotations

from kubectl_disagg.core.history import RevisionEntry, entries, history_of
from kubectl_disagg.rollout.progressive import read_state


def cluster_history(cluster, name: str, namespace: str) -> list[RevisionEntry]:
    """The entries of the set `name`'s RolloutState, oldest first (none: never stepped here);
    refused where the cluster does not serve the kind."""
    return entries(history_of(read_state(cluster, name, namespace)))
