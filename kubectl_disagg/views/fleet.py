"""A fleet of slices in words (core/delivery/fleet.py's `Fleet`): what each slice does, folded into one
line per situation, and the one progress line that ends each pass of `rollout step`.

An abort reads as an abort: a pass toward the stable revision is a rollback ("slices 0-1:
rollback to revision a3c625b8 started"), and `abort_sentence` says the same of a rollout a
policy or a person aborted, for the RolloutState's message and its Events, in the words a
template revert gets. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubectl_disagg.core.api.durations import format_duration
from kubectl_disagg.core.delivery.fleet import Fleet
from kubectl_disagg.core.controller.reconcile import Phase, SliceReport
from kubectl_disagg.core.delivery.waves import Hold
from kubectl_disagg.core.api.naming import slices_words
from kubectl_disagg.views.stops import abort_sentence


def counts(report: SliceReport) -> str:
    """` [old/new: prefill 1/0, decode 1/0]` of a slice under way (empty otherwise)."""
    if not report.roles:
        return ""
    return " [old/new: " + ", ".join(f"{role} {old}/{new}" for role, old, new in
                                      zip(report.roles, report.old, report.new)) + "]"


def slice_sentence(report: SliceReport, fleet: Fleet) -> str:
    """What the pass did with one slice, in the words of its phase (`Phase.says`), toward the
    revision the pass goes to: a rollback says so; a slice held before its wave names the wave."""
    reasons = (*report.waiting_for, *report.blocked)
    if report.phase == Phase.HELD and reasons == (Hold.WAVE.value,) and fleet.waves:
        return f"held, wave {fleet.wave_of(report.slice) + 1} not started"
    if (fleet.rollback or fleet.returning) and report.phase in (Phase.ROLLOUT_STARTED, Phase.COMPLETE):
        return f"rollback to revision {fleet.moves_to} {'started' if report.phase == Phase.ROLLOUT_STARTED else 'complete'}"
    said = report.phase.says(fleet.moves_to, reasons)
    if report.phase == Phase.ROLLING:
        where = (f"step {report.position[0] + 1}/{report.position[1]}" if report.position
                 else "off the planned path")
        return f"{'rolling back' if fleet.rollback or fleet.returning else said}, {where} ({report.step_kind}){counts(report)}"
    if report.phase == Phase.WAITING:
        after = f" (after step {report.position[0]}/{report.position[1]})" if report.position else ""
        return f"{said}{after}{counts(report)}"
    return said


def gate_words(fleet: Fleet) -> str:
    """The gate ahead: `analysis ttft after wave 1`, `a 10m soak after wave 2`, `a pause after wave 2`."""
    gate = fleet.gate
    if gate is None:
        return ""
    kinds = []
    if gate.analysis:
        kinds.append(f"analysis {', '.join(gate.analysis)}")
    if gate.pause:
        kinds.append(f"a {format_duration(gate.duration)} soak" if gate.duration is not None else "a pause")
    return f"{' then '.join(kinds)} after wave {gate.index + 1}"


def progress_line(fleet: Fleet, waiting: Sequence[tuple[Sequence[int], str]] = ()) -> str:
    """The fleet in one line: the wave reached, the slices in flight and done, the gate ahead
    (or the gate it stands at); `waiting`: (slices, what they wait for), said last."""
    parts = []
    # under a budget, the slices deployed afresh (no old revision) are said apart: it does not pace them;
    # a first deploy (every slice in flight so, none held) names no wave either
    fresh = fleet.deploying if fleet.budget is not None and not fleet.rollback else ()
    rolling = tuple(s for s in fleet.in_flight if s not in fresh)
    deploying = bool(fresh) and not rolling and not fleet.held
    if fleet.rollback:
        parts.append(abort_sentence(fleet.in_flight, fleet.moves_to, fleet.back))
    elif fleet.returning and not fleet.waves:
        parts.append(f"rollback to {fleet.moves_to} (a revision it ran before)")
    elif fleet.waves and not deploying:
        wave = fleet.waves[fleet.wave]
        parts.append(f"wave {fleet.wave + 1} of {len(fleet.waves)}"
                     + (f" ({slices_words(range(wave.start, wave.end))})" if wave.end > wave.start else ""))
    if rolling and not fleet.rollback:
        budget = f" (at most {fleet.budget})" if fleet.budget is not None else ""
        parts.append(f"{slices_words(rolling)} in flight{budget}")
    if fresh:
        parts.append(f"{slices_words(fresh)} deploying (no old revision: not paced by the budget)")
    at = f" at revision {fleet.moves_to}" if fleet.rollback else ""
    parts.append(f"{len(fleet.done)} of {fleet.slices} slices done{at}")
    back = f"rollback to {fleet.moves_to} (a revision it ran before): " if fleet.returning and fleet.waves else ""
    line = (f"{fleet.name}: {back}" + ("; " if fleet.rollback else ", ").join(parts[:2])
            + "".join(f", {p}" for p in parts[2:]))
    gate = gate_words(fleet)
    if gate and not fleet.rollback:
        reached = all(s in fleet.done for s in range(fleet.waves[fleet.gate.index].end)) if fleet.gate else False
        line += f"; {'at the gate' if reached else 'next gate'}: {gate}"
    if waiting:
        line += "; waiting: " + "; ".join(f"{slices_words(slices)} ({what})" for slices, what in waiting)
    return line


# What a pass means for the reader (issue 51): the step's output grows with what changed, not with
# the waiting. `Beat` is a pass as a reader follows it; `news` says what changed since the beat last
# printed, and the Console (views/step_console.py) prints on that alone.

WAVE_STARTED, WAVE_COMPLETED, GATE_REACHED, ROLLBACK = "wave started", "wave completed", "gate reached", "rollback"
MOVED, WAITING_CHANGED = "moved", "waiting changed"
MILESTONES = (WAVE_STARTED, WAVE_COMPLETED, GATE_REACHED, ROLLBACK)  # what -q prints a line for
ALIVE_SECONDS = 60.0  # piped, a run that only waits says so again after this long


@dataclass(frozen=True)
class Beat:
    """A pass as a reader follows it: the wave reached and whether all its slices are done, the
    gate it stands at, a rollback; `state`, the fleet's progress line without what slices wait
    for; `waiting`, the slices that wait (what each waits for, a status read a moment later, is
    not news); `complete`, the set is."""

    wave: int
    wave_done: bool
    at_gate: bool
    rollback: bool
    complete: bool
    state: str
    waiting: tuple[int, ...]


def beat(fleet: Fleet, waiting: Sequence[tuple[Sequence[int], str]] = ()) -> Beat:
    """The beat of the pass that left `fleet`, with the slices of `waiting` (see `progress_line`)."""
    last = fleet.waves[fleet.wave].end if fleet.waves else fleet.slices
    wave_done = all(s in fleet.done for s in range(last)) and not fleet.rollback
    at_gate = (fleet.gate is not None and fleet.gate.index == fleet.wave and wave_done) if fleet.waves else False
    return Beat(fleet.wave, wave_done, at_gate, fleet.rollback, fleet.complete, progress_line(fleet),
                tuple(sorted(s for slices, _ in waiting for s in slices)))


def news(before: Beat | None, after: Beat) -> tuple[str, ...]:
    """What changed for the reader from `before` (the beat printed last; None: nothing yet) to
    `after`: a wave started or completed, a gate reached, a rollback (the MILESTONES), the fleet
    moved (slices started, stepped or done), other slices wait. Empty: a pass that only
    waited, as the one before it did, or whose move its report says (a slice's next step)."""
    if before is None:  # the run's first pass: where it stands
        return ((ROLLBACK,) if after.rollback else (GATE_REACHED,) if after.at_gate
                else (WAVE_COMPLETED,) if after.wave_done else (WAVE_STARTED,))
    said = []
    if after.rollback and not before.rollback:
        said.append(ROLLBACK)
    if (after.wave, after.rollback) != (before.wave, before.rollback) and not after.rollback:
        said.append(WAVE_STARTED)
    if after.wave_done and not (before.wave_done and before.wave == after.wave):
        said.append(GATE_REACHED if after.at_gate else WAVE_COMPLETED)
    if after.state != before.state:
        said.append(MOVED)
    if after.waiting and after.waiting != before.waiting:  # waiting no more: the pass that moved says so
        said.append(WAITING_CHANGED)
    return tuple(said)


def line_due(before: Beat | None, after: Beat, *, quiet: bool, silent_for: float, until_complete: bool) -> bool:
    """Whether the progress line of the pass that left `after` is printed (piped, or -q), the
    line of `before` printed last, `silent_for` seconds ago: with -q at a milestone only, and not
    at the end of --until-complete (the end has its own line); otherwise when the pass is news,
    or once a minute while the run only waits."""
    if quiet:
        return not (until_complete and after.complete) and any(what in MILESTONES for what in news(before, after))
    return bool(news(before, after)) or silent_for >= ALIVE_SECONDS
