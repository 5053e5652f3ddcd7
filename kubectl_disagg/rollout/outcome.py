"""How a rollout verb ended, one type for both modes (the cluster, git): `Outcome`, declared
most pressing first, and one mapping per command family to its exit table (`exits.py`, whose
numbers are the contract).

A run over several sets ends with the outcome that asks most of the operator (`most_pressing`):
a refusal before a timeout, before a wait, before a hold, before a step taken, before a rollout
with nothing left to do.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from kubectl_disagg.exits import StatusExit, StepExit


class Outcome(StrEnum):
    """What one set's run came to; the order of declaration is the priority (first: most pressing)."""

    ERROR = "error"  # a write the API server refused (a server dry run): the message lists them
    REFUSED = "refused"  # the live objects cannot be explained; a person must look
    TIMEOUT = "timeout"  # the wait, the lease queue or an analysis gate ran out of time
    WAITING = "waiting"  # the cluster does not show the state's step yet (or it is not settled)
    HELD = "held"  # a RolloutPolicy holds the rollout (a gate, paused, aborted over): a verb passes it
    NOT_AVAILABLE = "not available"  # `rollout status`: not there yet (not Available, or not complete)
    ADVANCED = "advanced"  # a step taken: a pass ran (the cluster), a new state to commit (git)
    COMPLETE = "complete"  # nothing left to roll
    AVAILABLE = "available"  # `rollout status`: there (Available, or with --for=complete complete)


def most_pressing(outcomes: Iterable[Outcome]) -> Outcome:
    """Of several sets' outcomes, the one that asks most of the operator."""
    order = list(Outcome)
    return min(outcomes, key=order.index)


# One mapping per command family, to its exit table.
GITOPS_EXIT = {Outcome.ADVANCED: StepExit.OK, Outcome.WAITING: StepExit.WAITING,
               Outcome.COMPLETE: StepExit.COMPLETE, Outcome.REFUSED: StepExit.REFUSED,
               Outcome.HELD: StepExit.HELD, Outcome.TIMEOUT: StepExit.TIMEOUT}
# `rollout step` in the cluster: a pass ran and --until-complete found the set complete are both done.
STEP_EXIT = {Outcome.ADVANCED: StepExit.OK, Outcome.COMPLETE: StepExit.OK, Outcome.ERROR: StepExit.ERROR,
             Outcome.REFUSED: StepExit.REFUSED, Outcome.TIMEOUT: StepExit.TIMEOUT, Outcome.HELD: StepExit.HELD}
# `rollout status`, both stores: through git its code is the next action's (what `rollout step
# --gitops` would end with: 0 the step is next, 3 refused), in the cluster whether the set is there.
STATUS_EXIT = {Outcome.AVAILABLE: StatusExit.AVAILABLE, Outcome.NOT_AVAILABLE: StatusExit.NOT_AVAILABLE,
               Outcome.TIMEOUT: StatusExit.TIMEOUT, Outcome.HELD: StatusExit.HELD,
               Outcome.ADVANCED: StatusExit.AVAILABLE, Outcome.WAITING: StatusExit.WAITING,
               Outcome.COMPLETE: StatusExit.COMPLETE, Outcome.REFUSED: StatusExit.NOT_AVAILABLE}


def gitops_exit(outcomes: Iterable[Outcome]) -> StepExit:
    """The code of a git run (`rollout step|status --gitops`): its most pressing set's."""
    return GITOPS_EXIT[most_pressing(outcomes)]
