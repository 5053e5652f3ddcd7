"""What a git-driven step hands its views (the pull request, the step's summary): the numbers
that take the planner or a render to know, computed once by the step. Pure.

Per slice, the LeaderWorkerSets as the step's pass read them and the plan of its rollout (the
planner's inputs, its whole trajectory, where this state stands on it); and what prune
deletes when the step removes a revision. views/gitops_pr.py reads this and makes text; it
neither plans nor renders.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kubectl_disagg.core.controller import planner
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.api.rollout_config import RolloutConfig
from kubectl_disagg.core.controller.planner import PlanInputs, Vector, inputs_for_set
from kubectl_disagg.core.controller.reconcile import Phase, Reconciliation, SliceReport
from kubectl_disagg.core.controller.snapshot import LiveLWS, Snapshot
from kubectl_disagg.gitops.position import deployed_order
from kubectl_disagg.gitops.render import rendered_names
from kubectl_disagg.gitops.state import RolloutState


@dataclass(frozen=True)
class ObservedLWS:
    """One LeaderWorkerSet of the set as the step read it: its revision and role as its labels
    say (None where one is missing or malformed: reconcile refuses that pass)."""

    name: str
    revision: str | None
    role: str | None
    ready: int
    replicas: int


@dataclass(frozen=True)
class SlicePlan:
    """A slice's rollout: the planner's `inputs`, its whole trajectory (`steps`; None when the
    planner does not converge) and the step the state written stands at (`current`; None: the
    plan's end, for the step that removes the drained revision)."""

    inputs: PlanInputs
    steps: tuple[planner.Step, ...] | None
    current: int | None


@dataclass(frozen=True)
class StepView:
    """`observed`: slice → its LWS, old revisions first, then by role and name; `plans`: slice →
    its rollout's plan (slices with none left out); `pruned_lws`, `pruned_services`: the names
    the state before renders and the state after no longer does (sorted)."""

    observed: Mapping[int, tuple[ObservedLWS, ...]] = field(default_factory=dict)
    plans: Mapping[int, SlicePlan] = field(default_factory=dict)
    pruned_lws: tuple[str, ...] = ()
    pruned_services: tuple[str, ...] = ()


class Passed(Protocol):
    """What the view reads of a step's pass (rollout/stepper.py's `Pass`, above gitops/): the
    live objects it read and reconcile's verdict over them."""

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def reconciliation(self) -> Reconciliation: ...


_Trajectories = dict[tuple[Vector, Vector, tuple[RolloutConfig, ...]], tuple[planner.Step, ...] | None]


def step_view(ds: DisaggregatedSet, before: RolloutState | None, after: RolloutState | None,
              passed: Passed | None) -> StepView:
    """The view of a step from `before` to `after`, whose pass (`passed`, a `stepper.Pass`, or
    None when none ran) read the live LWS."""
    if passed is None:
        return _with_pruned(ds, before, after, StepView())
    order: dict[str | None, int] = {name: index for index, name in enumerate(ds.role_names)}  # (no role label: last)
    observed: dict[int, list[LiveLWS]] = {}
    for o in passed.snapshot.lws:
        # (one without a slice label has no slice a view reads: reconcile refuses that pass)
        if o.managed_by_us(ds.name) and o.identity.slice is not None:
            observed.setdefault(o.identity.slice, []).append(o)
    by_slice = {s: tuple(ObservedLWS(o.name, o.identity.revision, o.identity.role, o.ready, o.replicas)
                         for o in sorted(found, key=lambda o: (o.identity.revision == ds.revision,
                                                               order.get(o.identity.role, len(order)), o.name)))
                for s, found in observed.items()}
    trajectories: _Trajectories = {}
    plans: dict[int, SlicePlan] = {}
    for report in passed.reconciliation.slices:
        plan = _slice_plan(ds, before, report, trajectories)
        if plan is not None:
            plans[report.slice] = plan
    return _with_pruned(ds, before, after, StepView(by_slice, plans))


def _slice_plan(ds: DisaggregatedSet, before: RolloutState | None, report: SliceReport,
                trajectories: _Trajectories) -> SlicePlan | None:
    """A rolling slice's plan is reconcile's; the slice whose drained revision this step removes
    has no plan left in reconcile, so it is rebuilt from the state it leaves (its last step)."""
    if report.plan is not None and report.position is not None:
        inputs, current = report.plan, report.position[0] + (1 if report.phase == Phase.ROLLING else 0)
    elif before is not None and report.phase == Phase.COMPLETE:
        initial = [0] * len(ds.roles)
        for revision, counts in before.deployed(report.slice).items():
            if revision == ds.revision:
                continue
            started = before.initial.get(report.slice, {}).get(revision, counts)
            for index, role in enumerate(ds.role_names):
                initial[index] += started.get(role, 0)
        if not any(initial):
            return None
        inputs, current = inputs_for_set(ds, initial), None
    else:
        return None
    key = (inputs.initial_old, inputs.target, inputs.configs)
    if key not in trajectories:  # slices in the same place share one plan (100 slices, one computation)
        try:
            trajectories[key] = tuple(planner.plan(*key))
        except planner.PlanDidNotConverge:
            trajectories[key] = None
    return SlicePlan(inputs, trajectories[key], current)


def _with_pruned(ds: DisaggregatedSet, before: RolloutState | None, after: RolloutState | None,
                 view: StepView) -> StepView:
    """`view` with what prune deletes, when the step removes a revision (both states are the
    step's: checked, or compared with the live LWS)."""
    if not set(deployed_order(before)) - set(deployed_order(after)):
        return view
    (lws_before, services_before), (lws_after, services_after) = (
        rendered_names(ds, state) if state is not None else (set(), set()) for state in (before, after))
    return StepView(view.observed, view.plans, tuple(sorted(lws_before - lws_after)),
                    tuple(sorted(services_before - services_after)))
