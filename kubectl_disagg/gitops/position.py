"""Where a slice's committed counts sit on the plan of its rollout (step i of N). Pure, and
light to import: `cmp generate` summarises the state with it (gitops/served.py) and must not
load the stepper."""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_disagg.core.controller import planner
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.planner import Step
from kubectl_disagg.gitops.state import RolloutState


def deployed_order(state: RolloutState | None) -> list[str]:
    """The state's revisions in the order they were deployed (its records keep that order)."""
    if state is None:
        return []
    used = {rev for deployed in state.replicas.values() for rev in deployed}
    return [rev for rev in state.revisions if rev in used]


def is_rollback(ds: DisaggregatedSet, state: RolloutState | None) -> bool:
    """The set's revision is one the state deployed before another: the template went back."""
    order = deployed_order(state)
    return ds.revision in order and order[-1] != ds.revision


def rollback_start(trajectory: Sequence[Step], current: int) -> int:
    """Where a rollback's plan stands when it begins: the reverted revision runs already, so
    the plan's ramp-up to it (the old revision kept whole) never ran; the rollback starts at
    the ramp's end, its last point before the old revision drains (the plan's start while the
    rollback itself still ramps up). Its steps are numbered from there."""
    ramp = max(index for index, step in enumerate(trajectory) if step.old == trajectory[0].old)
    return ramp if current > ramp else 0


def numbered(ds: DisaggregatedSet, state: RolloutState | None, trajectory: Sequence[Step], current: int) -> tuple[int, int]:
    """(step i, of N) of point `current` of a slice's plan; a rollback's from where it stood."""
    start = rollback_start(trajectory, current) if is_rollback(ds, state) else 0
    return current - start, len(trajectory) - 1 - start


def committed_position(ds: DisaggregatedSet, state: RolloutState, slice_index: int) -> tuple[int, int] | None:
    """(step i, of N) of the slice's committed counts on the plan from where its rollout began
    (a rollback's: from where the rollout stood)."""
    placed = planner.place_of(ds, state.deployed(slice_index), state.initial.get(slice_index, {}))
    return None if placed is None else numbered(ds, state, *placed)
