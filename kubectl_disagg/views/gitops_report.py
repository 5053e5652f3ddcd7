"""What a git-driven step looks like to people (the step summary, the pull request's
description) and to programs (-o yaml|json). Pure: a `GitopsStep` in, data or text out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubectl_disagg.rollout.git_step import GitopsStep, SetStep
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.core.api.durations import format_duration
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.planner import role_config
from kubectl_disagg.gitops.history import WrittenBack
from kubectl_disagg.gitops.position import is_rollback, numbered
from kubectl_disagg.core.controller.reconcile import Phase, SliceReport
from kubectl_disagg.manifests.writer import to_json, to_yaml
from kubectl_disagg.views.gitops_pr import pr_context, role_counts
from kubectl_disagg.views.templating import grouped_by_slice, render_template


def slice_views(ds: DisaggregatedSet, step: GitopsStep) -> list[dict[str, Any]]:
    """Per run of slices that say the same: the step, and each role's old/new before → after."""
    reports = {r.slice: r for r in step.passed.reconciliation.slices} if step.passed else {}
    items = []
    for slice_index in range(ds.slices):
        report = reports.get(slice_index)
        before, after = role_counts(ds, step.before, slice_index), role_counts(ds, step.state, slice_index)
        roles = []
        for role in ds.roles:
            config = role_config(role)
            roles.append({"name": role.name, "target": role.replicas, "external": role.external,
                          "surge": config.surge, "unavailable": config.unavailable,
                          "old_before": before.get(role.name, (0, 0))[0], "new_before": before.get(role.name, (0, 0))[1],
                          "old_after": after.get(role.name, (0, 0))[0], "new_after": after.get(role.name, (0, 0))[1]})
        view = {
            "phase": str(report.phase) if report else "not stepped",
            "position": _position(ds, step, report),
            "step_kind": report.step_kind if report else None,
            "roles": roles,
            "waiting_for": list(report.waiting_for) if report else [],
        }
        items.append((slice_index, view))
    return [{"label": label, **view} for label, view in grouped_by_slice(items)]


def context(ds: DisaggregatedSet, namespace: str, step: GitopsStep, state_file: str) -> dict[str, Any]:
    views = slice_views(ds, step)
    return {
        "name": ds.name, "namespace": namespace, "revision": ds.revision, "outcome": str(step.outcome),
        "state_file": state_file, "reasons": list(step.reasons), "slices": views,
        "warnings": list(step.passed.reconciliation.warnings) if step.passed else [],
    }


def format_summary(ds: DisaggregatedSet, namespace: str, step: GitopsStep, state_file: str) -> str:
    return render_template("gitops_step.txt.j2", step=context(ds, namespace, step, state_file))


def format_pr_description(ds: DisaggregatedSet, namespace: str, step: GitopsStep, state_file: str,
                          returning: WrittenBack | None = None) -> str:
    """The step's pull request: its title line, a blank line, the Markdown body (a commit
    message's shape). views/gitops_pr.py builds what it says; `returning`: who wrote the set's
    revision back (`rollout undo`, a git revert), when one did."""
    return render_template("gitops_pr.md.j2", pr=pr_context(ds, namespace, step, state_file, returning))


def to_document(ds: DisaggregatedSet, namespace: str, step: GitopsStep, state_file: str) -> dict[str, Any]:
    """The -o yaml|json shape of a git-driven step."""
    out: dict[str, Any] = {"name": ds.name, "namespace": namespace, "revision": ds.revision,
                           "outcome": str(step.outcome), "stateFile": state_file, "reasons": list(step.reasons)}
    out["slices"] = [{"slices": view["label"], "phase": view["phase"], "position": view["position"],
                      "roles": [{"name": r["name"], "old": [r["old_before"], r["old_after"]],
                                 "new": [r["new_before"], r["new_after"]]} for r in view["roles"]]}
                     for view in slice_views(ds, step)]
    out["written"] = step.outcome == Outcome.ADVANCED
    return out


def format_results(results: Sequence[SetStep], output: str) -> str:
    """Every set's step of a run (`rollout.git_step.SetStep`s): summaries, or one YAML/JSON document
    (a list under `items` for several sets)."""
    if output == "text":
        return "".join(format_summary(r.ds, r.namespace, r.step, r.path) for r in results)
    documents = [to_document(r.ds, r.namespace, r.step, r.path) for r in results]
    document = documents[0] if len(documents) == 1 else {"items": documents}
    return to_yaml(document) if output == "yaml" else to_json(document)


def timed_out(results: Sequence[SetStep], timeout: float | None) -> list[str]:
    """The sets whose --wait ran out of `timeout`, one line each (stderr)."""
    if timeout is None:  # no --timeout: the wait has no deadline to run out of
        return []
    return [f"timed out after {format_duration(timeout)} waiting for disaggregatedset/{r.ds.name} in {r.namespace}; "
            "nothing written" for r in results if r.timed_out]


def format_pr_descriptions(results: Sequence[SetStep]) -> str:
    """The pull request's description: every set's step, in Markdown."""
    return "\n".join(format_pr_description(r.ds, r.namespace, r.step, r.path, r.returning) for r in results)


SUBJECT_MOST = 72  # a commit subject's length, as git's own tools and the project's commit-msg hook keep it
# Where a long title may be cut, strongest first: "where — why", "step · wave · slices", "a; b", "a, b".
SUBJECT_BREAKS = (" — ", "; ", " · ", ", ")


def commit_subject(title: str) -> tuple[str, str]:
    """A title as a commit subject of at most 72 characters, and what did not fit (empty when
    it all did): cut after the last whole part that fits, at the strongest break that leaves
    one; else after the last whole word, ending in "…". Every commit subject goes through here."""
    if len(title) <= SUBJECT_MOST:
        return title, ""
    for mark in SUBJECT_BREAKS:
        head = title[:max(title.rfind(mark, 0, SUBJECT_MOST + 1), 0)].rstrip(" :")
        if head:
            return head, title
    cut = title.rfind(" ", 0, SUBJECT_MOST)
    head = title[:cut].rstrip(" :,;") if cut > 0 else ""
    return (head or title[:SUBJECT_MOST - 1]) + "…", title


def commit_message(descriptions: list[str]) -> str:
    """The commit of `--commit`: one step's pull request text (title line, blank line, body);
    several sets' under one subject naming them. A title too long for a subject is cut
    (`commit_subject`) and stays whole as the body's first line."""
    titles = [text.split("\n", 1)[0] for text in descriptions]
    if len(descriptions) == 1:
        subject, whole = commit_subject(titles[0])
        return descriptions[0] if not whole else f"{subject}\n\n{descriptions[0]}"
    subject = "; ".join(titles)
    if len(subject) > SUBJECT_MOST:
        subject = f"rollout steps of {len(titles)} sets: " + ", ".join(t.split(":", 1)[0] for t in titles)
    return commit_subject(subject)[0] + "\n\n" + "\n".join(descriptions)


def _position(ds: DisaggregatedSet, step: GitopsStep, report: SliceReport | None) -> str | None:
    """`i/N` of the step on its slice's plan (a rollback's numbered from where it stood)."""
    if not report or not report.position:
        return None
    current = report.position[0] + (1 if report.phase == Phase.ROLLING else 0)
    plan = step.view.plans.get(report.slice)  # the step's plan of the slice: reconcile's
    if report.plan is None or not is_rollback(ds, step.before) or plan is None or plan.steps is None:
        return f"{current}/{report.position[1]}"
    return "{}/{}".format(*numbered(ds, step.before, list(plan.steps), current))
