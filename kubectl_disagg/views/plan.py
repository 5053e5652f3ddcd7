"""What `rollout plan` prints: a trajectory as a table (templates/plan.txt.j2) or as a document
(-o yaml|json); the titles of a live plan's sections. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_disagg.core.plan_inputs import plural, vector
from kubectl_disagg.core.planner import PlanInputs, Step
from kubectl_disagg.manifests.writer import to_json, to_yaml
from kubectl_disagg.views.plan_chart import format_charts
from kubectl_disagg.views.templating import grouped_by_slice, render_template, table
from kubectl_disagg.views.waves import waves_document, waves_lines

TOTAL = "TOTAL (OLD+NEW/TARGET+SURGE)"  # old+new per role against target+surge, the ceiling a scale-up respects


def format_plans(plans: Sequence[tuple[str | None, PlanInputs, Sequence[Step]]], output: str,
                 paced: Sequence = ()) -> str:
    """One plan prints as itself; several (sets, slices) as titled sections or a list. `paced`:
    the sets with a RolloutPolicy, whose waves and gates come first (views/waves.py)."""
    if paced and output in ("table", "chart"):
        lines = [line for ds in paced for line in waves_lines(ds, chart=output == "chart")]
        return "\n".join(lines) + "\n" + format_plans(plans, output)
    if paced:
        document = {"policies": [waves_document(ds) for ds in paced],
                    "plans": [{"title": title, **_document(inputs, steps)} for title, inputs, steps in plans]}
        return to_json(document) if output == "json" else to_yaml(document)
    if output == "chart":
        return format_charts(plans)
    if len(plans) == 1 and (plans[0][0] is None or output != "table"):
        _, inputs, steps = plans[0]
        return format_plan(inputs, steps, output)
    if output == "table":
        return "\n".join(f"{title}\n{format_table(inputs, steps)}" for title, inputs, steps in plans)
    document = {"plans": [{"title": title, **_document(inputs, steps)} for title, inputs, steps in plans]}
    return to_json(document) if output == "json" else to_yaml(document)


def format_plan(inputs: PlanInputs, steps: Sequence[Step], output: str) -> str:
    if output == "table":
        return format_table(inputs, steps)
    document = _document(inputs, steps)
    return to_json(document) if output == "json" else to_yaml(document)


def _document(inputs: PlanInputs, steps: Sequence[Step]) -> dict:
    return {
        "roles": list(inputs.roles),
        "steps": [{"old": list(step.old), "new": list(step.new)} for step in steps],
    }


def format_table(inputs: PlanInputs, steps: Sequence[Step]) -> str:
    """The plan as an aligned table under its summary, laid out by templates/plan.txt.j2."""
    limits = [tgt + cfg.surge for tgt, cfg in zip(inputs.target, inputs.configs)]
    # Each role's total is padded to its own widest value, so roles line up down the table.
    totals = table(None, [[f"{name} {old + new}/{limit}" for name, old, new, limit
                           in zip(inputs.roles, step.old, step.new, limits)] for step in steps])
    rows = [[index, step.kind, vector(step.old), vector(step.new), total]
            for index, (step, total) in enumerate(zip(steps, totals))]
    return render_template("plan.txt.j2", summary=_summary(inputs, len(steps) - 1),
                           lines=table(["STEP", "KIND", "OLD", "NEW", TOTAL], rows, right=(0,)))


def _summary(inputs: PlanInputs, transitions: int) -> str:
    surges = vector(cfg.surge for cfg in inputs.configs)
    unavailables = vector(cfg.unavailable for cfg in inputs.configs)
    return (f"Roles {vector(inputs.roles)} from {vector(inputs.initial_old)} to {vector(inputs.target)} "
            f"(max surge {surges}; max unavailable {unavailables}): {plural(transitions, 'step')}")


def live_sections(live) -> list[tuple[str, PlanInputs, list[Step]]]:
    """A live plan (`rollout.plan.live_plans`) as titled sections: slices in the same place print
    one plan, so 100 slices rolling in step are one table."""
    sections = []
    for ds, slices in live:
        per_slice = [(report.slice, (_slice_title(ds, report), inputs, tuple(steps)))
                     for report, inputs, steps in slices]
        for labels, (summary, inputs, steps) in grouped_by_slice(per_slice):
            sections.append((f"disaggregatedset/{ds.name} {labels}: {summary}", inputs, list(steps)))
    return sections


def _slice_title(ds, report) -> str:
    if not report.roles:  # no rollout: the slice runs (or converges to) one revision
        return f"no rollout under way ({report.phase} at revision {ds.revision})"
    title = report.phase.says(ds.revision, report.waiting_for, planned=True)
    if report.position is not None:
        title += f" (at step {report.position[0]} of {report.position[1]})"
    return title
