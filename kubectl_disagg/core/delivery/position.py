"""Where a progressive rollout stands (design §9.6): one value for both modes. Pure.

The position is what a RolloutPolicy's rollout remembers between calls: the wave reached, when
each wave completed (a soak is measured from it), the gates passed (when, by whom, how), paused,
aborted, and the analysis verdicts (opaque data, recorded whole). `rollout step` keeps it in the
set's RolloutState object in the cluster, `--gitops` in the state file; both write
`position_document` under `position:` and read it back with `parse_position`, and read only a
position the planner could have written (`recorded_position_problems`, design §9.6):

    position:
      revision: 7b04d5c1          # the rollout this position is about (the set's revision)
      stable: 1a2b3c4d            # the revision it rolls from: what an abort returns to
      wave: 1                     # the wave reached (index into the resolved waves)
      completed: {"0": "2026-12-01T21:00:00Z"}      # wave → when its last slice completed
      gates:
      - {wave: 0, gate: pause, at: "2026-12-01T21:05:00Z", by: alice, how: promote, reason: ...}
      paused: {at: ..., by: ...}  # absent unless paused
      aborted: {at: ..., by: ..., reason: ...}      # absent unless aborted
      full: {at: ..., by: ...}    # `rollout promote --full`: every later gate passed, no budget
      resumed: {at: ..., by: ..., reason: ...}      # `rollout resume --reason`: the last resume, and why
      retried: {at: ..., by: ..., reason: ...}      # `rollout retry`: the aborted rollout started again
      verdicts: {"1": {phase: passed, ...}}         # wave → the recorded analysis verdict

A position for another revision than the set's is a finished or superseded rollout: `for_revision`
starts afresh (an aborted one stays aborted while the set's revision is its stable one).
Times are RFC 3339 strings in UTC; the clock belongs to the caller.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeGuard, TypeVar, get_args

from kubectl_disagg.core.api.durations import format_duration, later
from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests.source import FieldPath, JsonObject, dotted

from kubectl_disagg.core.api.policy_types import ResolvedWave

_T = TypeVar("_T")

ANALYSIS, PAUSE = "analysis", "pause"  # the gates after a wave, in the order they are passed
# How a gate was passed, in the state file's words (the format's values: `promote --full` is what
# the file records for a gate `rollout promote --full` passed, not a command line to run).
How = Literal["promote", "duration", "verdict", "promote --full"]
PROMOTED, SOAKED, VERDICT, FULL = get_args(How)
PASSED, FAILED = "passed", "failed"  # what an analysis verdict's `phase` says


@dataclass(frozen=True)
class Stamp:
    """Who did something, and when (RFC 3339, UTC); `reason`: why (a verb's --reason, what an
    analysis found; empty: none given)."""

    at: str
    by: str
    reason: str = ""


@dataclass(frozen=True)
class GatePassed:
    wave: int
    gate: str  # ANALYSIS | PAUSE
    at: str
    by: str
    how: str  # PROMOTED | SOAKED | VERDICT | FULL
    reason: str = ""  # a promote's --reason


@dataclass(frozen=True)
class Position:
    revision: str = ""
    stable: str = ""
    wave: int = 0
    completed: Mapping[int, str] = field(default_factory=dict)
    gates: tuple[GatePassed, ...] = ()
    paused: Stamp | None = None
    aborted: Stamp | None = None
    full: Stamp | None = None
    verdicts: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    # the slices that already ran `revision` when this position was made (a revision committed
    # again, a lost position rebuilt): outside the admitted waves, only these may run it
    found: tuple[int, ...] = ()
    resumed: Stamp | None = None  # the last `rollout resume` given a --reason (a resume without one leaves no mark)
    retried: Stamp | None = None  # the last `rollout retry`: the aborted rollout started again from wave 1

    def passed(self, wave: int, gate: str) -> GatePassed | None:
        return next((g for g in self.gates if (g.wave, g.gate) == (wave, gate)), None)

    def verdict(self, wave: int) -> str | None:
        """`passed`, `failed` or None: what the analysis recorded for `wave` says."""
        recorded = self.verdicts.get(wave)
        return recorded.get("phase") if isinstance(recorded, Mapping) else None

    def with_verdict(self, wave: int, verdict: Mapping[str, Any]) -> Position:
        """The analysis verdict of `wave` recorded (opaque data; its `phase` is PASSED or FAILED):
        the next decision passes the gate on `passed` and does the policy's onFailure on `failed`."""
        return replace(self, verdicts={**self.verdicts, wave: dict(verdict)})

    def with_gate(self, wave: int, gate: str, at: str, by: str, how: str, reason: str = "") -> Position:
        if self.passed(wave, gate):
            return self
        return replace(self, gates=(*self.gates, GatePassed(wave, gate, at, by, how, reason)))


def for_revision(position: Position | None, revision: str, stable: str) -> Position:
    """The position of the rollout to `revision`: `position` when it is that rollout's (or an
    abort of it being finished, the set back at its stable revision), else a fresh one from
    `stable`."""
    if position is not None and position.revision == revision:
        return position if position.stable or not stable else replace(position, stable=stable)
    if position is not None and position.aborted is not None and position.stable == revision:
        return position  # the set went back to the stable revision: the abort completes
    return Position(revision=revision, stable=stable)


def soak_end(completed: str, seconds: float) -> str:
    """When a soak of `seconds` after a wave completed at `completed` passes (RFC 3339, to the
    second, the last representable time when beyond it): what a step compares its clock with."""
    return timestamp(later(parse_time(completed), seconds))


def timestamp(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)


# --- which positions the planner writes ---------------------------------------------------------
#
# A position is an input people edit (a RolloutState in the cluster, a state file in git), and
# its wave opens slices. So a recorded position is read only if the planner could have written
# it (design §9.6); core/delivery/policy.py `position_problems` applies this to a set's policy.

_HOW = {ANALYSIS: (VERDICT, FULL), PAUSE: (PROMOTED, SOAKED, FULL)}  # how each gate is passed
_EDITED = "edited by hand?"
Found = list[tuple[FieldPath, str]]  # (path under the position, message) pairs


def recorded_position_problems(position: Position, waves: Sequence[ResolvedWave], highest: int) -> Found:
    """Why `position` is not one the planner could have written under `waves` (the policy's
    resolved waves: each `index`, `end`, `analysis`, `pause`, `duration`, `gated`); `highest`:
    the last wave index the policy resolves to for any number of slices.

    - `wave` is at most `highest`, and every wave before it is recorded completed, each of its
      gates (analysis, then pause) recorded passed or `full` set: a rollout leaves a wave only
      through its gates;
    - a gate passed fits its gate: `promote` passes only a pause, `verdict` only an analysis
      whose recorded verdict is `passed`, `duration` only a soak, no earlier than the wave's
      completion plus the soak, `promote --full` only with `full` recorded; a pause is passed
      after its wave's analysis; each gate once;
    - a gate is recorded only for a wave recorded completed, and a gated wave is recorded
      completed only once the rollout reached it."""
    return _wave_problems(position, waves, highest) + _gate_problems(position, waves)


def _wave_problems(position: Position, waves: Sequence[ResolvedWave], highest: int) -> Found:
    out: Found = []
    reached = position.wave
    if reached > highest:
        out.append((("wave",), f"is {reached} (wave {reached + 1}), but the RolloutPolicy has {len(waves)} waves "
                               f"for {waves[-1].end} slices, counted from 0 ({_EDITED} set it back to the wave "
                               f"the rollout stands at, at most {len(waves) - 1})"))
    full = position.full is not None
    for wave in waves[:min(reached, len(waves) - 1)]:  # the last wave is never left
        if wave.index not in position.completed:
            out.append((("wave",), f"is {reached} (wave {reached + 1}), past wave {wave.index + 1}, which is not "
                                   "recorded as completed (position.completed): a rollout leaves a wave only once "
                                   f"every slice of it is done ({_EDITED} set it back to {wave.index})"))
            break
        gates = [(ANALYSIS, "its analysis, which the next step runs")] if wave.analysis else []
        gates += [(PAUSE, "a promote passes it" if wave.duration is None
                   else "a step after its soak passes it")] if wave.pause else []
        missing = next(((gate, then) for gate, then in gates if not full and not position.passed(wave.index, gate)),
                       None)
        if missing is not None:
            gate, then = missing
            out.append((("wave",), f"is {reached} (wave {reached + 1}), past the {gate} gate after wave "
                                   f"{wave.index + 1}, which is not recorded as passed (position.gates): a rollout "
                                   f"leaves a wave only through its gates ({_EDITED} set it back to {wave.index}: "
                                   f"the rollout then waits at that gate, and {then})"))
            break
    for index, at in sorted(position.completed.items()):
        if reached < index < len(waves) and waves[index].gated:
            out.append((("completed", str(index)), f"records wave {index + 1} as completed at {at}, but the "
                                                   f"rollout has reached only wave {reached + 1} (position.wave): "
                                                   f"a wave completes once it is reached ({_EDITED} remove this "
                                                   "entry)"))
    return out


def _gate_problems(position: Position, waves: Sequence[ResolvedWave]) -> Found:
    out: Found = []
    seen: set[tuple[int, str]] = set()
    for index, gate in enumerate(position.gates):
        path, after = ("gates", index), f"the {gate.gate} gate after wave {gate.wave + 1}"
        if (gate.wave, gate.gate) in seen:
            out.append((path, f"records {after} a second time ({_EDITED} remove this entry)"))
            continue
        seen.add((gate.wave, gate.gate))
        if gate.how not in _HOW[gate.gate]:
            ways = " or ".join(_HOW[gate.gate])
            out.append((path + ("how",), f"is {gate.how!r}, but {after} is passed by {ways} ({_EDITED} remove this "
                                         "entry: the rollout then waits at that gate)"))
            continue
        completed = position.completed.get(gate.wave)
        if completed is None:
            out.append((path, f"records {after} as passed, but wave {gate.wave + 1} is not recorded as completed "
                              "(position.completed): a gate is passed only once every slice of its wave is done "
                              f"({_EDITED} or a promote before then, which earlier versions recorded? remove this "
                              "entry)"))
            continue
        wave = waves[gate.wave] if gate.wave < len(waves) else None
        if gate.how == FULL and position.full is None:
            out.append((path + ("how",), f"says `{FULL}` passed {after}, but no `{FULL}` is "
                                         f"recorded (position.full) ({_EDITED} remove this entry)"))
        elif gate.how == VERDICT and position.verdict(gate.wave) != PASSED:
            out.append((path + ("how",), f"says {after} passed on its verdict, but position.verdicts records "
                                         f"{position.verdict(gate.wave) or 'none'} for wave {gate.wave + 1} "
                                         f"({_EDITED} remove this entry: the next step runs the analysis)"))
        elif gate.how == SOAKED and wave is not None:
            out += _soak_problems(path, gate, wave, completed)
        if (gate.gate == PAUSE and wave is not None and wave.analysis and position.full is None
                and not position.passed(gate.wave, ANALYSIS)):
            out.append((path, f"records {after} as passed before its analysis, which is not recorded as passed: "
                              f"the analysis gate comes first ({_EDITED} remove this entry)"))
    return out


def _soak_problems(path: FieldPath, gate: GatePassed, wave: ResolvedWave, completed: str) -> Found:
    """A soak passed: the wave has one, and it had ended (as a step compares: `soak_end`)."""
    if wave.duration is None:
        return [(path + ("how",), f"says the soak after wave {gate.wave + 1} passed, but its pause has no duration "
                                  f"(`pause: {{}}`): only a promote passes it ({_EDITED} remove this entry)")]
    ends = soak_end(completed, wave.duration)
    if parse_time(gate.at) >= parse_time(ends):
        return []
    return [(path + ("at",), f"is {gate.at}, before the soak after wave {gate.wave + 1} ends ({ends}: "
                             f"{format_duration(wave.duration)} after the wave completed at {completed}) "
                             f"({_EDITED} remove this entry: a step after the soak passes it)")]


# --- the document -----------------------------------------------------------------------------

STAMPS = ("paused", "aborted", "full")  # written after `gates`, in this order
LATER_STAMPS = ("resumed", "retried")  # written last (after `found`): documents without them read as before


def position_document(position: Position) -> JsonObject:
    """The position as a YAML-ready mapping (the `position:` of a RolloutState)."""
    document: JsonObject = {"revision": position.revision, "stable": position.stable, "wave": position.wave}
    if position.completed:
        document["completed"] = {str(w): at for w, at in sorted(position.completed.items())}
    if position.gates:
        document["gates"] = [{"wave": g.wave, "gate": g.gate, "at": g.at, "by": g.by, "how": g.how,
                              **({"reason": g.reason} if g.reason else {})} for g in position.gates]
    for key in STAMPS:
        stamp = getattr(position, key)
        if stamp is not None:
            document[key] = {"at": stamp.at, "by": stamp.by, **({"reason": stamp.reason} if stamp.reason else {})}
    if position.verdicts:
        document["verdicts"] = {str(w): dict(v) for w, v in sorted(position.verdicts.items())}
    if position.found:
        document["found"] = list(position.found)
    for key in LATER_STAMPS:
        stamp = getattr(position, key)
        if stamp is not None:
            document[key] = {"at": stamp.at, "by": stamp.by, **({"reason": stamp.reason} if stamp.reason else {})}
    return document


def parse_position(raw: object, file: str, line_of: Callable[[FieldPath], int],
                   prefix: FieldPath = ("position",)) -> tuple[Position | None, list[Problem]]:
    """The position in `raw` (a RolloutState's `position:`), or None with every problem;
    `line_of` maps a field path to its line."""
    problems: list[Problem] = []

    def fail(path: FieldPath, message: str) -> None:
        full = prefix + path
        problems.append(Problem(file, line_of(full), dotted(full), message))

    if not isinstance(raw, dict):
        fail((), "must be a mapping (revision, stable, wave, ...)")
        return None, problems
    revision, stable, wave = raw.get("revision", ""), raw.get("stable", ""), raw.get("wave", 0)
    for key, value in (("revision", revision), ("stable", stable)):
        if not isinstance(value, str):
            fail((key,), "must be a revision (string)")
    if not _count(wave):
        fail(("wave",), f"must be a wave index (0 or more), got {wave!r}")
    completed = _by_wave(raw.get("completed"), ("completed",), fail, _time)
    verdicts = _by_wave(raw.get("verdicts"), ("verdicts",), fail, _is_mapping)
    gates = []
    for index, gate in enumerate(raw.get("gates") or []):
        if not (isinstance(gate, dict) and _count(gate.get("wave")) and gate.get("gate") in (ANALYSIS, PAUSE)
                and _time(gate.get("at")) and isinstance(gate.get("by"), str) and isinstance(gate.get("how"), str)):
            fail(("gates", index), "needs wave (index), gate (analysis or pause), at (RFC 3339), by and how")
            continue
        if not isinstance(gate.get("reason", ""), str):
            fail(("gates", index, "reason"), "must be a string (why the gate was passed)")
            continue
        gates.append(GatePassed(gate["wave"], gate["gate"], gate["at"], gate["by"], gate["how"],
                                gate.get("reason") or ""))
    stamps: dict[str, Stamp | None] = {}
    for key in STAMPS + LATER_STAMPS:
        stamp = raw.get(key)
        if stamp is None:
            stamps[key] = None
        elif isinstance(stamp, dict) and _time(stamp.get("at")) and isinstance(stamp.get("by"), str):
            stamps[key] = Stamp(stamp["at"], stamp["by"], str(stamp.get("reason") or ""))
        else:
            fail((key,), "needs at (RFC 3339) and by")
    found = raw.get("found") or []
    if not (isinstance(found, list) and all(_count(s) for s in found)):
        fail(("found",), "must be a list of slice indexes")
    if problems:
        return None, problems
    return Position(revision, stable, wave, completed, tuple(gates), stamps["paused"], stamps["aborted"],
                    stamps["full"], verdicts, tuple(sorted(set(found))), resumed=stamps["resumed"],
                    retried=stamps["retried"]), []


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _time(value: object) -> TypeGuard[str]:
    if not isinstance(value, str):
        return False
    try:
        parse_time(value)
    except ValueError:
        return False
    return True


def _is_mapping(value: object) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict)


def _by_wave(raw: object, path: FieldPath, fail: Callable[[FieldPath, str], None],
             valid: Callable[[object], TypeGuard[_T]]) -> dict[int, _T]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        fail(path, "must map a wave index to a value")
        return {}
    out: dict[int, _T] = {}
    for key, value in raw.items():
        if not str(key).isdigit() or not valid(value):
            fail(path + (key,), "must be a wave index with its value")
            continue
        out[int(key)] = value
    return out
