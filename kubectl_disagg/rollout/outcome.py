"""How a rollout verb ended (core/delivery/outcome.py `Outcome`, one type for both stores),
mapped once per command family to its exit table (`exits.py`, whose numbers are the contract):
one mapping and one aggregation per family, whichever store ran it."""

from __future__ import annotations

from collections.abc import Iterable

from kubectl_disagg.core.delivery.outcome import Outcome, most_pressing
from kubectl_disagg.exits import StatusExit, StepExit

__all__ = ["STATUS_EXIT", "STEP_EXIT", "step_exit"]


# `rollout step`, both stores: a step taken and a run to the end (--until-complete) are done; a
# rollout with nothing left to do (git: nothing written) says so; waiting is git's alone.
STEP_EXIT = {Outcome.ADVANCED: StepExit.OK, Outcome.FINISHED: StepExit.OK, Outcome.ERROR: StepExit.ERROR,
             Outcome.WAITING: StepExit.WAITING, Outcome.COMPLETE: StepExit.COMPLETE,
             Outcome.REFUSED: StepExit.REFUSED, Outcome.HELD: StepExit.HELD, Outcome.TIMEOUT: StepExit.TIMEOUT}
# `rollout status`, both stores: through git its code is the next action's (what `rollout step
# --gitops` would end with: 0 the step is next, 3 refused), in the cluster whether the set is there.
STATUS_EXIT = {Outcome.AVAILABLE: StatusExit.AVAILABLE, Outcome.NOT_AVAILABLE: StatusExit.NOT_AVAILABLE,
               Outcome.TIMEOUT: StatusExit.TIMEOUT, Outcome.HELD: StatusExit.HELD,
               Outcome.ADVANCED: StatusExit.AVAILABLE, Outcome.WAITING: StatusExit.WAITING,
               Outcome.COMPLETE: StatusExit.COMPLETE, Outcome.REFUSED: StatusExit.NOT_AVAILABLE}


def step_exit(outcomes: Iterable[Outcome]) -> StepExit:
    """The code of a run of `rollout step` (either store; `rollout status --gitops` reads it as
    the next action's): its most pressing set's."""
    return STEP_EXIT[most_pressing(outcomes)]
