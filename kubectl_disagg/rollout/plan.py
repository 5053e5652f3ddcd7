"""`rollout plan` over either store: what is left of a rollout.

Two parts:
- `fleet_plan`, pure: the rollout of a set under its RolloutPolicy from (the set and its
  policy, the recorded position, each slice's live progress): each slice where it stands (held
  slices at the revision and replicas they run), each wave with the planner steps of its slices,
  the passes of `rollout step` (the commits through git) to the end and the gates on the way.
- `live_plans`: per set, what its store observes (rollout/store.py `observe`: the RolloutState
  and the live LWS, or the state file alone) planned once: under a policy (or through git) its
  fleet plan; else, from the live objects, per slice, the planner's inputs and the steps left
  (reconciled, changing nothing). One computation for both stores (design §9.7).

Kept apart from the offline plan (`core.controller.plan_inputs`) so that one never loads the Kubernetes client.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kubectl_disagg.core.controller import planner
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.planner import PlanInputs, Step, StepKind
from kubectl_disagg.core.api.policy_types import ResolvedWave
from kubectl_disagg.core.delivery.position import ANALYSIS, PAUSE, PROMOTED, Position
from kubectl_disagg.core.controller.reconcile import SliceReport, reconcile
from kubectl_disagg.core.controller.snapshot import SliceLive, Snapshot, live_from_snapshot  # noqa: F401 (the plan's inputs)
from kubectl_disagg.core.delivery.waves import GATE_PASSED, Progress, State, WaveDecision, decide, decided
from kubectl_disagg.errors import UserError

if TYPE_CHECKING:
    from kubectl_disagg.rollout.store import PositionStore

SlicePlan = tuple[SliceReport, PlanInputs, tuple[Step, ...]]


def live_plans(store: PositionStore, now: datetime.datetime
               ) -> list[tuple[DisaggregatedSet, list[SlicePlan] | FleetPlan]]:
    """Per set of `store`: its FleetPlan from the position recorded and each slice's progress;
    a set without a RolloutPolicy whose live objects the store reads, per slice, its report,
    the planner inputs and the steps left."""
    plans: list[tuple[DisaggregatedSet, list[SlicePlan] | FleetPlan]] = []
    for ds, namespace in store.sets():
        observed = store.observe(ds, namespace)
        if ds.policy is not None or observed.snapshot is None:
            plans.append((ds, fleet_plan(ds, observed.position, observed.live, now)))
            continue
        result = reconcile(ds, observed.snapshot)
        if result.problems:
            raise UserError(list(result.problems))
        plans.append((ds, [slice_plan(ds, report) for report in result.slices]))
    return plans


def slice_plan(ds: DisaggregatedSet, report: SliceReport) -> SlicePlan:
    """The steps left of a slice's rollout; with none under way, where the slice stands."""
    inputs = report.plan  # `report.roles` are its roles, () when there is none
    if inputs is not None and inputs.roles:
        steps = planner.remaining(inputs.initial_old, report.old, report.new, inputs.target, inputs.configs)
        return report, inputs, tuple(steps)
    current = tuple(report.revisions.get(ds.revision, {}).get(name, 0) for name in ds.role_names)
    zeros = (0,) * len(ds.roles)
    return report, planner.inputs_for_set(ds, zeros), (Step(zeros, current, StepKind.INITIAL),)


# --- the fleet: one pure function over (set, policy, position, live progress) -------------------


class Situation:
    """Where a slice stands in a fleet plan (the words of SliceLine.situation)."""

    DONE, STEADY, ROLLING, ROLLING_BACK, ROLLED_BACK = "done", "steady", "rolling", "rolling back", "rolled back"
    HELD, HELD_MID, NOT_CREATED, STARTS = "held", "held mid-rollout", "not created", "starts"


@dataclass(frozen=True)
class SliceLine:
    """One slice as the plan shows it: its `situation`, the `revision` it runs (the old one while
    held) with its `replicas` ((role, count), as live), its `wave` (index), `steps_left` while it
    moves, and `reason` while held (core/delivery/waves.py's Hold)."""

    situation: str
    revision: str
    replicas: tuple[tuple[str, int], ...]
    wave: int
    steps_left: int = 0
    reason: str = ""


@dataclass(frozen=True)
class WaveRow:
    """One wave: its slices, the planner steps each of them takes (a set of counts: one when
    they all start alike), and the passes it moves in ((first, last), counted from the next
    pass as 1), None when none is left."""

    wave: ResolvedWave
    steps_each: tuple[int, ...]
    passes: tuple[int, int] | None


@dataclass(frozen=True)
class GateStop:
    """A stop on the way: the gate after wave `wave` (`kind` analysis or pause, or `paused`:
    the rollout is paused now), reached once `after` passes are taken (0: now)."""

    wave: int
    kind: str
    after: int
    checks: tuple[str, ...] = ()
    duration: float | None = None


@dataclass(frozen=True)
class FleetPlan:
    """The rollout of a whole set to `moves_to` from `stable` (`rollback`: it rolls back to the
    stable revision, after an abort or a reverted template), the decision a step takes now
    (`decision`), each slice (`slices`), each wave (`waves`), the passes of `rollout step` to its
    end (`passes`, every step's readiness taken as immediate), the commits of the same rollout
    through git (`commits`: its steps, a slice's start landing with its first planner step, plus
    a commit where a step records a pause gate it stops at and one per promote or resume), the
    stops on the way (`gates`), and the planner steps of
    a slice (`trajectories`: slices → their inputs and steps; the whole rollout of a slice, or
    what is left of a rollback)."""

    name: str
    moves_to: str
    stable: str
    rollback: bool
    decision: WaveDecision
    slices: tuple[SliceLine, ...]
    waves: tuple[WaveRow, ...]
    passes: int
    commits: int
    gates: tuple[GateStop, ...]
    trajectories: tuple[tuple[tuple[int, ...], PlanInputs, tuple[Step, ...]], ...]
    exact: bool = True  # False: a slice runs two old revisions, whose first to drain is removed
    # mid-rollout (design §4 step 2.1) and shortens it: `passes` and `commits` are then at most


def fleet_plan(ds: DisaggregatedSet, recorded: Position | None, live: Sequence[SliceLive],
               now: datetime.datetime) -> FleetPlan:
    """The rollout of `ds` under its policy (none: one wave, no budget) from the `recorded` position (the RolloutState's or
    the state file's) and each slice's `live` progress: the decision a step takes now
    (core/delivery/waves.py, as `rollout step` and `rollout step --gitops` decide it), each slice where
    it stands, and the passes to the end: each pass moves every slice the decision lets move
    by one planner step (a start, a step, the removal of the drained revision), gates passed as
    they come. Pure: the clock is `now`."""

    rollout, _, stable, position, decision = decided(ds.policy, ds.revision, recorded, [set(s.runs) for s in live], now)
    progress = decision.progress
    aborted = decision.state == State.ABORTED
    rollback = aborted or (bool(position.stable) and position.stable == rollout)
    moving_to = decision.moves_to  # the stable revision after an abort
    waves = decision.waves
    wave_of = {s: w.index for w in waves for s in w.slices}
    each: dict[int, int] = {}
    left: dict[int, int] = {}
    lines, trajectories = [], []
    for s, slice_live in enumerate(live):
        whole = _trajectory(ds, SliceLive({stable: _start(ds, slice_live, stable)}), rollout)
        inputs, steps = _trajectory(ds, slice_live, moving_to)
        each[s] = len(steps) - 1 if rollback else len(whole[1]) - 1
        left[s] = _passes_left(slice_live, moving_to, steps)
        lines.append(_line(s, slice_live, decision, wave_of.get(s, len(waves) - 1), len(steps) - 1, rollback))
        if rollback:
            if len(steps) > 1:
                trajectories.append((s, inputs, tuple(steps)))
        else:
            trajectories.append((s, whole[0], tuple(whole[1])))
    starts = {s for s, slice_live in enumerate(live) if slice_live.runs and moving_to not in slice_live.runs}
    passes, spans, gates, _ = _passes(ds, rollout, decision, progress, left, starts)
    git_steps, _, _, extra = _passes(ds, rollout, decision, progress, left, starts, git=True,
                                     recorded=frozenset(position.completed))
    rows = tuple(WaveRow(w, tuple(sorted({each[s] for s in w.slices if not rollback or left[s]})), spans.get(w.index))
                 for w in waves)
    return FleetPlan(ds.name, moving_to, stable if not aborted else rollout, rollback, decision, tuple(lines),
                     rows, passes, git_steps + extra, tuple(gates), _grouped(trajectories),
                     exact=all(len([r for r in s.runs if r != moving_to]) <= 1 for s in live))


def _start(ds: DisaggregatedSet, slice_live: SliceLive, stable: str) -> dict[str, int]:
    """What a slice runs when its rollout starts: its live counts of the stable revision, else the set's."""
    return dict(slice_live.initial.get(stable) or slice_live.runs.get(stable)
                or {role.name: role.replicas for role in ds.roles})


def _trajectory(ds: DisaggregatedSet, slice_live: SliceLive, revision: str) -> tuple[PlanInputs, list[Step]]:
    """The planner's inputs and steps left for a slice rolling to `revision` (the first step is
    where it stands): old is every other revision it runs, its initial counts from the
    annotations (else its replicas), read as reconcile reads them (design §4); a slice whose
    rollout has not started yet from what it runs (its start writes those as the annotations)."""
    olds = {r: counts for r, counts in slice_live.runs.items() if r != revision}
    names = list(ds.role_names) + sorted({role for c in olds.values() for role in c} - set(ds.role_names))
    initial_old = tuple(sum(slice_live.initial.get(r, {}).get(name, c.get(name, 0)) for r, c in olds.items())
                        for name in names)
    current_old = tuple(sum(c.get(name, 0) for c in olds.values()) for name in names)
    if revision not in slice_live.runs:  # its start annotates every old LWS with the replicas it runs
        initial_old = current_old
    current_new = tuple(slice_live.runs.get(revision, {}).get(name, 0) for name in names)
    roles = {role.name: role for role in ds.roles}
    target = tuple(planner.role_target(roles.get(name), old, new)
                   for name, old, new in zip(names, initial_old, current_new))
    configs = tuple(planner.role_config(roles.get(name)) for name in names)
    inputs = PlanInputs(tuple(names), initial_old, target, configs)
    if not olds:
        return inputs, [Step(current_old, current_new, StepKind.INITIAL)]
    try:
        return inputs, planner.remaining(initial_old, current_old, current_new, target, configs)
    except planner.PlanDidNotConverge:
        return inputs, [Step(current_old, current_new, StepKind.INITIAL)]


def _passes_left(slice_live: SliceLive, revision: str, steps: Sequence[Step]) -> int:
    """Passes a slice takes until it runs `revision` alone: its start (the new LWS created at
    0), each planner step, and the pass that removes the drained revision; a slice not created
    yet, the one pass that creates it."""
    if not slice_live.runs:
        return 1
    if set(slice_live.runs) == {revision}:
        return 0
    return (0 if revision in slice_live.runs else 1) + len(steps) - 1 + 1


def _line(s: int, slice_live: SliceLive, decision: WaveDecision, wave: int, steps_left: int,
          rollback: bool = False) -> SliceLine:
    runs, target = slice_live.runs, decision.moves_to
    aborted = decision.state == State.ABORTED
    if not runs:
        return SliceLine(Situation.NOT_CREATED, target, (), wave)
    hold = decision.held.get(s)
    if hold is not None and len(runs) == 1 or target not in runs:  # held, or starts: at the revision it runs
        revision, counts = list(runs.items())[-1]
        if hold is None:
            return SliceLine(Situation.STARTS, revision, tuple(counts.items()), wave, steps_left)
        return SliceLine(Situation.HELD, revision, tuple(counts.items()), wave, reason=str(hold))
    if set(runs) == {target}:
        situation = (Situation.ROLLED_BACK if aborted else Situation.STEADY
                     if decision.state == State.COMPLETE or rollback else Situation.DONE)
        return SliceLine(situation, target, tuple(runs[target].items()), wave)
    situation = (Situation.HELD_MID if hold is not None else Situation.ROLLING_BACK if rollback
                 else Situation.ROLLING)
    return SliceLine(situation, target, tuple(runs.get(target, {}).items()), wave, steps_left,
                     "" if hold is None else str(hold))


def _passes(ds: DisaggregatedSet, rollout: str, decision: WaveDecision, progress: Sequence[Progress],
            left: Mapping[int, int], starts: set[int], git: bool = False, recorded: frozenset[int] = frozenset()
            ) -> tuple[int, dict[int, tuple[int, int]], list[GateStop], int]:
    """The passes to the end from `decision`, decided by core/delivery/waves.py pass by pass as `rollout
    step` decides them: (passes, wave → (first, last) pass its slices move in, the stops, the
    commits a git rollout adds: the step recording a pause gate, its promote, a resume). With
    `git`, the steps of `rollout step --gitops`: a slice's start (`starts`) lands in the commit
    of its first planner step, but in the step that passes a soak or an analysis, which commits
    the starts of the next wave alone; a gate whose wave the position already records as
    completed needs no commit to record it (`recorded`)."""
    now = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)  # soaks are passed as they come
    progress, left, starts = list(progress), dict(left), set(starts)
    position = decision.position
    aborted = decision.state == State.ABORTED
    passes, extra = 0, 0
    # a soak or an analysis is passed by the step that starts the next wave, whose starts it
    # commits alone: one passed now (by this decision, not yet recorded) or on the way
    passed_in_step = any(event.reason == GATE_PASSED and event.detail in (PAUSE, ANALYSIS) for event in decision.events)
    gates: list[GateStop] = []
    spans: dict[int, tuple[int, int]] = {}
    wave_of = {s: w.index for w in decision.waves for s in w.slices}
    for _ in range(4 * sum(left.values()) + 4 * len(decision.waves) + 8):
        step = decide(ds.policy, rollout, position, progress, now)
        position = step.position
        if step.state == State.PAUSED:  # paused now (or by a failed analysis): a resume continues it
            gates.append(GateStop(step.wave, "paused", passes))
            extra += 1  # a resume
            position = replace(position, paused=None)
            continue
        working = [s for s in step.moves if left.get(s, 0) > 0]
        if not working:
            if step.state == State.AT_GATE and step.gate is not None:
                gate, wave = step.gate, step.waves[step.gate.wave]
                gates.append(GateStop(gate.wave, gate.kind, passes, gate.checks, wave.duration))
                if gate.kind == PAUSE:  # the step recording it (unless recorded), and a promote (not a soak's)
                    extra += (gate.wave not in recorded) + (wave.duration is None)
                passed_in_step = gate.kind == ANALYSIS or wave.duration is not None
                position = position.with_gate(gate.wave, gate.kind, "1970-01-01T00:00:00Z", "plan", PROMOTED)
                continue
            break
        passes += 1
        for s in working:
            first, _ = spans.get(wave_of[s], (passes, passes))
            spans[wave_of[s]] = (first, passes)
            left[s] -= 2 if git and s in starts and left[s] > 1 and not passed_in_step else 1
            starts.discard(s)
            if aborted:
                progress[s] = Progress.PENDING if left[s] == 0 else progress[s]
            else:
                progress[s] = Progress.DONE if left[s] == 0 else Progress.IN_FLIGHT
        passed_in_step = False
    return passes, spans, gates, extra


def _grouped(trajectories: Sequence[tuple[int, PlanInputs, tuple[Step, ...]]]
             ) -> tuple[tuple[tuple[int, ...], PlanInputs, tuple[Step, ...]], ...]:
    """Slices that take the same steps, together (in slice order of their first)."""
    groups: dict[tuple[PlanInputs, tuple[Step, ...]], list[int]] = {}
    for s, inputs, steps in trajectories:
        groups.setdefault((inputs, steps), []).append(s)
    return tuple((tuple(slices), inputs, steps) for (inputs, steps), slices in groups.items())
