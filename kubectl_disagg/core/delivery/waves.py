"""Which slices a pass may move, under a RolloutPolicy (design §9), and why not, as data (views/stops.py
phrases it). Pure: the clock is `now`.

About 470 lines on purpose: the decision, the verbs that change its position and one pass's
admission (a lost position, slices added mid-rollout) are read together: each verb and each
recovery is defined by what `decide` does next with the position it leaves.

From the set's slices as they stand (`slice_progress`: pending, in flight, done), the policy's
waves and budget, and the position (core/delivery/position.py), `decide` says which slices this pass may
move, which are held and why, the gate the rollout waits at, and the position after it (a wave
completed, a soak passed, the next wave reached: recorded so any later call can tell). The
reconcile pass (design §4) then runs only for the slices that move; inside a slice nothing changes.

Gates follow a wave once every slice of it is done, in this order: analysis (passes on a
recorded verdict `passed`; `failed` does the policy's onFailure), then pause (`pause: {}` on
`rollout promote`, `pause: {duration}` that long after the wave completed). `promote` passes the
gate the rollout waits at (`--full`: every later one, and the budget is lifted). Without a
policy there is one wave of every slice and no budget: everything moves, as the controller does.

Slices the set gains mid-rollout (design §10.2) start at the rollout's revision inside the
admitted waves and at the stable revision outside them (`stable_starts`: reconciled toward the
stable set, core/controller/stable.py), then roll like any pending slice when their wave comes; so do the
slices it gains while paused (the pause holds the rollout, not the set's size). A slice the
policy holds at one revision takes the targets in force at once (`at_own_revision`: design §10.1,
a replicas change is not a template change), and stays held. A rollout
under way whose position was lost (`position_for`: no RolloutState, or a state without a
position) is rebuilt paused at its first wave, and nothing moves until a person resumes or
aborts it (design §9.6).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import NamedTuple, TypedDict

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.policy import resolve_waves
from kubectl_disagg.core.api.policy_types import ABORT, ResolvedWave, RolloutPolicy
from kubectl_disagg.core.delivery.position import (ANALYSIS, FAILED, FULL, PASSED, PAUSE, PROMOTED, SOAKED, VERDICT,
                                          Position, Stamp, for_revision, parse_time, soak_end, timestamp)
from kubectl_disagg.core.controller.reconcile import Admission
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.core.controller.stable import stable_set


class Progress(StrEnum):
    """A slice against the rollout's revision: `pending` runs only older revisions (never
    started), `in flight` runs both, `done` runs only the new one, `empty` runs nothing yet."""

    PENDING = "pending"
    IN_FLIGHT = "in flight"
    DONE = "done"
    EMPTY = "empty"


class Hold(StrEnum):
    """Why a slice with work to do does not move this pass."""

    WAVE = "its wave has not started"
    BUDGET = "maxSlicesInFlight slices are in flight"
    PAUSED = "the rollout is paused"
    ABORTED = "the rollout was aborted before its wave"


class State(StrEnum):
    """Where the rollout stands; the value is the RolloutState's `rollout.phase` (argocd/ reads it)."""

    ROLLING = "Rolling"
    AT_GATE = "AtGate"
    PAUSED = "Paused"
    ABORTED = "Aborted"
    COMPLETE = "AtRest"


@dataclass(frozen=True)
class Gate:
    """The gate the rollout waits at: after wave `wave`, `kind` ANALYSIS (`checks`, and
    `failed` when the recorded verdict failed) or PAUSE (`until`: when a soak passes, None
    until promoted)."""

    wave: int
    kind: str
    checks: tuple[str, ...] = ()
    until: str | None = None
    failed: bool = False


@dataclass(frozen=True)
class WaveEvent:
    """A change of the position this decision made: `reason` in the controller's style."""

    reason: str  # WaveStarted | WaveCompleted | GatePassed | RolloutAborted | RolloutPaused
    wave: int
    detail: str = ""


WAVE_STARTED, WAVE_COMPLETED, GATE_PASSED = "WaveStarted", "WaveCompleted", "GatePassed"
ABORTED, PAUSED, RESUMED, PROMOTED_EVENT = "RolloutAborted", "RolloutPaused", "RolloutResumed", "RolloutPromoted"
RETRIED = "RolloutRetried"


@dataclass(frozen=True)
class WaveDecision:
    """`moves`: the slices this pass may reconcile (ascending); `held`: slice → Hold for every
    other slice; `moves_to`: the revision the moving slices go to (the stable one after an
    abort); `stable_starts`: those of `moves` the set gained outside the admitted waves,
    created at the stable revision (`position.stable`) instead; `position`: after this
    decision, `events` what changed in it."""

    state: State
    moves: tuple[int, ...]
    held: Mapping[int, Hold]
    waves: tuple[ResolvedWave, ...]
    wave: int
    moves_to: str
    position: Position
    gate: Gate | None = None
    budget: int | None = None
    in_flight: tuple[int, ...] = ()
    events: tuple[WaveEvent, ...] = field(default=())
    progress: tuple[Progress, ...] = ()  # each slice against the rollout's revision, as decided on
    stable_starts: tuple[int, ...] = ()


def live_runs(set_name: str, slices: int, snapshot: Snapshot) -> list[set[str]]:
    """The revisions each slice of the set runs, from its LeaderWorkerSets (ours or the controller's)."""
    runs: list[set[str]] = [set() for _ in range(slices)]
    for obj in snapshot.lws:
        placed = obj.identity.placed
        if obj.belongs_to(set_name) and placed is not None and placed.slice < slices:
            runs[placed.slice].add(placed.revision)
    return runs


def slice_progress(set_name: str, revision: str, slices: int, snapshot: Snapshot) -> tuple[Progress, ...]:
    """Each slice of the set against `revision`, from its LeaderWorkerSets (ours or the controller's)."""
    return tuple(progress_among(runs, revision) for runs in live_runs(set_name, slices, snapshot))


def progress_among(revisions: set[str], revision: str) -> Progress:
    """Where one slice stands in the rollout to `revision`, from the revisions it runs."""
    if not revisions:
        return Progress.EMPTY
    if revision not in revisions:
        return Progress.PENDING
    return Progress.DONE if revisions == {revision} else Progress.IN_FLIGHT


def stable_of(revision: str, runs: Sequence[Set[str]], own: bool = True) -> str:
    """The stable revision of the rollout to `revision`, from what each slice runs (`runs`, one
    set per slice, design §9.6): what the untouched slices run, counted by slice (a slice that
    runs one revision alone), the most slices, a tie to the revision of the highest-index such
    slice (waves admit from slice 0 up: the last slice is the last touched). It may be
    `revision` itself: the template set back mid-rollout (a revert), where the rollout is a
    roll-back that new slices start at and whose abort finishes it; not `own`ly so (a lost
    position: nothing says the rollout is a revert, so it rolls back to an older revision), the
    untouched slices that run another. Without an untouched slice, the other revision the most
    slices run (a tie as above); "" when none runs another."""
    votes: dict[str, tuple[int, int]] = {}  # revision → (slices, highest slice)
    for s, revisions in enumerate(runs):
        if len(revisions) == 1 and (own or revision not in revisions):
            (only,) = revisions
            votes[only] = (votes.get(only, (0, 0))[0] + 1, s)
    if not votes:
        for s, revisions in enumerate(runs):
            for other in revisions - {revision}:
                votes[other] = (votes.get(other, (0, 0))[0] + 1, s)
    return max(votes, key=lambda r: votes[r]) if votes else ""


class _Base(TypedDict):
    """What every decision of one pass carries, whatever its state (WaveDecision's fields)."""

    waves: tuple[ResolvedWave, ...]
    budget: int | None
    in_flight: tuple[int, ...]
    progress: tuple[Progress, ...]


def decide(policy: RolloutPolicy | None, revision: str, position: Position, progress: Sequence[Progress],
           now: datetime.datetime) -> WaveDecision:
    """Which slices move this pass, which are held and why, for the rollout to `revision`.

    `position` is this rollout's (see position.for_revision); `progress` one entry per slice.
    """
    slices = len(progress)
    waves = resolve_waves(policy, slices)
    budget = None if policy is None or position.full is not None else policy.budget(slices)
    in_flight = tuple(s for s, p in enumerate(progress) if p == Progress.IN_FLIGHT)
    base = _Base(waves=waves, budget=budget, in_flight=in_flight, progress=tuple(progress))
    if position.aborted is not None:
        return _aborted(position, progress, base)
    if position.paused is not None:
        return _paused(revision, position, progress, base, wave=min(position.wave, len(waves) - 1))
    if not in_flight and Progress.PENDING not in progress:
        # No rollout under way (or it has ended): every slice is the set's revision, steady.
        return WaveDecision(State.COMPLETE, tuple(range(slices)), {}, wave=len(waves) - 1, moves_to=revision,
                            position=position, **base)

    events: list[WaveEvent] = []
    wave, gate = min(position.wave, len(waves) - 1), None
    moved_on = wave != position.wave
    while True:
        current = waves[wave]
        if any(progress[s] in (Progress.PENDING, Progress.IN_FLIGHT) for s in range(current.end)):
            break
        if wave not in position.completed:
            position = replace(position, completed={**position.completed, wave: timestamp(now)})
            events.append(WaveEvent(WAVE_COMPLETED, wave))
        if wave == len(waves) - 1:
            break
        position, gate, passed = _gates(policy, current, position, now)
        events.extend(passed)
        if gate is not None:
            if gate.failed and policy is not None:
                return _failed(policy, revision, position, progress, now, base, events, wave, gate)
            break
        wave += 1
        moved_on = True
        events.append(WaveEvent(WAVE_STARTED, wave))
    if moved_on:
        position = replace(position, wave=wave)

    moves, held, stable_starts = [], {}, []
    starts = 0
    admitted = range(waves[wave].end)
    for s, p in enumerate(progress):
        if p == Progress.EMPTY and s not in admitted and position.stable and position.stable != revision:
            moves.append(s)  # a slice the set gained outside the admitted waves: at the stable revision
            stable_starts.append(s)
        elif p != Progress.PENDING:
            moves.append(s)  # done or empty: steady work; in flight: it has started, it goes on
        elif s not in admitted:
            held[s] = Hold.WAVE
        elif budget is None or len(in_flight) + starts < budget:
            moves.append(s)
            starts += 1
        else:
            held[s] = Hold.BUDGET
    state = State.AT_GATE if gate is not None and not in_flight and not starts else State.ROLLING
    return WaveDecision(state, tuple(moves), held, wave=wave, moves_to=revision, position=position, gate=gate,
                        events=tuple(events), stable_starts=tuple(stable_starts), **base)


def _gates(policy: RolloutPolicy | None, wave: ResolvedWave, position: Position,
           now: datetime.datetime) -> tuple[Position, Gate | None, list[WaveEvent]]:
    """The gates after a done `wave`, passed where their condition holds: (position, the gate
    still waited at or None, the GatePassed events)."""
    events: list[WaveEvent] = []
    at, full = timestamp(now), position.full is not None
    full_by = position.full.by if position.full is not None else ""
    if wave.analysis and not position.passed(wave.index, ANALYSIS):
        verdict = position.verdict(wave.index)
        if full or verdict == PASSED:
            position = position.with_gate(wave.index, ANALYSIS, at, full_by if full else ANALYSIS_BY,
                                          FULL if full else VERDICT)
            events.append(WaveEvent(GATE_PASSED, wave.index, ANALYSIS))
        else:
            return position, Gate(wave.index, ANALYSIS, wave.analysis, failed=verdict == FAILED), events
    if wave.pause and not position.passed(wave.index, PAUSE):
        until = None if wave.duration is None else soak_end(position.completed[wave.index], wave.duration)
        if full or (until is not None and now >= parse_time(until)):
            position = position.with_gate(wave.index, PAUSE, at, full_by if full else "soak",
                                          FULL if full else SOAKED)
            events.append(WaveEvent(GATE_PASSED, wave.index, PAUSE))
        else:
            return position, Gate(wave.index, PAUSE, until=until), events
    return position, None, events


def _failed(policy: RolloutPolicy, revision: str, position: Position, progress: Sequence[Progress],
            now: datetime.datetime, base: _Base, events: list[WaveEvent], wave: int, gate: Gate) -> WaveDecision:
    """A failed analysis verdict: the policy's onFailure, abort or pause, recorded."""
    verdict = position.verdicts.get(wave) or {}
    stamp = Stamp(timestamp(now), ANALYSIS_BY, f"analysis failed after wave {wave + 1}: "
                  + str(verdict.get("message") or ", ".join(gate.checks)))
    if policy.on_failure == ABORT:
        position = replace(position, wave=wave, aborted=stamp)
        decision = _aborted(position, progress, base)
        return replace(decision, gate=gate, events=(*events, WaveEvent(ABORTED, wave, stamp.reason)))
    return _paused(revision, replace(position, wave=wave, paused=stamp), progress, base, wave=wave, gate=gate,
                   events=(*events, WaveEvent(PAUSED, wave, stamp.reason)))


def _paused(revision: str, position: Position, progress: Sequence[Progress], base: _Base, *, wave: int,
            gate: Gate | None = None, events: tuple[WaveEvent, ...] = ()) -> WaveDecision:
    """A paused rollout: no slice moves toward either revision. The pause holds the rollout, not
    the set's size (design §10.2): a slice the set gained starts at the stable revision, as one
    outside the admitted waves does, and a held slice takes a new target (`admit`)."""
    starts = tuple(s for s, p in enumerate(progress)
                   if p == Progress.EMPTY and position.stable and position.stable != revision)
    held = {s: Hold.PAUSED for s in range(len(progress)) if s not in starts}
    return WaveDecision(State.PAUSED, starts, held, wave=wave, moves_to=revision, position=position, gate=gate,
                        events=events, stable_starts=starts, **base)


def _aborted(position: Position, progress: Sequence[Progress], base: _Base) -> WaveDecision:
    """After an abort every slice that has the new revision goes back to the stable one; the
    slices that never started are left as they are (never written). An abort of a roll-back
    (its stable revision is its own: a revert) finishes it: every slice goes to that revision."""
    back = position.stable == position.revision
    moves = tuple(s for s, p in enumerate(progress) if back or p != Progress.PENDING)
    held = {s: Hold.ABORTED for s, p in enumerate(progress) if not back and p == Progress.PENDING}
    # the wave reached, among the set's waves as they are now (fewer once it was scaled down)
    return WaveDecision(State.ABORTED, moves, held, wave=min(position.wave, len(base["waves"]) - 1),
                        moves_to=position.stable, position=position, **base)


# --- the verbs: what each does to the position ------------------------------------------------


class Refuse(StrEnum):
    """Why a verb cannot apply to the position as it stands (views/verbs.py words it)."""

    ABORTED = "aborted"  # promote: the rollout was aborted, and stays so until the template changes
    UNVERIFIED = "unverified"  # promote --full: it would pass analyses (`gates`) without a verdict, unasked
    COMPLETE = "complete"  # promote: the rollout is complete, no gate to pass
    NO_GATES = "no-gates"  # promote: the remaining waves have no gate
    NOT_AT_A_GATE = "not-at-a-gate"  # promote: the wave reached is not done, its gates come later
    ANALYSIS_GATE = "analysis-gate"  # promote: the gate waited at (`gates`) passes on its verdict
    NOTHING_TO_PAUSE = "nothing-to-pause"  # pause: the rollout was aborted
    NOT_PAUSED = "not-paused"  # resume
    NOT_ABORTED = "not-aborted"  # retry
    ROLLED_BACK = "rolled-back"  # retry: the abort of a roll-back, nothing to start again
    NOTHING_TO_ABORT = "nothing-to-abort"  # abort: the rollout is complete
    NO_STABLE = "no-stable"  # abort: no slice ran another revision


class VerbRefused(ValueError):
    """A verb that cannot apply to the position as it stands: `why`, at `decision` (None for
    pause and resume, which read the position alone), about `gates` (views/verbs.py words it)."""

    def __init__(self, why: Refuse, decision: WaveDecision | None = None, gates: Sequence[Gate] = ()):
        super().__init__(why.value)
        self.why, self.decision, self.gates = why, decision, tuple(gates)


def promote(decision: WaveDecision, now: datetime.datetime, by: str, *, full: bool = False,
            skip_analysis: bool = False, reason: str = "") -> Position:
    """Pass the gate the rollout waits at (`full`: every remaining gate, and lift the budget).

    Only a pause is passed by hand (a soak early, once its wave is done): an analysis gate waits
    for its verdict. `full` passes the gates ahead (`gates_ahead`, which the verb lists), but an
    analysis among them only with `skip_analysis`: a verdict is never skipped unasked. A gate the
    rollout does not wait at yet (its wave in flight or not started) is refused, saying where
    the rollout stands: a promote is a person's look at a done wave, never recorded ahead of it."""
    position = decision.position
    at = timestamp(now)
    if position.aborted is not None:
        raise VerbRefused(Refuse.ABORTED, decision)
    if full:
        analyses = [gate for gate in gates_ahead(decision) if gate.kind == ANALYSIS]
        if analyses and not skip_analysis:
            raise VerbRefused(Refuse.UNVERIFIED, decision, analyses)
        # the pause a failed analysis made is lifted with the analysis skipped; a person's pause stays
        paused = None if position.paused is not None and position.paused.by == ANALYSIS_BY else position.paused
        return replace(position, full=Stamp(at, by, reason), paused=paused)
    if decision.state == State.COMPLETE:
        raise VerbRefused(Refuse.COMPLETE, decision)
    gate = _next_gate(decision)
    if gate is None:
        if not any(wave.gated for wave in decision.waves[decision.wave:-1]):
            raise VerbRefused(Refuse.NO_GATES, decision)
        raise VerbRefused(Refuse.NOT_AT_A_GATE, decision)
    if gate.kind == ANALYSIS:
        raise VerbRefused(Refuse.ANALYSIS_GATE, decision, (gate,))
    return position.with_gate(gate.wave, PAUSE, at, by, PROMOTED, reason)


def gates_ahead(decision: WaveDecision) -> tuple[Gate, ...]:
    """Every gate the rollout has still to pass, in order: from the wave it reached (the gate it
    waits at, if any, first) to the wave before the last (the last wave has none). None once it
    is complete or aborted, or after `promote --full` (each then passes as its wave completes)."""
    position = decision.position
    if decision.state == State.COMPLETE or position.aborted is not None or position.full is not None:
        return ()
    ahead: list[Gate] = []
    for wave in decision.waves[decision.wave:-1]:
        if wave.analysis and not position.passed(wave.index, ANALYSIS):
            ahead.append(Gate(wave.index, ANALYSIS, wave.analysis, failed=position.verdict(wave.index) == FAILED))
        if wave.pause and not position.passed(wave.index, PAUSE):
            completed = position.completed.get(wave.index)
            until = None if wave.duration is None or completed is None else soak_end(completed, wave.duration)
            ahead.append(Gate(wave.index, PAUSE, until=until))
    return tuple(ahead)


def holds(decision: WaveDecision) -> Stopped | None:
    """Why `rollout step` would change nothing and exit held (7) at `decision`: `stopped`, but
    for an analysis gate without a verdict, which a step measures (design §9.4) rather than
    holds at."""
    why = stopped(decision)
    gate = why.gate if why is not None else None
    if gate is not None and gate.kind == ANALYSIS and not gate.failed and decision.position.verdict(gate.wave) is None:
        return None
    return why


def _next_gate(decision: WaveDecision) -> Gate | None:
    """The gate the rollout waits at: the decision's, or, while it is paused, the first gate not
    passed after the wave it reached when that wave is recorded completed (None: its wave is in
    flight, or not started)."""
    if decision.gate is not None or decision.state != State.PAUSED:
        return decision.gate
    wave = decision.waves[decision.wave]
    if wave.index not in decision.position.completed:
        return None
    if wave.analysis and not decision.position.passed(wave.index, ANALYSIS):
        return Gate(wave.index, ANALYSIS, wave.analysis)
    if wave.pause and not decision.position.passed(wave.index, PAUSE):
        return Gate(wave.index, PAUSE)
    return None


def pause(position: Position, now: datetime.datetime, by: str, reason: str = "") -> Position:
    if position.aborted is not None:
        raise VerbRefused(Refuse.NOTHING_TO_PAUSE)
    return position if position.paused is not None else replace(position, paused=Stamp(timestamp(now), by, reason))


def resume(position: Position, now: datetime.datetime | None = None, by: str = "", reason: str = "") -> Position:
    """Lift a pause; a failed verdict that paused the rollout is dropped, so its analysis runs again.
    With a `reason`, who resumed it, when and why is kept (`resumed`); without one, nothing is."""
    if position.paused is None:
        raise VerbRefused(Refuse.NOT_PAUSED)
    failed = {w for w, v in position.verdicts.items() if isinstance(v, Mapping) and v.get("phase") == FAILED}
    resumed = Stamp(timestamp(now), by, reason) if reason and now is not None else position.resumed
    return replace(position, paused=None, verdicts={w: v for w, v in position.verdicts.items() if w not in failed},
                   resumed=resumed)


def retry(decision: WaveDecision, now: datetime.datetime, by: str, reason: str = "") -> Position:
    """Start an aborted rollout again from its first wave: the same revision from the same stable
    one, nothing passed, no verdict, no pause; `retried` says who, when and why. The slices that
    run the revision now (an abort not yet rolled back) are `found`: they keep it. Refused unless
    the rollout is aborted, and for the abort of a roll-back (its stable revision is its own)."""
    position = decision.position
    if position.aborted is None:
        raise VerbRefused(Refuse.NOT_ABORTED, decision)
    if position.stable == position.revision:
        raise VerbRefused(Refuse.ROLLED_BACK, decision)
    started = tuple(s for s, p in enumerate(decision.progress) if p in (Progress.IN_FLIGHT, Progress.DONE))
    return Position(revision=position.revision, stable=position.stable, found=started,
                    retried=Stamp(timestamp(now), by, reason))


def abort(decision: WaveDecision, now: datetime.datetime, by: str, reason: str = "") -> Position:
    """Record the abort (the next steps roll the admitted slices back); refused once the rollout
    is complete (every slice at the new revision alone): there is nothing left to abort."""
    position = decision.position
    if position.aborted is not None:
        return position
    if decision.state == State.COMPLETE:
        raise VerbRefused(Refuse.NOTHING_TO_ABORT, decision)
    if not position.stable:
        raise VerbRefused(Refuse.NO_STABLE, decision)
    return replace(position, aborted=Stamp(timestamp(now), by, reason or "rollout abort"), paused=None)


# --- one pass's admission ---------------------------------------------------------------------


@dataclass(frozen=True)
class Passage:
    """What a pass under a policy works with: the `decision`, the `admission` reconcile takes
    (the slices the set gained outside the admitted waves go toward the stable set; its
    `stopped` words are the pacer's to fill in once, in its mode's words, from `stopped`), and
    `reconciled`, the set to reconcile (after an abort, the stable revision rebuilt from its live
    LWS: core/controller/stable.py)."""

    decision: WaveDecision
    admission: Admission
    reconciled: DisaggregatedSet


def the_rollout(revision: str, recorded: Position | None, progress_of: Callable[[str], tuple[Progress, ...]]
                ) -> tuple[str, Position | None, tuple[Progress, ...]]:
    """Which rollout a pass is about: the set's `revision`, or, when an aborted rollout's set went
    back to its stable revision, the aborted one until no slice has it any more (then the
    position is done with). With the progress of each slice against it (`progress_of`)."""
    if recorded is not None and recorded.aborted is not None and recorded.stable == revision:
        progress = progress_of(recorded.revision)
        if any(p in (Progress.IN_FLIGHT, Progress.DONE) for p in progress):
            return recorded.revision, recorded, progress  # the abort goes on
        recorded = None  # the abort is over: every slice is stable again
    return revision, recorded, progress_of(revision)


class Decided(NamedTuple):
    """A decision with what it was decided from: the rollout it is about and the position
    recorded for it (`the_rollout`: None when none was, or the abort is over), its stable
    revision (`stable_of`), the position in force before it (`position_for`)."""

    rollout: str
    recorded: Position | None
    stable: str
    position: Position
    decision: WaveDecision


def decided(policy: RolloutPolicy | None, revision: str, recorded: Position | None, runs: Sequence[Set[str]],
            now: datetime.datetime, proven: Callable[[str], tuple[Progress, ...]] | None = None) -> Decided:
    """The decision of the rollout to `revision` from the `recorded` position and what each
    slice runs (`runs`, one set of revisions per slice: the live LWS, the state file's slices, a
    plan's), the one composition every pass, plan and verb decides through: the rollout
    (`the_rollout`), its stable revision, the position (`position_for`; `proven`: a lost
    position's evidence, by default `runs`), then `decide`."""
    own = recorded is not None  # a position was recorded: the rollout may be a revert (stable_of)
    rollout, recorded, progress = the_rollout(
        revision, recorded, lambda toward: tuple(progress_among(set(slice_runs), toward) for slice_runs in runs))
    stable = stable_of(rollout, runs, own)
    position = position_for(policy, recorded, rollout, stable, progress if proven is None else proven(rollout), now)
    return Decided(rollout, recorded, stable, position, decide(policy, rollout, position, progress, now))


def reconciled_toward(ds: DisaggregatedSet, snapshot: Snapshot, revision: str) -> DisaggregatedSet | None:
    """The set a pass reconciles toward `revision` (a decision's `moves_to`): `ds` at its own
    revision; after an abort, the stable revision rebuilt from its live LWS, or None when none is
    left to rebuild it from (nothing to roll back to: the abort holds every slice as it stands)."""
    return ds if revision == ds.revision else stable_set(ds, snapshot, revision)


def serving(ds: DisaggregatedSet, snapshot: Snapshot, revision: str) -> str:
    """The revision the fleet is judged at (`rollout status`'s Available, in both stores) when a
    pass goes toward `revision`: the reconciled set's (`reconciled_toward`), the set's own when
    an abort has no stable revision live to go back to, so a healthy fleet serving it reads
    Available (issue 47 item 13)."""
    reconciled = reconciled_toward(ds, snapshot, revision)
    return ds.revision if reconciled is None else reconciled.revision


def admit(ds: DisaggregatedSet, snapshot: Snapshot, recorded: Position | None, now: datetime.datetime,
          proven: Callable[[str], tuple[Progress, ...]] | None = None) -> Passage:
    """The decision for one pass over `ds` (which has a policy), from the recorded position.
    `proven`: each slice's progress as the evidence of a lost position reads it (default: the
    live LWS; through git, the slices the state file records)."""
    _, recorded, _, position, decision = decided(ds.policy, ds.revision, recorded, live_runs(ds.name, ds.slices, snapshot),
                                                 now, proven)
    if position.paused is not None and position.paused.by == RECOVERED_BY and (
            recorded is None or recorded.paused != position.paused):
        decision = replace(decision, events=(*decision.events, WaveEvent(PAUSED, decision.wave, position.paused.reason)))
    reconciled = reconciled_toward(ds, snapshot, decision.moves_to)
    held = {s: hold.value for s, hold in decision.held.items()}
    if reconciled is None:
        held = {s: Hold.ABORTED.value for s in range(ds.slices)}
        reconciled = ds
    toward: dict[int, DisaggregatedSet] = {}
    if decision.stable_starts:
        stable_at = stable_set(ds, snapshot, decision.position.stable)
        if stable_at is None:  # no live LWS of the stable revision left to build it from: wait
            held.update({s: Hold.WAVE.value for s in decision.stable_starts})
        else:
            toward = {s: stable_at for s in decision.stable_starts}
            held = {s: hold for s, hold in held.items() if s not in toward}
    toward.update(at_own_revision(ds, snapshot, [s for s in held if s not in toward]))
    return Passage(decision, Admission(held, (), toward), reconciled)


def at_own_revision(ds: DisaggregatedSet, snapshot: Snapshot, slices: Sequence[int]) -> dict[int, DisaggregatedSet]:
    """Slice → the set at the one revision it runs, for those of `slices` (held by the policy)
    that run one revision alone: in a slice the policy holds, that revision is the slice's, and
    the targets in force apply to it at once (design §10.1: a replicas change is not a template
    change and waits for no wave; a start at it cut short, some of its roles created, is finished
    the same way). Reconcile keeps them held; a slice in flight is not among them."""
    runs: dict[int, set[str]] = {}
    for obj in snapshot.lws:
        placed = obj.identity.placed
        if obj.belongs_to(ds.name) and placed is not None and placed.slice in slices:
            runs.setdefault(placed.slice, set()).add(placed.revision)
    sets: dict[str, DisaggregatedSet | None] = {}
    out: dict[int, DisaggregatedSet] = {}
    for s, revisions in sorted(runs.items()):
        if len(revisions) != 1:
            continue
        (revision,) = revisions
        if revision not in sets:
            sets[revision] = ds if revision == ds.revision else stable_set(ds, snapshot, revision)
        at = sets[revision]
        if at is not None:
            out[s] = at
    return out


def position_for(policy: RolloutPolicy | None, recorded: Position | None, rollout: str, stable: str,
                 progress: Sequence[Progress], now: datetime.datetime) -> Position:
    """The position of the rollout to `rollout` (position.for_revision), or, under a policy, when
    no position is recorded at all while the live objects show the rollout under way (a slice
    has the new revision beside one that has not started: the RolloutState deleted or pruned,
    a policy added mid-rollout), one rebuilt from them: paused by kubectl-disagg at the first
    wave, nothing recorded passed, so no step moves past what the live objects prove
    (design §9.6). A position recorded for another rollout (the template changed again, or
    reverted) starts afresh as ever: it cannot tell a superseded rollout from an old one."""
    position = for_revision(recorded, rollout, stable)
    started = [s for s, p in enumerate(progress) if p in (Progress.IN_FLIGHT, Progress.DONE)]
    if position.revision == rollout and (recorded is None or recorded.revision != rollout):
        position = replace(position, found=tuple(started))  # made here: the slices that already run it
    if policy is None or recorded is not None:
        return position
    if not started or (Progress.IN_FLIGHT not in progress and Progress.PENDING not in progress):
        return position  # a first rollout (no slice started), or none under way
    return replace(position, paused=Stamp(timestamp(now), RECOVERED_BY, LOST_POSITION.format(
        slices=naming.slices_words(started), run="runs" if len(started) == 1 else "run", revision=rollout)))


RECOVERED_BY = naming.MANAGER  # who pauses a rollout whose position was lost
ANALYSIS_BY = "analysis"  # who pauses (or aborts) a rollout whose analysis failed
LOST_POSITION = "no recorded position: the RolloutState of this rollout was not found; {slices} already {run} {revision}"


# --- why the rollout does not move on, as data (views/stops.py phrases it) --------------------


class Stop(StrEnum):
    """Why a decision holds the whole rollout still."""

    LOST = "lost"  # paused by kubectl-disagg: the position was lost (`position_for`)
    PAUSED = "paused"  # paused by a person, or by a failed analysis (onFailure: pause)
    ABORTED = "aborted"  # aborted, and every slice is back at the stable revision
    GATE = "gate"  # at a gate: an analysis, a soak or a pause until promoted


@dataclass(frozen=True)
class Stopped:
    """Why the rollout does not move on (`stopped`): `why`, the `wave` reached (from 0), the
    pause's or abort's `stamp` (who, and a failed analysis's values), the `stable` revision
    (an abort's target) and the `gate` waited at."""

    why: Stop
    wave: int
    stamp: Stamp | None = None
    stable: str = ""
    gate: Gate | None = None


def stopped(decision: WaveDecision) -> Stopped | None:
    """Why `decision` holds the rollout still, or None while it moves on."""
    if decision.state == State.PAUSED:
        paused = decision.position.paused
        why = Stop.LOST if paused is not None and paused.by == RECOVERED_BY else Stop.PAUSED
        return Stopped(why, decision.wave, paused, decision.position.stable)
    if decision.state == State.ABORTED and not decision.moves:
        return Stopped(Stop.ABORTED, decision.wave, decision.position.aborted, decision.moves_to)
    if decision.state != State.AT_GATE or decision.gate is None:
        return None
    return Stopped(Stop.GATE, decision.wave, gate=decision.gate)
