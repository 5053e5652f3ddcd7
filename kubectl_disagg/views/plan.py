"""What `rollout plan` prints: a trajectory as a table (templates/plan.txt.j2) or as a document
(-o yaml|json); the titles of a live plan's sections. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kubectl_disagg.core.controller.plan_inputs import PlanFlags, plural, vector
from kubectl_disagg.core.controller.planner import PlanInputs, Step
from kubectl_disagg.core.controller.reconcile import Phase
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.manifests.writer import to_json, to_yaml
from kubectl_disagg.views.plan_chart import format_charts
from kubectl_disagg.views.templating import grouped_by_slice, render_template, table
from kubectl_disagg.core.api.durations import format_duration
from kubectl_disagg.core.api.naming import slices_words
from kubectl_disagg.views.invocation import GENERIC, Invocation
from kubectl_disagg.views.waves import gate_words, slice_range, waves_document, waves_lines

if TYPE_CHECKING:  # (the offline plan loads no rollout)
    from kubectl_disagg.core.api.model import DisaggregatedSet
    from kubectl_disagg.core.api.policy_types import ResolvedWave
    from kubectl_disagg.core.controller.reconcile import SliceReport
    from kubectl_disagg.rollout.plan import FleetPlan, GateStop, SliceLine, SlicePlan

# A rollout replaces the groups of every role: the set's revision covers every role's template (as
# the upstream controller's does), so `set image` or `rollout restart` of one role is a new revision.
REPLACED = "every role's groups are replaced, whichever role's template changed"
TOTAL = "TOTAL (OLD+NEW/TARGET+SURGE)"  # old+new per role against target+surge, the ceiling a scale-up respects


# `rollout plan`'s flags, as the problems core finds in their values name them.
FLAGS = PlanFlags(from_="--from", to="--to", max_surge="--max-surge", max_unavailable="--max-unavailable",
                  roles="--roles")

TABLES = ("table", "wide")  # -o wide: the table with more columns, as kubectl's


def format_plans(plans: Sequence[tuple[str | None, PlanInputs, Sequence[Step]]], output: str,
                 paced: Sequence[DisaggregatedSet] = (), invocation: Invocation = GENERIC) -> str:
    """One plan prints as itself; several (sets, slices) as titled sections or a list. `paced`:
    the sets with a RolloutPolicy, whose waves and gates come first (views/waves.py)."""
    if paced and output in (*TABLES, "chart"):
        lines = [line for ds in paced for line in waves_lines(ds, chart=output == "chart", invocation=invocation)]
        return "\n".join(lines) + "\n" + format_plans(plans, output)
    if paced:
        document = {"policies": [waves_document(ds) for ds in paced],
                    "plans": [{"title": title, **_document(inputs, steps)} for title, inputs, steps in plans]}
        return to_json(document) if output == "json" else to_yaml(document)
    if output == "chart":
        return format_charts(plans)
    if len(plans) == 1 and (plans[0][0] is None or output not in TABLES):
        _, inputs, steps = plans[0]
        return format_plan(inputs, steps, output)
    if output in TABLES:
        return "\n".join(f"{title}\n{format_table(inputs, steps, output == 'wide')}" for title, inputs, steps in plans)
    document = {"plans": [{"title": title, **_document(inputs, steps)} for title, inputs, steps in plans]}
    return to_json(document) if output == "json" else to_yaml(document)


def format_plan(inputs: PlanInputs, steps: Sequence[Step], output: str) -> str:
    if output in TABLES:
        return format_table(inputs, steps, output == "wide")
    document = _document(inputs, steps)
    return to_json(document) if output == "json" else to_yaml(document)


def _document(inputs: PlanInputs, steps: Sequence[Step]) -> JsonObject:
    return {
        "roles": list(inputs.roles),
        "steps": [{"old": list(step.old), "new": list(step.new)} for step in steps],
    }


def format_table(inputs: PlanInputs, steps: Sequence[Step], wide: bool = False) -> str:
    """The plan as an aligned table under its summary, laid out by templates/plan.txt.j2; `wide`
    (-o wide, as kubectl's: more columns) adds what each step changes, role by role."""
    limits = [tgt + cfg.surge for tgt, cfg in zip(inputs.target, inputs.configs)]
    # Each role's total is padded to its own widest value, so roles line up down the table.
    totals = table(None, [[f"{name} {old + new}/{limit}" for name, old, new, limit
                           in zip(inputs.roles, step.old, step.new, limits)] for step in steps])
    rows = [[index, step.kind, vector(step.old), vector(step.new), total,
             *([_changed(inputs.roles, steps[index - 1] if index else step, step)] if wide else [])]
            for index, (step, total) in enumerate(zip(steps, totals))]
    return render_template("plan.txt.j2", summary=_summary(inputs, len(steps) - 1),
                           lines=table(["STEP", "KIND", "OLD", "NEW", TOTAL, *(["CHANGE"] if wide else [])], rows,
                                       right=(0,)))


def _changed(roles: Sequence[str], before: Step, after: Step) -> str:
    """`prefill new +1, decode old -1`: what a step does to each role's replicas (`-`: nothing)."""
    words = [f"{name} {side} {delta:+d}" for name, old_a, old_b, new_a, new_b
             in zip(roles, before.old, after.old, before.new, after.new)
             for side, delta in (("new", new_b - new_a), ("old", old_b - old_a)) if delta]
    return ", ".join(words) or "-"


# The arithmetic every plan and step follows, named where a plan is shown (core/controller/planner.py, proven
# equal to the controller's by tests/integration/test_upstream_conformance.py).
PLANNER = "the DisaggregatedSet controller's planner"


def _summary(inputs: PlanInputs, transitions: int) -> str:
    surges = vector(cfg.surge for cfg in inputs.configs)
    unavailables = vector(cfg.unavailable for cfg in inputs.configs)
    return (f"Roles {vector(inputs.roles)} from {vector(inputs.initial_old)} to {vector(inputs.target)} "
            f"(max surge {surges}; max unavailable {unavailables}): {plural(transitions, 'step')} "
            f"({PLANNER})")


def live_sections(live: Sequence[tuple[DisaggregatedSet, list[SlicePlan]]]) -> list[tuple[str, PlanInputs, list[Step]]]:
    """A live plan (`rollout.plan.live_plans`) as titled sections: slices in the same place print
    one plan, so 100 slices rolling in step are one table."""
    sections: list[tuple[str, PlanInputs, list[Step]]] = []
    for ds, slices in live:
        per_slice = [(report.slice, (_slice_title(ds, report), inputs, tuple(steps)))
                     for report, inputs, steps in slices]
        for labels, (summary, inputs, steps) in grouped_by_slice(per_slice):
            sections.append((f"disaggregatedset/{ds.name} {labels}: {summary}", inputs, list(steps)))
    return sections


def _slice_title(ds: DisaggregatedSet, report: SliceReport) -> str:
    if not report.roles:  # no rollout: the slice runs (or converges to) one revision
        return f"no rollout under way ({report.phase} at revision {ds.revision})"
    title = report.phase.says(ds.revision, report.waiting_for, planned=True)
    notes = [f"at step {report.position[0]} of {report.position[1]}"] if report.position is not None else []
    if report.phase in (Phase.ROLLOUT_STARTED, Phase.ROLLING, Phase.WAITING):
        notes.append(REPLACED)
    return title + (f" ({'; '.join(notes)})" if notes else "")


# --- a set under a RolloutPolicy: the fleet (rollout/plan.py's FleetPlan) --------------------------


def format_live(live: Sequence[tuple[DisaggregatedSet, list[SlicePlan] | FleetPlan]], output: str,
                invocation: Invocation = GENERIC) -> str:
    """A live plan (`rollout.plan.live_plans`): each set under a policy as its fleet (the waves,
    each slice where it stands, the passes to the end), each other set as its slices' plans."""
    fleets = [plan for _, plan in live if not isinstance(plan, list)]
    unpaced = [(ds, plan) for ds, plan in live if isinstance(plan, list)]
    sections = live_sections(unpaced)
    if not fleets:
        return format_plans(sections, output)
    if output in ("json", "yaml"):
        document = {"fleets": [fleet_document(plan) for plan in fleets],
                    "plans": [{"title": title, **_document(inputs, steps)} for title, inputs, steps in sections]}
        return to_json(document) if output == "json" else to_yaml(document)
    parts = [fleet_text(plan, chart=output == "chart", invocation=invocation, wide=output == "wide") for plan in fleets]
    if sections:
        parts.append(format_plans(sections, output))
    return "\n".join(parts)


def _counts(replicas: Sequence[tuple[str, int]]) -> str:
    return ", ".join(f"{role} {count}" for role, count in replicas)


def _short(revision: str) -> str:
    return revision[:8]


def slice_words(line: SliceLine, plan: FleetPlan) -> str:
    """One slice's situation as its line says it (without the slice label)."""
    wave = f"wave {line.wave + 1}"
    at = f" ({_counts(line.replicas)})" if line.replicas else ""
    if line.situation == "held":
        why = "" if line.reason == "its wave has not started" else f": {line.reason}"
        return f"held at {_short(line.revision)}{at}, {wave}{why}"
    if line.situation == "starts":
        starts = "its rollback starts" if plan.rollback else "starts"
        return f"at {_short(line.revision)}{at}, {starts} next pass ({line.steps_left} steps), {wave}"
    if line.situation == "not created":
        return f"not created yet, {wave}"
    if line.situation in ("done", "steady", "rolled back"):
        return f"{line.situation} at {_short(line.revision)}{at}, {wave}"
    left = f", {line.steps_left} step{'' if line.steps_left == 1 else 's'} left" if line.steps_left else ""
    if line.situation == "rolling back":
        return f"rolling back to {_short(line.revision)} ({_counts(line.replicas)} so far){left}, {wave}"
    if line.situation == "rolling":
        return f"rolling to {_short(line.revision)} ({_counts(line.replicas)} so far){left}, {wave}"
    return f"{line.situation} at {_short(line.revision)}{at}{left}, {wave}: {line.reason}"


def _heading(plan: FleetPlan) -> str:
    decision = plan.decision
    if plan.rollback:
        moving = [s for s, line in enumerate(plan.slices) if line.situation in ("rolling back", "rolling", "starts",
                                                                                 "held mid-rollout")]
        which = slices_words(list(moving)) if moving else "no slice"
        aborted = decision.position.aborted
        why = ""
        if aborted is not None:
            why = f" (the rollout to {_short(plan.stable)} was aborted at wave {decision.wave + 1}"
            why += f": {aborted.reason})" if aborted.reason and aborted.reason != "rollout abort" else ")"
        return f"disaggregatedset/{plan.name}: rollback of {which} to {_short(plan.moves_to)}{why}"
    if decision.state.value == "AtRest":
        return f"disaggregatedset/{plan.name}: at rest at revision {_short(plan.moves_to)}: no rollout under way"
    source = f" from {_short(plan.stable)}" if plan.stable and plan.stable != plan.moves_to else ""
    return f"disaggregatedset/{plan.name}: rollout to revision {_short(plan.moves_to)}{source} ({REPLACED})"


def _stop_words(stop: GateStop, waves: Sequence[ResolvedWave]) -> str:
    where = "now" if stop.after == 0 else f"after pass {stop.after}"
    if stop.kind == "paused":
        return f"{where}: paused at wave {stop.wave + 1} (resume)"
    if stop.kind == "analysis":
        return f"{where}: wave {stop.wave + 1}'s analysis ({', '.join(stop.checks)})"
    if stop.duration is not None:
        return f"{where}: wave {stop.wave + 1}'s {format_duration(stop.duration)} soak"
    return f"{where}: wave {stop.wave + 1}'s pause (promote)"


def fleet_text(plan: FleetPlan, chart: bool = False, invocation: Invocation = GENERIC, wide: bool = False) -> str:
    """The fleet as text: its heading, the wave table, one line per run of slices in the same
    situation, the passes to the end and its stops; then each slice's steps (with `chart`,
    drawn per wave). Short at any size: lines grow with waves and situations, not slices."""
    decision = plan.decision
    policy = f"{len(decision.waves)} wave{'' if len(decision.waves) == 1 else 's'}, " + (
        "no limit on slices in flight" if decision.budget is None else f"at most {decision.budget} slices in flight")
    lines = [_heading(plan), f"  {policy}; now: {_now(plan)}"]
    rows = []
    for row in plan.waves:
        wave = row.wave
        if row.passes is not None:
            passes = str(row.passes[0]) if row.passes[0] == row.passes[1] else f"{row.passes[0]}-{row.passes[1]}"
        else:
            passes = "done" if all(plan.slices[s].situation in ("done", "steady") for s in wave.slices) and \
                wave.end > wave.start else "-"
        rows.append([wave.index + 1, slice_range(wave.start, wave.end), ",".join(map(str, row.steps_each)) or "-",
                     passes, gate_words(wave, invocation) if row is not plan.waves[-1] else "-"])
    lines += table(["WAVE", "SLICES", "STEPS EACH", "PASSES", "GATES AFTER IT"], rows, indent="  ", right=(0,))
    per_slice = [(s, slice_words(line, plan)) for s, line in enumerate(plan.slices)]
    lines += [f"  {label}: {words}" for label, words in grouped_by_slice(per_slice)]
    end = "the end of the rollback" if plan.rollback else "the end"
    if plan.passes == 0 and not plan.gates:
        lines.append("  nothing left to do")
    else:
        most = "" if plan.exact else "at most "
        lines.append(f"  to {end}: {most}{plan.passes} pass{'' if plan.passes == 1 else 'es'} of `kubectl disagg rollout step` "
                     f"({plural(plan.commits, 'commit')} through git, --gitops)")
    if plan.gates:
        lines.append("  stops: " + "; ".join(_stop_words(stop, decision.waves) for stop in plan.gates))
    text = "\n".join(lines) + "\n"
    # The steps of a slice: once per group of slices that take the same; drawn, once per wave.
    groups = [(f"wave {row.wave.index + 1}, ", [s for s in slices if s in row.wave.slices], inputs, steps)
              for row in plan.waves for slices, inputs, steps in plan.trajectories] if chart else \
        [("", list(slices), inputs, steps) for slices, inputs, steps in plan.trajectories]
    for in_wave, slices, inputs, steps in groups:
        if not slices:
            continue
        if plan.rollback:
            title = f"{in_wave}{slices_words(list(slices))}: the steps left of the rollback"
        else:
            title = f"{in_wave}{slices_words(list(slices))}: the steps of {'each slice' if len(slices) > 1 else 'the slice'}"
        body = format_charts([(None, inputs, steps)]) if chart else format_table(inputs, steps, wide)
        text += f"\n{title}\n{body}"
    return text


def _now(plan: FleetPlan) -> str:
    decision = plan.decision
    state = decision.state.value
    wave = f"wave {decision.wave + 1} of {len(decision.waves)}"
    if state == "AtGate" and decision.gate is not None:
        return f"{wave} is done and waits at its gate ({decision.gate.kind})"
    if state == "Paused":
        return f"paused at {wave}"
    if state == "Aborted":
        return f"aborted at {wave}"
    if state == "AtRest":
        return "complete"
    in_flight = len(decision.in_flight)
    return f"{wave}, {in_flight} slice{'' if in_flight == 1 else 's'} in flight"


def fleet_document(plan: FleetPlan) -> JsonObject:
    """-o json|yaml: the fleet as data (the same as its text)."""
    def line_document(s: int, line: SliceLine) -> JsonObject:
        document: JsonObject = {"slice": s, "situation": line.situation, "revision": line.revision,
                    "replicas": dict(line.replicas), "wave": line.wave + 1}
        if line.steps_left:
            document["stepsLeft"] = line.steps_left
        if line.reason:
            document["held"] = line.reason
        return document

    return {
        "set": plan.name, "revision": plan.moves_to, "stable": plan.stable, "rollback": plan.rollback,
        "phase": plan.decision.state.value, "wave": plan.decision.wave + 1,
        "maxSlicesInFlight": plan.decision.budget,
        "waves": [{"wave": row.wave.index + 1, "slices": list(row.wave.slices), "stepsEach": list(row.steps_each),
                   "passes": None if row.passes is None else list(row.passes),
                   "analysis": list(row.wave.analysis),
                   "pause": None if not row.wave.pause else ({"duration": format_duration(row.wave.duration)}
                                                             if row.wave.duration is not None else {})}
                  for row in plan.waves],
        "slices": [line_document(s, line) for s, line in enumerate(plan.slices)],
        "passes": plan.passes, "commits": plan.commits, "exact": plan.exact,
        "gates": [{"wave": stop.wave + 1, "kind": stop.kind, "afterPass": stop.after} for stop in plan.gates],
        "steps": [{"slices": list(slices), **_document(inputs, steps)} for slices, inputs, steps in plan.trajectories],
    }
