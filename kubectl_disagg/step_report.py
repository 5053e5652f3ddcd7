"""What a pass looks like to people and to programs: the view of a `stepper.Pass`.

`to_document` is the `-o yaml|json` shape; `format_text` lays the same view out through
templates/step.txt.j2 (the report, or with `progress` one line per slice). Pure.
"""

from __future__ import annotations

from typing import Any

from kubectl_disagg.planner import format_position
from kubectl_disagg.reconcile import Create
from kubectl_disagg.stepper import Pass, PlannedAction


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


def format_text(step: Pass, *, only_changed: bool = False, progress: bool = False) -> str:
    views = [{**view, "actions": [{"text": planned.action.describe(), "detail": (planned.detail or "").rstrip("\n")}
                                  for planned in view["actions"]]} for view in slice_views(step)]
    context = {
        "name": step.ds.name, "namespace": step.namespace, "revision": step.ds.revision,
        "slices": step.ds.slices, "dry_run": step.dry_run, "refused": bool(step.refusal),
        "planned": len(step.reconciliation.actions), "done": len(step.done), "complete": step.complete,
        "only_changed": only_changed, "views": views,
    }
    from kubectl_disagg.templating import render_template  # text output only: yaml and json skip Jinja2

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
        entry["actions"] = [_action_document(planned) for planned in view["actions"]]
        slices.append(entry)
    return {
        "name": step.ds.name,
        "namespace": step.namespace,
        "revision": step.ds.revision,
        "dryRun": step.dry_run,
        "complete": step.complete,
        "refused": list(step.refusal),
        "slices": slices,
        "warnings": list(step.reconciliation.warnings),
    }


def _action_document(planned: PlannedAction) -> dict:
    action = planned.action
    doc: dict[str, Any] = {"action": action.describe(), "kind": action.kind, "name": action.name}
    if planned.detail is not None:  # a dry run: the object a create would make, the diff of a change
        if isinstance(action, Create):
            doc["object"] = dict(action.object)
        else:
            doc["diff"] = planned.detail
    if planned.patch is not None:
        doc["patch"] = planned.patch
    return doc
