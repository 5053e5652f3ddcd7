"""How a rollout verb ended, one type for both stores (the cluster, git): `Outcome`, declared
most pressing first (rollout/outcome.py maps it to each command family's exit table).

A run over several sets ends with the outcome that asks most of the operator (`most_pressing`):
a refusal before a timeout, before a wait, before a hold, before a step taken (or run to the
end), before a rollout with nothing left to do.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Outcome(StrEnum):
    """What one set's run came to; the order of declaration is the priority (first: most pressing)."""

    ERROR = "error"  # a write the API server refused (a server dry run): the message lists them
    REFUSED = "refused"  # the live objects cannot be explained; a person must look
    TIMEOUT = "timeout"  # the wait, the lease queue or an analysis gate ran out of time
    WAITING = "waiting"  # the cluster does not show the state's step yet (or it is not settled)
    HELD = "held"  # a RolloutPolicy holds the rollout (a gate, paused, aborted over): a verb passes it
    NOT_AVAILABLE = "not available"  # `rollout status`: not there yet (not Available, or not complete)
    ADVANCED = "advanced"  # a step taken: a pass ran (the cluster), a new state to commit (git)
    FINISHED = "finished"  # --until-complete passed until the set was complete (a step taken: it ran)
    COMPLETE = "complete"  # nothing left to roll
    AVAILABLE = "available"  # `rollout status`: there (Available, or with --for=complete complete)


def most_pressing(outcomes: Iterable[Outcome]) -> Outcome:
    """Of several sets' outcomes, the one that asks most of the operator."""
    order = list(Outcome)
    return min(outcomes, key=order.index)
