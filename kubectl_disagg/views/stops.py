"""Why a paced rollout does not move on, in words: `core.delivery.waves.stopped`'s reason data phrased
once, for the mode whose commands pass it (`--gitops` or not). Pure, and light to import (core
only): the pacers in rollout/ (progressive.py, served.py), never a store below, call it for the words a
pass reports and a RolloutState records (tests/unit/test_architecture.py allows them this one
view). An abort is one of those stops, and reads as one everywhere: `abort_sentence` is the
rollback's words for the step's text (views/fleet.py), the RolloutState's message, its Events
and the served summary of a git state, whether a policy, a person or a template revert ended it."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence

from kubectl_disagg.core.delivery.fleet import going_back, rollback_of
from kubectl_disagg.core.api.naming import slices_words
from kubectl_disagg.core.delivery.position import ANALYSIS, Stamp
from kubectl_disagg.core.controller.reconcile import Rollback
from kubectl_disagg.core.delivery.waves import Gate, Stop, Stopped, WaveDecision, stopped

Spell = Callable[[str, str], str]  # (verb, flags) → the command line, as the user would type it


def policy_where(phase: str, wave: int, waves: int, end: int) -> str:
    """Where a paced rollout stands, as `rollout status` says it in both modes: `RolloutPolicy:
    AtGate, wave 1 of 3 (slices 0-0)` (`wave` from 0; `end`: one past the wave's last slice)."""
    return f"RolloutPolicy: {phase}, wave {wave + 1} of {waves} (slices 0-{max(end - 1, 0)})"


def stopped_reasons(decision: WaveDecision, gitops: bool = False, where: str = "") -> tuple[str, ...]:
    """Why the rollout does not move on, in words (empty while it does); `gitops`: the commands
    that pass it are the --gitops ones, given `-f` the directory of `where` (the set's file;
    empty: the generic `-f DIR`)."""
    why = stopped(decision)
    return () if why is None else (stop_sentence(why, gitops, gitops_spelling(where) if gitops and where else None),)


def gitops_spelling(where: str) -> Spell:
    """The --gitops command lines of the set whose file is `where`, `-f` its directory, as
    views/invocation.py spells them (this module stands on core alone)."""
    directory = shlex.quote(os.path.dirname(where) or ".")
    return lambda verb, flags: f"kubectl disagg rollout {verb}{f' {flags}' if flags else ''} --gitops -f {directory}"


def stop_sentence(why: Stopped, gitops: bool = False, spell: Spell | None = None) -> str:
    """What holds the rollout and what passes it, in a sentence; `spell`: the command lines in
    the user's own words (views/invocation.py `Invocation.command`; None: the generic ones)."""
    def command(verb: str, gitops: bool, flags: str = "") -> str:
        return _command(verb, gitops, flags, spell)

    if why.why == Stop.LOST:
        reason = why.stamp.reason if why.stamp is not None else ""
        return (f"the rollout is paused ({reason}): {command('resume', gitops)} continues it from "
                f"wave {why.wave + 1} (its gates are passed again), {command('abort', gitops)} rolls "
                f"it back to the stable revision {why.stable}")
    if why.why == Stop.PAUSED:
        return f"the rollout is paused{by_analysis(why.stamp)}: {command('resume', gitops)} continues it"
    if why.why == Stop.ABORTED:
        return (f"the rollout was aborted{by_analysis(why.stamp)} and every slice is back at "
                f"the stable revision {why.stable}: setting the set's template back to it ends the rollout "
                f"({command('undo', gitops)} does), {command('retry', gitops)} starts it again from wave 1")
    assert why.gate is not None
    return gate_sentence(why.gate, gitops, spell)


def owned_sentence(set_name: str, owned: Sequence[str]) -> str:
    """Why `rollout step` refuses a set whose objects (`kind/name`, core/controller/ownership.py
    `controller_owned`) the DisaggregatedSet controller owns, and what hands it over."""
    shown = ", ".join(owned[:3]) + (f" and {len(owned) - 3} more" if len(owned) > 3 else "")
    return (f"the DisaggregatedSet controller owns this set ({shown}: their ownerReferences name "
            f"disaggregatedset/{set_name} as controller); it rolls the set out itself, and stepping it too "
            "would fight it. `rollout status` and `rollout plan` follow it read-only; "
            "`kubectl disagg handover to-plugin NAME` hands it over once the controller is stopped")


def reconciled_sentence(set_name: str, signs: Sequence[str]) -> str:
    """Why `rollout step NAME` refuses a stored set showing `signs` (core/controller/ownership.py
    `reconciled_by_controller`) that a controller reconciles it, and what overrides it."""
    return (f"disaggregatedset/{set_name} has {', '.join(signs)}, which only the DisaggregatedSet controller "
            "writes: a controller reconciles it (the LWS controller runs one from LWS v0.9 on). Stepping it too "
            "would fight it; pass --ignore-controller if no controller runs any more")


def by_analysis(stamp: Stamp | None) -> str:
    """Why an analysis stopped the rollout, with its failing values, as " (...)" (empty when a
    person did)."""
    return f" ({stamp.reason})" if stamp is not None and stamp.by == "analysis" else ""


def _command(verb: str, gitops: bool, flags: str = "", spell: Spell | None = None) -> str:
    if spell is not None:
        return f"`{spell(verb, flags.strip())}`"
    return f"`kubectl disagg rollout {verb}{flags}{' --gitops -f DIR' if gitops else ''}`"


def gate_sentence(gate: Gate, gitops: bool = False, spell: Spell | None = None) -> str:
    """What passes `gate`, in a sentence (waves counted from 1, as people count them)."""
    def command(verb: str, gitops: bool, flags: str = "") -> str:
        return _command(verb, gitops, flags, spell)

    wave = gate.wave + 1
    if gate.kind == ANALYSIS:
        return (f"wave {wave} waits for analysis ({', '.join(gate.checks)}): {command('step', gitops)} measures it "
                f"and its verdict passes it, {command('promote', gitops, ' --full --skip-analysis')} skips it")
    if gate.until is not None:
        return (f"wave {wave} soaks until {gate.until}: a step after that passes it, "
                f"{command('promote', gitops)} passes it now")
    return f"wave {wave} is paused: {command('promote', gitops)} starts the next wave"


def measure_sentence(gate: Gate, gitops: bool = False, spell: Spell | None = None) -> str:
    """`rollout status -w` at an analysis gate that no `rollout step` measures: what measures it
    (the step, whose verdict passes the gate or does the policy's onFailure) and what skips it."""
    def command(verb: str, flags: str = "") -> str:
        return _command(verb, gitops, flags, spell)

    return (f"wave {gate.wave + 1} waits for analysis ({', '.join(gate.checks)}), which no `rollout step` is "
            f"measuring: {command('step')} measures it (its verdict passes the gate or does the policy's "
            f"onFailure), {command('promote', ' --full --skip-analysis')} skips it")


# --- an abort, in the words every view uses for it ------------------------------------------


def abort_sentence(slices: Sequence[int], stable: str, back: Rollback | None = None,
                   step: tuple[int, int] | None = None) -> str:
    """A rollback in the words every view uses for it, whether a policy aborted the rollout
    (`back.reason`: the failed verdict, or the verb; `back.by`: who) or the template was set back
    (`back.revert`): `rollback of slices 0-1 to a3c625b8, step 2 of 4 — aborted: ttft 2.425 s is
    not < 0.5`."""
    where = f"rollback of {slices_words(slices)} to {stable}" if slices else f"rollback to {stable}"
    if step is not None:
        where += f", step {step[0]} of {step[1]}"
    return f"{where} — {why_back(back)}"


def aborted_words(stable: str, rolled_back: bool) -> str:
    """Where the fleet of an aborted rollout stands, as `rollout status` says it in both modes:
    `aborted: rolled back, every slice serves the stable revision 8909607f`, or rolling back to it."""
    if rolled_back:
        return f"aborted: rolled back, every slice serves the stable revision {stable}"
    return f"aborted: rolling back to the stable revision {stable}"


def why_back(back: Rollback | None) -> str:
    """`aborted: <the failed verdict>`, `aborted by alice`, `aborted: the template was set back`."""
    if back is None:
        return "aborted"
    if back.revert:
        return f"aborted: the template was set back to {back.stable}"
    by = f" by {back.by}" if back.by and back.by != "analysis" else ""
    reason = f": {back.reason}" if back.reason and back.reason != "rollout abort" else ""
    return f"aborted{by}{reason}"


def rollback_words(decision: WaveDecision) -> str:
    """The rollback `decision` runs, in `abort_sentence`'s words."""
    return abort_sentence(going_back(decision), decision.moves_to, rollback_of(decision))


def abort_message(name: str, decision: WaveDecision) -> str:
    """The RolloutState's `rollout.message` while a rollback runs (rollout/progressive.py `summary`)."""
    return f"{name}: {rollback_words(decision)}"


def abort_event_message(decision: WaveDecision) -> str:
    """The RolloutAborted Event's message (rollout/progressive.py `wave_events`), waves counted from 1."""
    back = rollback_of(decision) or Rollback(decision.moves_to, decision.position.aborted.reason
                                             if decision.position.aborted else "")
    return (f"Rollout aborted at wave {decision.wave + 1} of {len(decision.waves)}: "
            f"{abort_sentence(going_back(decision), decision.moves_to, back)}")
