"""The pull request of a git-driven step, as a reviewer reads it. Pure: a `GitopsStep` and the
`StepView` it carries in (gitops/step_view.py: what took the planner or a render to know), the
context of templates/gitops_pr.md.j2 out (and the commit's title line). Neither plans nor renders.

What a reviewer needs at a glance: a title fit for a commit subject; what the rollout is for
(the template difference between the revisions); where this step sits in the whole plan (a
chart per role, the same numbers in a table); per slice and role the counts before → after
against target + surge and the availability floor, with what was observed ready when the step
was written; and why this step is safe, said with this step's numbers. A step that removes a
revision names it and what prune deletes; a rollback says it is one; the first state of a set
is its initial state.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.api.naming import slices_words
from kubectl_disagg.core.controller.planner import StepKind, role_config
from kubectl_disagg.core.controller.reconcile import Phase, SliceReport
from kubectl_disagg.gitops.history import WrittenBack
from kubectl_disagg.gitops.position import deployed_order, is_rollback, rollback_start
from kubectl_disagg.gitops.state import RolloutState, record_from_set
from kubectl_disagg.rollout.git_step import GitopsStep
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.gitops.step_view import ObservedLWS, SlicePlan
from kubectl_disagg.gitops.waves import opened_wave
from kubectl_disagg.core.delivery.policy import resolve_waves
from kubectl_disagg.views.analysis_verdicts import recorded_verdicts, verdicts_markdown
from kubectl_disagg.views import plan_chart, template_diff
from kubectl_disagg.views.templating import grouped_by_slice
from kubectl_disagg.views.waves import gate_words, slice_range
from kubectl_disagg.core.delivery.fleet import Fleet, fleet_of
from kubectl_disagg.core.controller.reconcile import Rollback
from kubectl_disagg.views.stops import abort_sentence, why_back

INITIAL, ADOPTED, ROLLING, REMOVAL, RECORD, NOT_ADVANCED = (
    "initial", "adopted", "rolling", "removal", "record", "not advanced")


def written_back_words(back: WrittenBack | None) -> str:
    """Who wrote the set's revision back, as the pull request names it (empty: nobody did)."""
    if back is None:
        return ""
    return f"the revert of commit `{back.reverts[:12]}`" if back.reverts else "`kubectl disagg rollout undo`"


def pr_context(ds: DisaggregatedSet, namespace: str, step: GitopsStep, state_file: str,
               returning: WrittenBack | None = None) -> dict[str, Any]:
    """Everything templates/gitops_pr.md.j2 prints, computed here. `returning`: who wrote the
    set's revision back (`rollout undo`, a git revert): a rollback to it, paced as any other."""
    before, after = step.before, step.state
    removed_revisions = [rev for rev in deployed_order(before) if rev not in deployed_order(after)]
    reports = {r.slice: r for r in step.passed.reconciliation.slices} if step.passed else {}
    rollback = is_rollback(ds, before)
    fleet = fleet_of(ds, step.passed.reconciliation) if step.passed else None
    # A RolloutPolicy's abort takes slices back while the set still names the revision it
    # aborted: the step moves toward the stable one, so "new" is the stable revision here.
    aborted = fleet.back if fleet is not None and fleet.back is not None and not rollback else None
    toward = aborted.stable if aborted is not None else ds.revision
    kind = _kind(step, removed_revisions, reports)
    groups = _groups(ds, step, reports, removed_revisions, rollback, toward)
    old_records = [before.revisions[rev] for rev in deployed_order(before) if rev != toward] if before else []
    new_record = (before.revisions.get(toward) if before else None) or record_from_set(ds)
    context: dict[str, Any] = {
        "kind": kind, "rollback": rollback, "returning": written_back_words(returning) if not rollback and aborted is None else "",
        "name": ds.name, "namespace": namespace, "revision": toward,
        "aborted": {"revision": ds.revision, "why": why_back(aborted)} if aborted is not None else None,
        "outcome": str(step.outcome), "reasons": list(step.reasons), "state_file": state_file,
        "old_revisions": [rev for rev in deployed_order(before) if rev != toward],
        "changes": template_diff.changes(old_records, new_record) if old_records else None,
        "groups": groups,
        "removal": ({"revisions": removed_revisions, "lws": list(step.view.pruned_lws),
                     "services": list(step.view.pruned_services)} if removed_revisions else None),
        "warnings": list(step.passed.reconciliation.warnings) if step.passed else [],
        "initial": _initial(ds, after) if kind in (INITIAL, ADOPTED) and after is not None else None,
        "wave": _opened_wave(ds, before, after),
        "commits": after.commits if after is not None else 0,
        "position_moved": before is not None and after is not None and before.position != after.position,
        "fleet": fleet,
    }
    context["moving"] = [g for g in groups if g["moves"]]
    # The whole plan's charts and the template diff: where a reviewer decides (the first step of
    # a rollout or rollback, a wave's start, a step that is not a planner step); other steps say
    # where to find them, so a mid-rollout description stays short.
    context["full"] = kind not in (ROLLING, RECORD) or context["commits"] <= 1 or context["wave"] is not None
    if not context["full"]:
        for group in groups:
            if group["chart"]:
                group["chart"] = {**group["chart"], "mermaid": []}
    context["moved_words"] = slices_words([s for g in context["moving"] for s in _slice_numbers(g["label"])]) \
        if context["moving"] else ""
    context["added_records"] = [rev for rev in (after.revisions if after else {})
                                if before is not None and rev not in before.revisions]
    context["still"] = [g for g in groups if not g["moves"]]
    verdicts = recorded_verdicts(before.position if before else None, after.position if after else None)
    context["analysis"] = verdicts_markdown(verdicts)
    title = title_line(context)
    context["title"] = title + "".join(f"; analysis after wave {v['wave']} {v['phase']}" for v in verdicts
                                       if "aborted: analysis" not in title)
    if context["wave"] is not None and aborted is None and not rollback:
        # a decision for a person to review (docs/gitops.md, the workflow with a bot)
        context["title"] += f"; wave {context['wave']['number']} starts"
    context["old_left"] = sum(role["old_after"] for group in groups for role in group["roles"])
    return context


def _opened_wave(ds: DisaggregatedSet, before: RolloutState | None, after: RolloutState | None
                 ) -> dict[str, int | str] | None:
    """The wave this step opens under the set's RolloutPolicy, in words (None: it opens none)."""
    wave = opened_wave(ds, before, after)
    if wave is None:
        return None
    last = wave.index == len(resolve_waves(ds.policy, ds.slices)) - 1
    return {"number": wave.index + 1, "of": len(resolve_waves(ds.policy, ds.slices)),
            "slices": slice_range(wave.start, wave.end), "gates": "" if last else gate_words(wave)}


def title_line(context: dict[str, Any]) -> str:
    """The commit subject: `llama: rollout to 7b04d5c1, step 5 · wave 2 of 3 · slices 1-3 · 4 of 12
    slices done`, numbered by the state's count of commits toward its revision; a rollback in
    the words of an abort (views/fleet.py `abort_sentence`)."""
    name, revision, kind = context["name"], context["revision"], context["kind"]
    verb = "rollback" if context["rollback"] or context.get("returning") else "rollout"
    if kind == INITIAL:
        return f"{name}: initial state at {revision}"
    if kind == ADOPTED:
        return f"{name}: adopt the live state at {revision}"
    step = f", step {context['commits']}" if context.get("commits") else ""
    fleet: Fleet | None = context.get("fleet")
    back = fleet.back if fleet is not None and fleet.rollback else None
    if back is None and context["rollback"]:
        back = Rollback(revision, revert=True)
    target = back.stable if back is not None else revision
    if kind == REMOVAL:
        removal = f", remove {', '.join(context['removal']['revisions'])}"
        if back is None:
            return f"{name}: {verb} to {target}{step}{removal}"
        going = [s for g in context["groups"] if g["removed"] for s in _slice_numbers(g["label"])]
        where, _, why = abort_sentence(going, target, back).partition(" — ")
        return f"{name}: {where}{step}{removal} — {why}"
    moved = [s for g in context["groups"] if g["moves"] for s in _slice_numbers(g["label"])]
    if back is not None and kind in (ROLLING, RECORD):
        going = moved or (list(fleet.in_flight) if fleet is not None else [])
        where, _, why = abort_sentence(going, target, back).partition(" — ")
        return f"{name}: {where}{step} — {why}"
    if kind == ROLLING or (kind == RECORD and moved and fleet is not None and fleet.waves):
        return f"{name}: {verb} to {revision}{step}" + "".join(f" · {part}" for part in _fleet_words(fleet, moved))
    stands = context["position_moved"] or any(r.startswith("records where the rollout stands")
                                              for r in context["reasons"])
    if kind == RECORD and fleet is not None and fleet.waves and stands:
        # a gate reached: where the rollout stops ("wave 2 is paused"), the decision it waits for
        stop = "".join(f"; {why.split(':', 1)[0]}" for why in fleet.stopped[:1])
        return f"{name}: {verb} to {revision}{step}" + "".join(f" · {part}" for part in _fleet_words(fleet, [])) + stop
    if kind == RECORD:
        return f"{name}: record the replicas and slices running at {revision}"
    return f"{name}: {context['outcome']}, nothing to commit"


def _fleet_words(fleet: Fleet | None, moved: list[int]) -> list[str]:
    """`wave 2 of 3`, `slices 1-3` (those this commit moves), `5 of 12 slices done`; a set of one
    slice names none."""
    out = []
    if fleet is not None and fleet.waves:
        out.append(f"wave {fleet.wave + 1} of {len(fleet.waves)}")
    if moved and (fleet is None or fleet.slices > 1):
        out.append(slices_words(moved))
    if fleet is not None and fleet.slices > 1:
        out.append(f"{len(fleet.done)} of {fleet.slices} slices done")
    return out


def _slice_numbers(label: str) -> list[int]:
    """The slices of a group's label (`slice 3`, `slices 0-2, 5`)."""
    out: list[int] = []
    for part in label.split(" ", 1)[1].split(", "):
        first, _, last = part.partition("-")
        out.extend(range(int(first), int(last or first) + 1))
    return out


def _kind(step: GitopsStep, removed: list[str], reports: dict[int, SliceReport]) -> str:
    if step.outcome != Outcome.ADVANCED:
        return NOT_ADVANCED
    if step.before is None:
        return ADOPTED if any(r.startswith("adopted") for r in step.reasons) else INITIAL
    if removed:
        return REMOVAL
    if any(r.phase == Phase.ROLLING for r in reports.values()):
        return ROLLING
    return RECORD


def _initial(ds: DisaggregatedSet, state: RolloutState) -> dict[str, Any]:
    slices = [(s, tuple((rev, tuple(counts.items())) for rev, counts in state.deployed(s).items()))
              for s in sorted(state.replicas)]
    return {"slices": [{"label": label, "revisions": [{"revision": rev, "replicas": dict(counts)}
                                                      for rev, counts in deployed]}
                       for label, deployed in grouped_by_slice(slices)]}


# --- per slice ------------------------------------------------------------------------------------


def role_counts(ds: DisaggregatedSet, state: RolloutState | None, slice_index: int,
                toward: str | None = None) -> dict[str, tuple[int, int]]:
    """role → (old, new) replicas in one slice of a state: new is the revision the step moves
    toward (`toward`: the stable one of a policy abort; by default the set's revision)."""
    new = toward or ds.revision
    counts: dict[str, list[int]] = {role: [0, 0] for role in ds.role_names}
    for revision, roles in (state.deployed(slice_index) if state else {}).items():
        for role, n in roles.items():
            counts.setdefault(role, [0, 0])[0 if revision != new else 1] += n
    return {role: (old, new) for role, (old, new) in counts.items()}


def _observed(step: GitopsStep, slice_index: int) -> tuple[ObservedLWS, ...]:
    """The slice's LWS as the step read them (none when no pass ran)."""
    return step.view.observed.get(slice_index, ()) if step.passed else ()


def _slice_view(ds: DisaggregatedSet, step: GitopsStep, report: SliceReport | None, slice_index: int,
                removed: list[str], toward: str) -> dict[str, Any]:
    before, after = role_counts(ds, step.before, slice_index, toward), role_counts(ds, step.state, slice_index, toward)
    plan: SlicePlan | None = step.view.plans.get(slice_index) if report is not None else None
    inputs = plan.inputs if plan is not None else None
    observed = _observed(step, slice_index)
    roles = []
    for index, role in enumerate(ds.roles):
        config = role_config(role)
        old_before, new_before = before.get(role.name, (0, 0))
        old_after, new_after = after.get(role.name, (0, 0))
        mine = [o for o in observed if o.role == role.name]
        old_ready = sum(o.ready for o in mine if o.revision != toward)
        new_ready = sum(o.ready for o in mine if o.revision == toward)
        started = inputs.initial_old[index] if inputs is not None and index < len(inputs.initial_old) else None
        roles.append({
            "name": role.name, "target": role.replicas, "external": role.external,
            "surge": config.surge, "unavailable": config.unavailable,
            "ceiling": role.replicas + config.surge,
            "floor": (role.replicas - config.unavailable) if started is None or started >= role.replicas else None,
            "started": started,
            "old_before": old_before, "new_before": new_before, "old_after": old_after, "new_after": new_after,
            "old_ready": old_ready, "new_ready": new_ready,
            "old_observed": sum(o.replicas for o in mine if o.revision != toward),
            "new_observed": sum(o.replicas for o in mine if o.revision == toward),
            # ready replicas this step keeps serving: old ones it leaves, new ones already ready
            "kept_ready": min(old_after, old_ready) + min(new_after, new_ready),
        })
    removed_here = [rev for rev in removed if step.before and rev in step.before.deployed(slice_index)]
    return {
        "phase": str(report.phase) if report else "not stepped",
        "step_kind": report.step_kind if report else None,
        "plan": plan,
        "roles": roles,
        "groups_after": [(rev, dict(counts)) for rev, counts in (step.state.deployed(slice_index).items()
                                                                 if step.state else ())],
        "removed": removed_here,
        "changed": {rev: dict(c) for rev, c in (step.before.deployed(slice_index).items() if step.before else ())}
        != {rev: dict(c) for rev, c in (step.state.deployed(slice_index).items() if step.state else ())},
        "waiting_for": list(report.waiting_for) if report else [],
        "observed_counts": [(o.revision, o.role, o.ready, o.replicas) for o in observed],
    }


def _groups(ds: DisaggregatedSet, step: GitopsStep, reports: dict[int, SliceReport], removed: list[str],
            rollback: bool = False, toward: str | None = None) -> list[dict[str, Any]]:
    toward = toward or ds.revision
    per_slice = [(s, _slice_view(ds, step, reports.get(s), s, removed, toward)) for s in range(ds.slices)]
    first_slice: dict[str, int] = {}
    for label, _view in grouped_by_slice(per_slice):
        first_slice.setdefault(label, int(label.split()[1].split("-")[0]))
    groups = []
    for label, view in grouped_by_slice(per_slice):
        first = first_slice[label]
        group = {key: value for key, value in view.items() if key not in ("plan", "observed_counts")}
        group["label"] = label
        if (rollback or toward != ds.revision) and group["phase"] == str(Phase.ROLLOUT_STARTED):
            group["phase"] = "rollback started"
        group["several"] = "-" in label
        group["observed"] = [{"name": o.name, "revision": o.revision, "role": o.role, "ready": o.ready,
                              "replicas": o.replicas, "new": o.revision == toward}
                             for o in _observed(step, first)]
        group["chart"] = _chart(view["plan"], rollback)
        group["position"] = ((group["chart"]["current"], len(group["chart"]["steps"]) - 1)
                             if group["chart"] and view["phase"] == str(Phase.ROLLING) else None)
        group["moves"] = any((r["old_before"], r["new_before"]) != (r["old_after"], r["new_after"])
                             for r in group["roles"]) or bool(group["removed"]) or group["changed"]
        group["safety"] = _safety(ds, group) if group["moves"] else []
        groups.append(group)
    return groups


def _chart(plan: SlicePlan | None, rollback: bool = False) -> dict[str, Any] | None:
    if plan is None or plan.steps is None:
        return None
    steps = list(plan.steps)
    current = plan.current if plan.current is not None else len(steps) - 1
    if rollback:  # numbered from where the rollout stood, not from a start that never ran
        stood = rollback_start(steps, current)
        steps = [replace(steps[stood], kind=StepKind.INITIAL), *steps[stood + 1:]]
        current -= stood
    chart = plan_chart.plan_chart(plan.inputs, steps, current)
    return {
        "current": current, "steps": steps,
        "mermaid": [plan_chart.mermaid(chart, index) for index in range(len(plan.inputs.roles))],
        "table": plan_chart.table(chart),
    }


def _safety(ds: DisaggregatedSet, group: dict[str, Any]) -> list[str]:
    """Why this step is safe, in this step's numbers (one sentence per claim)."""
    out = []
    ceilings = [f"{r['name']} {r['old_after']} + {r['new_after']} = {r['old_after'] + r['new_after']} of at most "
                f"{r['ceiling']} (target {r['target']} + surge {r['surge']})" for r in group["roles"]]
    out.append("Within the surge budget: " + "; ".join(ceilings) + ".")
    floors = []
    for r in group["roles"]:
        if r["floor"] is None:
            floors.append(f"{r['name']} scales up from {r['started']} to {r['target']}, so it has no floor to keep")
            continue
        text = (f"{r['name']} keeps at least {r['floor']} (target {r['target']} − max unavailable "
                f"{r['unavailable']}): {r['old_after']} old + {r['new_after']} new after this step")
        starting = r["new_after"] - min(r["new_after"], r["new_ready"])
        if starting and r["old_after"] + r["new_after"] > r["kept_ready"]:
            text += (f"; {r['kept_ready']} of them were ready when it was written, "
                     f"{starting} new {'replica starts' if starting == 1 else 'replicas start'} with this commit")
        floors.append(text)
    out.append("Availability: " + "; ".join(floors) + ".")
    new_lws = [o for o in group["observed"] if o["new"]]
    if new_lws and not any(o["replicas"] for o in new_lws):
        out.append("Built on a synced start: the live LeaderWorkerSets matched the previous commit, their status was "
                   "current, and the new revision's were live at 0 replicas, as the rollout's start renders them.")
    elif new_lws:
        ready = ", ".join(f"`{o['name']}` {o['ready']}/{o['replicas']}" for o in new_lws)
        where = " (in the first slice; every slice of the group was checked alike)" if group["several"] else ""
        out.append(f"Built on ready replicas: the live LeaderWorkerSets matched the previous commit, their status "
                   f"was current, and the new revision's were all ready: {ready}{where}.")
    broken = [(rev, counts) for rev, counts in group["groups_after"]
              if any(n == 0 for n in counts.values()) and any(n > 0 for n in counts.values())]
    if not broken:
        groups = "; ".join(f"`{rev}` " + ", ".join(f"{role} {n}" for role, n in counts.items())
                           for rev, counts in group["groups_after"])
        if groups:
            out.append(f"Revision groups move whole (all roles running, or all at 0): {groups}.")
    return out
