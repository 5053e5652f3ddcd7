"""Where a progressive rollout stands (design §9.6): one value for both modes. Pure.

The position is what a RolloutPolicy's rollout remembers between calls: the wave reached, when
each wave completed (a soak is measured from it), the gates passed (when, by whom, how), paused,
aborted, and the analysis verdicts (opaque data, recorded whole). `rollout step` keeps it in the
set's RolloutState object in the cluster, `--gitops` in the state file; both write
`position_document` under `position:` and read it back with `parse_position`:

    position:
      revision: 7b04d5c1          # the rollout this position is about (the set's revision)
      stable: 1a2b3c4d            # the revision it rolls from: what an abort returns to
      wave: 1                     # the wave reached (index into the resolved waves)
      completed: {"0": "2026-12-01T21:00:00Z"}      # wave → when its last slice completed
      gates:
      - {wave: 0, gate: pause, at: "2026-12-01T21:05:00Z", by: alice, how: promote}
      paused: {at: ..., by: ...}  # absent unless paused
      aborted: {at: ..., by: ..., reason: ...}      # absent unless aborted
      full: {at: ..., by: ...}    # `rollout promote --full`: every later gate passed, no budget
      verdicts: {"1": {phase: passed, ...}}         # wave → the recorded analysis verdict

A position for another revision than the set's is a finished or superseded rollout: `for_revision`
starts afresh (an aborted one stays aborted while the set's revision is its stable one).
Times are RFC 3339 strings in UTC; the clock belongs to the caller.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kubectl_disagg.core.durations import later
from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests.source import dotted

ANALYSIS, PAUSE = "analysis", "pause"  # the gates after a wave, in the order they are passed
PROMOTED, SOAKED, VERDICT, FULL = "promote", "duration", "verdict", "promote --full"
PASSED, FAILED = "passed", "failed"  # what an analysis verdict's `phase` says


@dataclass(frozen=True)
class Stamp:
    """Who did something, and when (RFC 3339, UTC); `reason` for an abort."""

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
    verdicts: Mapping[int, Mapping] = field(default_factory=dict)

    def passed(self, wave: int, gate: str) -> GatePassed | None:
        return next((g for g in self.gates if (g.wave, g.gate) == (wave, gate)), None)

    def verdict(self, wave: int) -> str | None:
        """`passed`, `failed` or None: what the analysis recorded for `wave` says."""
        recorded = self.verdicts.get(wave)
        return recorded.get("phase") if isinstance(recorded, Mapping) else None

    def with_verdict(self, wave: int, verdict: Mapping) -> Position:
        """The analysis verdict of `wave` recorded (opaque data; its `phase` is PASSED or FAILED):
        the next decision passes the gate on `passed` and does the policy's onFailure on `failed`."""
        return replace(self, verdicts={**self.verdicts, wave: dict(verdict)})

    def with_gate(self, wave: int, gate: str, at: str, by: str, how: str) -> Position:
        if self.passed(wave, gate):
            return self
        return replace(self, gates=(*self.gates, GatePassed(wave, gate, at, by, how)))


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


# --- the document -----------------------------------------------------------------------------


def position_document(position: Position) -> dict:
    """The position as a YAML-ready mapping (the `position:` of a RolloutState)."""
    document: dict = {"revision": position.revision, "stable": position.stable, "wave": position.wave}
    if position.completed:
        document["completed"] = {str(w): at for w, at in sorted(position.completed.items())}
    if position.gates:
        document["gates"] = [{"wave": g.wave, "gate": g.gate, "at": g.at, "by": g.by, "how": g.how}
                             for g in position.gates]
    for key in ("paused", "aborted", "full"):
        stamp = getattr(position, key)
        if stamp is not None:
            document[key] = {"at": stamp.at, "by": stamp.by, **({"reason": stamp.reason} if stamp.reason else {})}
    if position.verdicts:
        document["verdicts"] = {str(w): dict(v) for w, v in sorted(position.verdicts.items())}
    return document


def parse_position(raw: object, file: str, line_of, prefix: tuple = ("position",)) -> tuple[Position | None, list[Problem]]:
    """The position in `raw` (a RolloutState's `position:`), or None with every problem;
    `line_of` maps a field path to its line."""
    problems: list[Problem] = []

    def fail(path: tuple, message: str) -> None:
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
    completed = _by_wave(raw.get("completed"), ("completed",), fail, lambda v: _time(v))
    verdicts = _by_wave(raw.get("verdicts"), ("verdicts",), fail, lambda v: isinstance(v, dict))
    gates = []
    for index, gate in enumerate(raw.get("gates") or []):
        if not (isinstance(gate, dict) and _count(gate.get("wave")) and gate.get("gate") in (ANALYSIS, PAUSE)
                and _time(gate.get("at")) and isinstance(gate.get("by"), str) and isinstance(gate.get("how"), str)):
            fail(("gates", index), "needs wave (index), gate (analysis or pause), at (RFC 3339), by and how")
            continue
        gates.append(GatePassed(gate["wave"], gate["gate"], gate["at"], gate["by"], gate["how"]))
    stamps = {}
    for key in ("paused", "aborted", "full"):
        stamp = raw.get(key)
        if stamp is None:
            stamps[key] = None
        elif isinstance(stamp, dict) and _time(stamp.get("at")) and isinstance(stamp.get("by"), str):
            stamps[key] = Stamp(stamp["at"], stamp["by"], str(stamp.get("reason") or ""))
        else:
            fail((key,), "needs at (RFC 3339) and by")
    if problems:
        return None, problems
    return Position(revision, stable, wave, completed, tuple(gates), stamps["paused"], stamps["aborted"],
                    stamps["full"], verdicts), []


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _time(value: object) -> bool:
    try:
        parse_time(value)
    except (TypeError, ValueError):
        return False
    return True


def _by_wave(raw: object, path: tuple, fail, valid) -> dict[int, object]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        fail(path, "must map a wave index to a value")
        return {}
    out = {}
    for key, value in raw.items():
        if not str(key).isdigit() or not valid(value):
            fail(path + (key,), "must be a wave index with its value")
            continue
        out[int(key)] = value
    return out
