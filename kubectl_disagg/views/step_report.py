"""What a pass looks like to people and to programs: the view of a `stepper.Pass`.

`to_document` is the `-o yaml|json` shape; `format_text` lays the same view out through
templates/step.txt.j2 (the report, slices alike on one line; with `progress` the fleet's one
progress line, views/fleet.py), each planned action of
a dry run drawn by views/action_detail.py; `refusal_lines` says why the API server refused a write
of a server dry run (from the answer the pass kept). Pure.
"""

from __future__ import annotations

from typing import Any, TypedDict

from kubectl_disagg.core.delivery.fleet import fleet_of, situations
from kubectl_disagg.core.controller.planner import format_position
from kubectl_disagg.core.api.naming import slices_words
from kubectl_disagg.core.controller.reconcile import Create, Phase, SliceReport
from kubectl_disagg.core.controller.server_refusals import refusal_problems
from kubectl_disagg.rollout.stepper import SERVER, Pass, PlannedAction
from kubectl_disagg.views.action_detail import action_detail, action_patch
from kubectl_disagg.views.fleet import progress_line, slice_sentence
from kubectl_disagg.views.templating import render_template

ACCEPTED, REFUSED = "accepted", "refused"  # a server dry run's verdict on one write
INVALID_OBJECT_CODES = (400, 422)  # the answers that name fields of the object (strict fields, schema)


class SliceView(TypedDict):
    """A slice of a pass: its number, its report (None for a slice being removed), its actions."""

    slice: int
    report: SliceReport | None
    actions: list[PlannedAction]


def slice_views(step: Pass) -> list[SliceView]:
    """Per slice: its report (None for a slice being removed) and the actions to list."""
    shown = step.shown()
    views: list[SliceView] = [{"slice": report.slice, "report": report,
              "actions": [planned for planned in shown if planned.slice == report.slice]}
             for report in step.reconciliation.slices]
    removed = sorted({planned.slice for planned in shown if planned.slice >= step.ds.slices})
    views += [{"slice": index, "report": None, "actions": [planned for planned in shown if planned.slice == index]}
              for index in removed]
    return views


def verdict(step: Pass, planned: PlannedAction) -> str | None:
    """ACCEPTED or REFUSED in a server dry run (its writes were judged), else None."""
    if step.dry_run != SERVER:
        return None
    return REFUSED if planned.refusal is not None else ACCEPTED


def refusal_lines(step: Pass, planned: PlannedAction) -> list[str]:
    """Why the API server refused a write of a server dry run, one line per cause.

    An object a create would make that the server finds invalid is traced back to the set's
    document (`FILE:LINE: spec.roles[0]...: refused by the API server (...)`, as `validate
    --server` does); any other refusal is the error's own line (it names the object).
    """
    if planned.refusal is None:
        return []
    answer = planned.answer
    if isinstance(planned.action, Create) and answer and answer.get("code") in INVALID_OBJECT_CODES:
        return [str(problem) for problem in refusal_problems(step.ds, dict(planned.action.object), dict(answer))]
    return planned.refusal.lines()


def format_text(step: Pass, *, only_changed: bool = False, progress: bool = False) -> str:
    """The report of a pass: its header, then one line per situation (slices alike folded into
    one, views/fleet.py), each slice that changed with its actions. `only_changed` (each pass of
    --until-complete): no header, only the slices that changed, their actions counted, not
    listed. `progress`: the one progress line of the fleet (views/fleet.py)."""
    fleet = fleet_of(step.ds, step.reconciliation)
    if progress:
        return progress_line(fleet, waiting(step)) + "\n"
    views: list[dict[str, Any]] = []  # the template's rows (a slice view, its sentence, its actions' texts)
    for sliced in slice_views(step):
        report = sliced["report"]
        sentence = (f"removed (the set has {step.ds.slices} slice{'s' if step.ds.slices != 1 else ''})"
                    if report is None else slice_sentence(report, fleet))
        views.append({**sliced, "sentence": sentence, "actions": [
            {"text": planned.action.describe(), "detail": (action_detail(planned) or "").rstrip("\n"),
             "verdict": verdict(step, planned), "refusal": refusal_lines(step, planned)}
            for planned in sliced["actions"]]})
    if only_changed:  # folded: slices that did the same, one line, their changes counted
        changed = [view for view in views if view["actions"]]
        keys = [(view["sentence"], len(view["actions"])) for view in changed]
        groups = [{"slices": slices_words([changed[i]["slice"] for i in members]), "sentence": sentence,
                   "changes": count, "each": len(members) > 1, "actions": []}
                  for members, (sentence, count) in situations(keys)]
    else:  # a slice that changed is listed with its actions; the others are folded
        groups, quiet = [], [view for view in views if not view["actions"]]
        folded = {members[0]: members for members, _ in situations([view["sentence"] for view in quiet])}
        for view in views:
            if view["actions"]:
                groups.append({"slices": f"slice {view['slice']}", "sentence": view["sentence"],
                               "changes": 0, "actions": view["actions"]})
            elif (index := quiet.index(view)) in folded:
                groups.append({"slices": slices_words([quiet[i]["slice"] for i in folded[index]]),
                               "sentence": view["sentence"], "changes": 0, "actions": []})
    context = {
        "name": step.ds.name, "namespace": step.namespace, "revision": step.ds.revision,
        "slices": step.ds.slices, "dry_run": step.dry_run, "refused": bool(step.refusal),
        "refused_writes": len(step.refused_writes),
        "planned": len(step.reconciliation.actions), "done": len(step.done), "complete": step.complete,
        "only_changed": only_changed, "groups": groups,
    }
    return render_template("step.txt.j2", step=context)


def waiting(step: Pass) -> list[tuple[tuple[int, ...], str]]:
    """The slices that wait, with what for, those alike folded (for the progress line)."""
    reports = [report for report in step.reconciliation.slices if report.phase in (Phase.WAITING, Phase.STALLED)]
    said = situations(["; ".join(report.waiting_for) for report in reports])
    return [(tuple(reports[i].slice for i in members), what) for members, what in said]


def to_document(step: Pass) -> dict[str, Any]:
    """The `-o yaml|json` shape of a pass."""
    slices = []
    for view in slice_views(step):
        report = view["report"]
        entry: dict[str, Any] = {"slice": view["slice"], "phase": report.phase if report else "removed"}
        if report is not None:
            entry["revisions"] = {rev: dict(roles) for rev, roles in report.revisions.items()}
            entry["waitingFor"] = [*report.waiting_for, *report.blocked]
            if report.roles:
                entry["rollout"] = {
                    "roles": list(report.roles), "old": list(report.old), "new": list(report.new),
                    "position": format_position(report.position), "stepKind": report.step_kind,
                }
        entry["actions"] = [_action_document(step, planned) for planned in view["actions"]]
        slices.append(entry)
    return {
        "name": step.ds.name,
        "namespace": step.namespace,
        "revision": step.ds.revision,
        "dryRun": bool(step.dry_run),
        "dryRunStrategy": step.dry_run or "none",
        "complete": step.complete,
        "refused": list(step.refusal),
        "slices": slices,
        "warnings": list(step.reconciliation.warnings),
    }


def _action_document(step: Pass, planned: PlannedAction) -> dict[str, Any]:
    action = planned.action
    doc: dict[str, Any] = {"action": action.describe(), "kind": action.kind, "name": action.name}
    judged = verdict(step, planned)
    if judged is not None:  # a server dry run: what the API server said of this write
        doc["verdict"] = judged
        if judged == REFUSED:
            doc["refusal"] = refusal_lines(step, planned)
    if planned.after is not None:  # a dry run: the object a create would make, the diff of a change
        if isinstance(action, Create):
            doc["object"] = dict(action.object)
        else:
            doc["diff"] = action_detail(planned)
    patch = action_patch(planned)
    if patch is not None:
        doc["patch"] = patch
    return doc
