"""`action_detail` and `action_patch`: a dry run's action drawn from the objects it carries."""

from __future__ import annotations

import copy

from kubectl_disagg.core.controller.reconcile import Annotate, Create, Delete, Scale
from kubectl_disagg.manifests.writer import to_yaml
from kubectl_disagg.rollout.stepper import PlannedAction
from kubectl_disagg.views.action_detail import action_detail, action_patch

LIVE = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
    "metadata": {"name": "llm-0-abc-prefill", "namespace": "serving", "resourceVersion": "7",
                 "managedFields": [{"manager": "kubectl-disagg", "operation": "Apply"}]},
    "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 1}},
}


def changed(**fields) -> dict:
    after = copy.deepcopy(LIVE)
    after["spec"]["replicas"] = fields.get("replicas", 2)
    if "annotations" in fields:
        after["metadata"]["annotations"] = fields["annotations"]
    return after


def test_a_create_is_drawn_as_the_whole_object_and_has_no_patch():
    planned = PlannedAction(Create(LIVE, 0), after=LIVE)
    assert action_detail(planned) == to_yaml(LIVE)
    assert action_patch(planned) is None


def test_a_scale_is_a_diff_from_the_live_object_without_managed_fields():
    planned = PlannedAction(Scale("llm-0-abc-prefill", 2, 3, "7", 0), before=LIVE, after=changed(replicas=3))
    diff = action_detail(planned)
    assert diff.startswith("--- leaderworkerset/llm-0-abc-prefill (live)\n"
                           "+++ leaderworkerset/llm-0-abc-prefill (after this step)\n")
    assert "-  replicas: 2\n+  replicas: 3\n" in diff
    assert "managedFields" not in diff
    assert action_patch(planned) == [{"op": "replace", "path": "/spec/replicas", "value": 3}]
    assert LIVE["metadata"]["managedFields"]  # drawn from copies: the objects carried are left alone


def test_an_annotation_is_a_patch_adding_it():
    annotations = {"disaggregatedset.x-k8s.io/initial-replicas": "2"}
    planned = PlannedAction(Annotate("llm-0-abc-prefill", annotations, "7", 0, 2, False),
                            before=LIVE, after=changed(annotations=annotations))
    assert action_patch(planned) == [{"op": "add", "path": "/metadata/annotations", "value": annotations}]
    assert '+    disaggregatedset.x-k8s.io/initial-replicas: "2"\n' in action_detail(planned)


def test_nothing_is_drawn_without_the_objects():
    """A delete, or any action of a pass that was not a dry run, carries no objects."""
    for action in (Delete("Service", "llm-0-abc-prefill", "uid", "7", 0), Scale("x", 1, 2, "7", 0)):
        assert action_detail(PlannedAction(action)) is None and action_patch(PlannedAction(action)) is None
