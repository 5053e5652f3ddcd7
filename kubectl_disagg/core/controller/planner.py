"""The coordinated rollout planner (design §5): KEP-766's N-dimensional rolling update.

Pure functions over per-role vectors (tuples of ints, one entry per role, in role order).
`next_step` answers "from this live state, what next?" exactly as the controller does, so a
client-side `rollout step` and the controller agree; `plan` repeats it from the start of a
rollout to show the whole trajectory.

All of design §5's divisions are real-valued; they are done here in exact integer arithmetic
(every operand is a non-negative count, so floor division is truncation), which keeps
10,000-replica plans free of float rounding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from kubectl_disagg.core.api.rollout_config import DEFAULT_SURGE, DEFAULT_UNAVAILABLE, RolloutConfig, resolve_config

if TYPE_CHECKING:
    from kubectl_disagg.core.api.model import DisaggregatedSet, Role

Vector = tuple[int, ...]
START_CONFIG = RolloutConfig(DEFAULT_SURGE, DEFAULT_UNAVAILABLE)  # removed roles roll with these (design §6)


class StepKind(StrEnum):
    """Which rule of design §5 produced a state (the trajectory's first state is `INITIAL`)."""

    INITIAL = "initial"
    CORRECTION = "correction"  # old above initialOld (interrupted rollout, manual edit): clamp
    FINAL_DRAIN = "final drain"  # every role's new is at target: drop all old at once
    SCALE_UP = "scale up"  # rule 1
    PROPORTIONAL_DRAIN = "proportional drain"  # rule 2
    DRAIN_AND_SCALE = "drain+scale"  # rule 3: surge blocks scale-up, so drain and scale together


@dataclass(frozen=True, slots=True)
class Step:
    """A state of a trajectory (`old`, `new`: Vector) and the StepKind that produced it."""

    old: Vector
    new: Vector
    kind: StepKind


@dataclass(frozen=True)
class PlanInputs:
    """Everything the planner needs, per role, in role order: role names, the initial_old and
    target Vectors, a RolloutConfig per role."""

    roles: tuple[str, ...]
    initial_old: Vector
    target: Vector
    configs: tuple[RolloutConfig, ...]


def role_config(role: Role | None) -> RolloutConfig:
    """A role's surge/unavailable budgets (design §6), resolved against its own replicas.

    `role` is a model Role, or None for a role that left the spec (it drains with the start values).
    """
    return START_CONFIG if role is None else resolve_config(role.rolling_update, role.replicas)


EXTERNAL_SEED_REPLICAS = 1  # what the controller seeds a fresh External role's scaler with


def role_target(role: Role | None, initial_old: int, current_new: int = 0) -> int:
    """A role's target in a rollout (design §4): the set's replicas; for an External role its
    RoleScaler's count (never below what new already runs) when read, else the capacity it had
    when the rollout started (an autoscaler owns its size); 0 for a role that left the spec."""
    if role is None:
        return 0
    if role.scaled:
        return max(role.replicas, current_new)
    if role.external:
        return max(initial_old, EXTERNAL_SEED_REPLICAS)
    return role.replicas


def inputs_for_set(ds: DisaggregatedSet, initial_old: Sequence[int]) -> PlanInputs:
    """A set's spec roles from `initial_old`: their targets and budgets come from the set
    (`role_target`: the one rule `rollout plan` and the stepper share)."""
    return PlanInputs(roles=tuple(ds.role_names), initial_old=tuple(initial_old),
                      target=tuple(role_target(role, old) for role, old in zip(ds.roles, initial_old)),
                      configs=tuple(role_config(role) for role in ds.roles))


def format_position(position: tuple[int, int] | None, *, missing: str | None = None) -> str | None:
    """A place on a trajectory as people read it: "i/N" (step i of N); `missing` when off it."""
    return missing if position is None else f"{position[0]}/{position[1]}"


class PlanDidNotConverge(RuntimeError):
    """The step cap was reached: a planner bug, never a legitimate end of a plan."""


def next_step(
    initial_old: Sequence[int],
    current_old: Sequence[int],
    current_new: Sequence[int],
    target: Sequence[int],
    configs: Sequence[RolloutConfig],
) -> Step | None:
    """The next (old, new) state of a rollout, or None when there is nothing left to do."""
    initial_old, current_old, current_new, target = _vectors(initial_old, current_old, current_new, target)
    _check_shapes(initial_old, current_old, current_new, target, configs)
    return _advance(_Rollout.of(initial_old, target, configs), current_old, current_new)


def plan(initial_old: Sequence[int], target: Sequence[int], configs: Sequence[RolloutConfig]) -> list[Step]:
    """The whole trajectory from (initial_old, zeros), that initial state first, until done.

    Raises PlanDidNotConverge past 4·max(all counts)+10 steps: orphan prevention makes real
    plans take up to about 3·max, so hitting the cap means a bug, not a long plan.
    """
    initial_old, target = _vectors(initial_old, target)
    return remaining(initial_old, initial_old, (0,) * len(initial_old), target, configs)


def remaining(
    initial_old: Sequence[int],
    current_old: Sequence[int],
    current_new: Sequence[int],
    target: Sequence[int],
    configs: Sequence[RolloutConfig],
) -> list[Step]:
    """The rest of a rollout from a live state: that state first, then every step until done."""
    initial_old, current_old, current_new, target = _vectors(initial_old, current_old, current_new, target)
    _check_shapes(initial_old, current_old, current_new, target, configs)
    rollout = _Rollout.of(initial_old, target, configs)
    cap = step_cap((*initial_old, *current_old, *current_new), target)

    trajectory = [Step(current_old, current_new, StepKind.INITIAL)]
    old, new = current_old, current_new
    while (step := _advance(rollout, old, new)) is not None:
        if len(trajectory) > cap:
            raise PlanDidNotConverge(
                f"planner did not converge within {cap} steps from old={initial_old} "
                f"to new={target} (configs {list(configs)}); last state old={old} new={new}"
            )
        trajectory.append(step)
        old, new = step.old, step.new
    return trajectory


def step_cap(initial_old: Sequence[int], target: Sequence[int]) -> int:
    """Most transitions a plan may take before it counts as a bug (design §5)."""
    return 4 * max((*initial_old, *target), default=0) + 10


def find_position(trajectory: Sequence[Step], old: Sequence[int], new: Sequence[int]) -> int | None:
    """Index of a live (old, new) state in a trajectory, or None when it is off the plan.

    A live state leaves the precomputed plan when a replica count was edited by hand, the
    target changed mid-rollout, or a coordinated group drain took more than the step asked.
    """
    state = (tuple(old), tuple(new))
    for index, step in enumerate(trajectory):
        if (step.old, step.new) == state:
            return index
    return None


def place_of(ds: DisaggregatedSet, deployed: Mapping[str, Mapping[str, int]],
             initial: Mapping[str, Mapping[str, int]]) -> tuple[list[Step], int] | None:
    """The plan a slice running `deployed` (revision → role → replicas) follows to the set's
    revision, from the counts its rollout began with (`initial`, by revision; else the deployed
    ones), and where it stands on it; None when it runs no other revision or is off the plan.
    What both stores write as a rolling slice's step (the RolloutState's `rollout.step`)."""
    olds = {rev: counts for rev, counts in deployed.items() if rev != ds.revision}
    if not olds:
        return None
    names = ds.role_names
    started = [sum(initial.get(rev, counts).get(role, 0) for rev, counts in olds.items()) for role in names]
    old = [sum(counts.get(role, 0) for counts in olds.values()) for role in names]
    new = [deployed.get(ds.revision, {}).get(role, 0) for role in names]
    inputs = inputs_for_set(ds, started)
    try:
        trajectory = plan(inputs.initial_old, inputs.target, inputs.configs)
    except PlanDidNotConverge:
        return None
    index = find_position(trajectory, old, new)
    return None if index is None else (trajectory, index)


def batch_size(config: RolloutConfig) -> int:
    """Replicas a role moves per planner step: its surge, else its unavailability, else 1."""
    return config.surge if config.surge > 0 else max(1, config.unavailable)


def total_steps(initial_old: Sequence[int], target: Sequence[int], configs: Sequence[RolloutConfig]) -> int:
    """The step count of the linear interpolation: the slowest role's batches to move."""
    return max(
        (_ceil_div(max(old, tgt, 0), batch_size(cfg)) for old, tgt, cfg in zip(initial_old, target, configs)),
        default=0,
    )


# --- one step ---------------------------------------------------------------------------
#
# The helpers below run once per step of a plan (20,000 steps for 10 roles of 10,000), so
# they take per-role constants precomputed in _Rollout, and clamp with `if` rather than the
# min()/max() builtins, which cost about twice as much per call; the arithmetic is still
# design §5's, term by term.


@dataclass(frozen=True)
class _Rollout:
    """What stays fixed while one rollout runs: its start, its goal and its per-role limits.

    `total`: totalSteps. `ceiling`: target + surge, most old + new a role may run.
    `protected`: target − unavailable for roles that started at or above target, least
    old + new they must keep; None for roles scaling up, which never had that capacity.
    """

    initial_old: Vector
    target: Vector
    total: int
    ceiling: Vector
    protected: tuple[int | None, ...]

    @classmethod
    def of(cls, initial_old: Vector, target: Vector, configs: Sequence[RolloutConfig]) -> _Rollout:
        return cls(
            initial_old=initial_old,
            target=target,
            total=total_steps(initial_old, target, configs),
            ceiling=tuple([tgt + cfg.surge for tgt, cfg in zip(target, configs)]),
            protected=tuple([
                tgt - cfg.unavailable if init >= tgt else None
                for init, tgt, cfg in zip(initial_old, target, configs)
            ]),
        )


def _advance(rollout: _Rollout, current_old: Vector, current_new: Vector) -> Step | None:
    new_at_target = all([n >= t for n, t in zip(current_new, rollout.target)])
    if new_at_target and not any(current_old):
        return None
    if rollout.total == 0:
        return None
    if any([cur > init for cur, init in zip(current_old, rollout.initial_old)]):
        return Step(tuple(map(min, rollout.initial_old, current_old)), current_new, StepKind.CORRECTION)
    if new_at_target:
        return Step((0,) * len(current_old), current_new, StepKind.FINAL_DRAIN)

    next_new = _interpolated_new(rollout, current_new)

    # Rule 1: grow new while every live role stays within target + surge (removed roles,
    # target 0, only drain, so surge does not bind them).
    if next_new != current_new and all([
        old + nxt <= ceiling
        for old, nxt, tgt, ceiling in zip(current_old, next_new, rollout.target, rollout.ceiling)
        if tgt > 0
    ]):
        return Step(current_old, next_new, StepKind.SCALE_UP)

    # Rule 2: drain old along its own interpolation, never below the availability floor.
    drained = _proportional_drain(rollout, current_old, current_new)
    drained = _prevent_orphans(rollout, drained, current_new)
    if any([d < cur for d, cur in zip(drained, current_old)]):
        return Step(drained, current_new, StepKind.PROPORTIONAL_DRAIN)

    # Rule 3: surge is what blocks scale-up: drain just enough to fit next_new, and take it.
    forced = _drain_to_fit(rollout, current_old, next_new)
    if not any([f < cur for f, cur in zip(forced, current_old)]):
        return None
    return Step(_prevent_orphans(rollout, forced, next_new), next_new, StepKind.DRAIN_AND_SCALE)


def _interpolated_new(rollout: _Rollout, current_new: Vector) -> Vector:
    """new at the step after the least advanced role's: ceil(k·target/total), never shrinking."""
    total = rollout.total
    # A role with target 0 is always "done" scaling up, so it never holds the others back.
    k = 1 + min([total if tgt == 0 else cur * total // tgt for cur, tgt in zip(current_new, rollout.target)])
    next_new = []
    for cur, tgt in zip(current_new, rollout.target):
        planned = -(-k * tgt // total)  # ceil(k·target/total)
        if planned > tgt:
            planned = tgt
        next_new.append(planned if planned > cur else cur)
    return tuple(next_new)


def _proportional_drain(rollout: _Rollout, current_old: Vector, current_new: Vector) -> Vector:
    """Rule 2's old: initial − floor(m·initial/total) at the step after the most drained role's.

    Never above current old, never below the availability floor (minOld).
    """
    total = rollout.total
    # Roles that start at 0 (added in this rollout) have nothing to drain and set no pace.
    # design §5 truncates toward zero; floor division is the same here because the correction rule
    # has already brought every current_old down to at most initial_old.
    m = 1 + max(
        [(init - cur) * total // init for init, cur in zip(rollout.initial_old, current_old) if init > 0],
        default=0,
    )
    next_old = []
    for init, cur, protected, new in zip(rollout.initial_old, current_old, rollout.protected, current_new):
        planned = init - m * init // total
        if planned < 0:
            planned = 0
        if planned > cur:
            planned = cur
        if protected is not None and protected - new > planned:
            planned = protected - new  # availability floor: old + new >= target − unavailable
        next_old.append(planned)
    return tuple(next_old)


def _drain_to_fit(rollout: _Rollout, current_old: Vector, next_new: Vector) -> Vector:
    """Rule 3's old: what lets old + next_new fit target + surge, within the availability floor."""
    fitted = []
    for old, nxt, ceiling, protected in zip(current_old, next_new, rollout.ceiling, rollout.protected):
        planned = ceiling - nxt if ceiling - nxt < old else old
        if planned < 0:
            planned = 0
        if protected is not None and protected - nxt > planned:
            planned = protected - nxt  # availability floor: old + new >= target − unavailable
        fitted.append(planned)
    return tuple(fitted)


def _prevent_orphans(rollout: _Rollout, old: Vector, new: Vector) -> Vector:
    """Never leave some draining roles at 0 old while others still have old replicas.

    An old revision with only some of its roles cannot serve (prefill without decode), so
    either every role can lose its old replicas now, because new already covers
    target − unavailable wherever that was promised, or each emptied role keeps one.
    """
    draining = [o for o, init in zip(old, rollout.initial_old) if init > 0]
    emptied = draining.count(0)
    if emptied == 0 or emptied == len(draining):
        return old
    if all([low is None or n >= low for n, low in zip(new, rollout.protected)]):
        return (0,) * len(old)
    return tuple([1 if o == 0 and init > 0 else o for o, init in zip(old, rollout.initial_old)])


# --- arithmetic and checks ----------------------------------------------------------------


def _ceil_div(a: int, b: int) -> int:
    """ceil(a / b) for b > 0, exactly."""
    return -(-a // b)


def _vectors(*vectors: Sequence[int]) -> tuple[Vector, ...]:
    return tuple(tuple(v) for v in vectors)


def _check_shapes(
    initial_old: Vector,
    current_old: Vector,
    current_new: Vector,
    target: Vector,
    configs: Sequence[RolloutConfig],
) -> None:
    lengths = {len(initial_old), len(current_old), len(current_new), len(target), len(configs)}
    if len(lengths) != 1:
        raise ValueError(
            "planner vectors differ in length: "
            f"initial_old={len(initial_old)} current_old={len(current_old)} "
            f"current_new={len(current_new)} target={len(target)} configs={len(configs)}"
        )
    if any(count < 0 for vector in (initial_old, current_old, current_new, target) for count in vector):
        raise ValueError("planner replica counts must be non-negative")
    if any(cfg.surge < 0 or cfg.unavailable < 0 for cfg in configs):
        raise ValueError("planner surge and unavailable must be non-negative")
