"""Where a slice's committed counts sit on the plan of its rollout (step i of N). Pure, and
light to import: `cmp generate` summarises the state with it (gitops/served.py) and must not
load the stepper."""

from __future__ import annotations

from kubectl_disagg.core import planner
from kubectl_disagg.core.model import DisaggregatedSet
from kubectl_disagg.gitops.state import RolloutState


def committed_position(ds: DisaggregatedSet, state: RolloutState, slice_index: int) -> tuple[int, int] | None:
    """(step i, of N) of the slice's committed counts on the plan from where its rollout began."""
    deployed = state.deployed(slice_index)
    olds = {rev: counts for rev, counts in deployed.items() if rev != ds.revision}
    if not olds:
        return None
    initial = state.initial.get(slice_index, {})
    names = ds.role_names
    started = [sum(initial.get(rev, counts).get(role, 0) for rev, counts in olds.items()) for role in names]
    old = [sum(counts.get(role, 0) for counts in olds.values()) for role in names]
    new = [deployed.get(ds.revision, {}).get(role, 0) for role in names]
    inputs = planner.inputs_for_set(ds, started)
    try:
        trajectory = planner.plan(inputs.initial_old, inputs.target, inputs.configs)
    except planner.PlanDidNotConverge:
        return None
    index = planner.find_position(trajectory, old, new)
    return None if index is None else (index, len(trajectory) - 1)
