"""What a git-driven step hands its views, against what a render and the planner say."""

from __future__ import annotations

from kubectl_disagg.core.controller import planner
from kubectl_disagg.gitops.render import rendered, rendered_names
from kubectl_disagg.rollout.git_step import Outcome, gitops_step
from tests.fakes.argo import deploy, round_trip
from tests.support.sets import make_set


def test_the_view_of_every_step_of_a_rollout_is_what_render_and_the_planner_say():
    old = make_set({"prefill": 3, "decode": 2}, slices=2)
    new = make_set({"prefill": 3, "decode": 2}, image="img:2", slices=2)
    argo, state = deploy(old)
    pruned = []
    for _ in range(30):
        argo.sync(new, state)
        argo.cluster.settle()
        step = gitops_step(new, state, argo.snapshot(new))
        if step.outcome == Outcome.COMPLETE:
            break
        assert step.outcome == Outcome.ADVANCED, step
        for each in (step.before, step.state):  # the names without the objects
            objects = rendered(new, each)
            assert rendered_names(new, each) == tuple(
                {o["metadata"]["name"] for o in objects if o["kind"] == kind} for kind in ("LeaderWorkerSet", "Service"))
        view = step.view
        for slice_index, observed in view.observed.items():
            live = sorted(o.name for o in step.passed.snapshot.lws if o.identity.slice == slice_index)
            assert sorted(o.name for o in observed) == live
            assert [o.revision == new.revision for o in observed] == sorted(o.revision == new.revision for o in observed)
        for plan in view.plans.values():
            inputs = plan.inputs
            assert list(plan.steps) == planner.plan(inputs.initial_old, inputs.target, inputs.configs)
        assert len({id(plan.steps) for plan in view.plans.values()}) <= 1  # slices alike share one plan
        if view.pruned_lws:
            before, after = rendered(new, step.before), rendered(new, step.state)
            gone = {o["metadata"]["name"] for o in before} - {o["metadata"]["name"] for o in after}
            assert set(view.pruned_lws) | set(view.pruned_services) == gone
            pruned.append(view.pruned_lws)
        state = round_trip(step.state, new)
    else:
        raise AssertionError("the rollout did not complete")
    assert len(pruned) == 1 and len(pruned[0]) == 4  # the old revision's 2 roles x 2 slices, once
