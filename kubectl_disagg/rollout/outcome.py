"""How a rollout verb ended (core/delivery/outcome.py `Outcome`, one type for both stores),
mapped once per command family to its exit table (`exits.py`, whose numbers are the contract)."""

from __future__ import annotations

from collections.abc import Iterable

from kubectl_disagg.core.delivery.outcome import Outcome, most_pressing
from kubectl_disagg.exits import StatusExit, StepExit

__all__ = ["GITOPS_EXIT", "STATUS_EXIT", "STEP_EXIT", "gitops_exit"]


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
