"""`rollout plan -f ds.yaml` against the cluster: what is left of each slice's rollout.

Kept apart from rollout_plan.py so the offline plan never loads the Kubernetes client.
"""

from __future__ import annotations

from kubectl_disagg.core import planner
from kubectl_disagg.commands import _options
from kubectl_disagg.errors import UserError
from kubectl_disagg.core.model import namespace_for
from kubectl_disagg.core.planner import PlanInputs, Step, StepKind
from kubectl_disagg.core.reconcile import SliceReport, reconcile
from kubectl_disagg.views.templating import grouped_by_slice

_PHASES = {
    "rollout started": "the next step starts the rollout to revision {revision}",
    "rolling": "rolling to revision {revision}",
    "waiting": "rolling to revision {revision}, waiting: {waiting}",
    "complete": "rollout to revision {revision} complete",
    "stalled": "rollout to revision {revision} stalled: {waiting}",
}


def live_plans(sets, namespace, kubeconfig, context, name: str | None = None
               ) -> list[tuple[str, PlanInputs, list[Step]]]:
    """The plans of `sets` (from files), or of the set `name` stored in the cluster."""
    with _options.session(kubeconfig, context) as cluster:
        sets = sets or [_options.stored_set(cluster, name, namespace)]
        snapshots = [cluster.snapshot(ds.name, namespace_for(ds, namespace, cluster.default_namespace), scalers=ds.has_external_roles)
                     for ds in sets]
    plans = []
    for ds, snapshot in zip(sets, snapshots):
        result = reconcile(ds, snapshot)
        if result.problems:
            raise UserError(list(result.problems))
        # Slices in the same place print one plan: 100 slices rolling in step are one table.
        per_slice = [(report.slice, _slice_plan(ds, report)) for report in result.slices]
        for slices, (summary, inputs, steps) in grouped_by_slice(per_slice):
            plans.append((f"disaggregatedset/{ds.name} {slices}: {summary}", inputs, list(steps)))
    return plans


def _slice_plan(ds, report: SliceReport) -> tuple[str, PlanInputs, tuple[Step, ...]]:
    title = ""
    if report.roles:
        title += _PHASES.get(report.phase, report.phase).format(
            revision=ds.revision, waiting="; ".join(report.waiting_for))
        if report.position is not None:
            title += f" (at step {report.position[0]} of {report.position[1]})"
        inputs = report.plan
        steps = planner.remaining(inputs.initial_old, report.old, report.new, inputs.target, inputs.configs)
        return title, inputs, tuple(steps)
    # No rollout: the slice runs (or converges to) one revision; show where it stands.
    current = tuple(report.revisions.get(ds.revision, {}).get(name, 0) for name in ds.role_names)
    title += f"no rollout under way ({report.phase} at revision {ds.revision})"
    zeros = (0,) * len(ds.roles)
    inputs = planner.inputs_for_set(ds, zeros)
    return title, inputs, (Step(zeros, current, StepKind.INITIAL),)
