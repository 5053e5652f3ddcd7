"""The exit codes of the git-driven rollout commands, shared by `rollout step --gitops` (what a
step did) and `rollout status --gitops` (what the next action is)."""

from __future__ import annotations

from collections.abc import Iterable

EXIT_ADVANCED = 0  # a new state was written: commit it
EXIT_REFUSED = 3  # the live objects cannot be explained (nothing written)
EXIT_TIMEOUT = 4  # --wait ran out of time (nothing written)
EXIT_WAITING = 5  # the cluster does not show the committed step yet, or it is not ready (nothing written)
EXIT_COMPLETE = 6  # nothing left to roll (nothing written)
EXIT_HELD = 7  # a RolloutPolicy holds the rollout: a gate, paused, aborted over (nothing written)

_PRIORITY = [EXIT_REFUSED, EXIT_TIMEOUT, EXIT_WAITING, EXIT_HELD, EXIT_ADVANCED, EXIT_COMPLETE]


def most_pressing(codes: Iterable[int]) -> int:
    """Of several sets' codes, the one that asks most of the operator."""
    return min(codes, key=_PRIORITY.index)
