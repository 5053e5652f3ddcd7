"""`rollout plan` against the cluster: what is left of each slice's rollout, from the live LWS.

Reads one snapshot per set and reconciles it (changing nothing): per slice, the planner's
inputs and the steps left from where the slice stands. Kept apart from the offline plan
(`core.plan_inputs`) so that one never loads the Kubernetes client.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_disagg.core import planner
from kubectl_disagg.core.model import DisaggregatedSet, namespace_for
from kubectl_disagg.core.planner import PlanInputs, Step, StepKind
from kubectl_disagg.core.reconcile import SliceReport, reconcile
from kubectl_disagg.errors import UserError
from kubectl_disagg.rollout.progressive import paced_view

SlicePlan = tuple[SliceReport, PlanInputs, tuple[Step, ...]]


def live_plans(cluster, sets: Sequence[DisaggregatedSet], namespace: str | None
               ) -> list[tuple[DisaggregatedSet, list[SlicePlan]]]:
    """Per set, per slice: its report, the planner inputs and the steps left."""
    snapshots = [cluster.snapshot(ds.name, namespace_for(ds, namespace, cluster.default_namespace),
                                  scalers=ds.has_external_roles) for ds in sets]
    plans = []
    for ds, snapshot in zip(sets, snapshots):
        if ds.policy is None:
            result = reconcile(ds, snapshot)
        else:  # the slices a step would hold (its wave, the budget, a gate) as held
            passage, _ = paced_view(cluster, ds, namespace_for(ds, namespace, cluster.default_namespace), snapshot)
            result = reconcile(passage.target, snapshot, passage.admission)
        if result.problems:
            raise UserError(list(result.problems))
        plans.append((ds, [slice_plan(ds, report) for report in result.slices]))
    return plans


def slice_plan(ds: DisaggregatedSet, report: SliceReport) -> SlicePlan:
    """The steps left of a slice's rollout; with none under way, where the slice stands."""
    if report.roles:
        inputs = report.plan
        steps = planner.remaining(inputs.initial_old, report.old, report.new, inputs.target, inputs.configs)
        return report, inputs, tuple(steps)
    current = tuple(report.revisions.get(ds.revision, {}).get(name, 0) for name in ds.role_names)
    zeros = (0,) * len(ds.roles)
    return report, planner.inputs_for_set(ds, zeros), (Step(zeros, current, StepKind.INITIAL),)
