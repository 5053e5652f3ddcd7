"""What a pass looks like to people and to programs: the view of a `stepper.Pass`.

`to_document` is the `-o yaml|json` shape; `format_text` lays the same view out through
templates/step.txt.j2 (the report, or with `progress` one line per slice), each planned action of
a dry run drawn by views/action_detail.py; `refusal_lines` says why the API server refused a write
of a server dry run (from the answer the pass kept). Pure.
"""

from __future__ import annotations

from typing import Any

from kubectl_disagg.core.planner import format_position
from kubectl_disagg.core.reconcile import Create
from kubectl_disagg.core.server_refusals import refusal_problems
from kubectl_disagg.rollout.stepper import SERVER, Pass, PlannedAction
from kubectl_disagg.views.action_detail import action_detail, action_patch
from kubectl_disagg.views.templating import render_template

ACCEPTED, REFUSED = "accepted", "refused"  # a server dry run's verdict on one write
INVALID_OBJECT_CODES = (400, 422)  # the answers that name fields of the object (strict fields, schema)


def slice_views(step: Pass) -> list[dict]:
    """Per slice: its report (None for a slice being removed) and the actions to list."""
    shown = step.shown()
    views = [{"slice": report.slice, "report": report,
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
    views = [{**view, "actions": [{"text": planned.action.describe(), "detail": (action_detail(planned) or "").rstrip("\n"),
                                   "verdict": verdict(step, planned), "refusal": refusal_lines(step, planned)}
                                  for planned in view["actions"]]} for view in slice_views(step)]
    context = {
        "name": step.ds.name, "namespace": step.namespace, "revision": step.ds.revision,
        "slices": step.ds.slices, "dry_run": step.dry_run, "refused": bool(step.refusal),
        "refused_writes": len(step.refused_writes),
        "planned": len(step.reconciliation.actions), "done": len(step.done), "complete": step.complete,
        "only_changed": only_changed, "views": views,
    }
    return render_template("step.txt.j2", step=context, progress=progress)


def to_document(step: Pass) -> dict:
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


def _action_document(step: Pass, planned: PlannedAction) -> dict:
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
