"""`handover.plan_handover`: what each direction changes, and what refuses it (pure)."""

from __future__ import annotations

from kubectl_disagg.core.api import naming
from kubectl_disagg.rollout.handover import TO_CONTROLLER, TO_PLUGIN, owner_reference, plan_handover

STORED = {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
          "metadata": {"name": "llm", "namespace": "ns", "uid": "u-1"}}
OWNER = owner_reference(STORED)


def lws(name="llm-0-abcd1234-prefill", managed=True, owners=(), role="prefill") -> dict:
    labels = {naming.NAME_LABEL: "llm", naming.SLICE_LABEL: "0", naming.REVISION_LABEL: "abcd1234",
              naming.ROLE_LABEL: role}
    if managed:
        labels[naming.MANAGED_BY_LABEL] = naming.MANAGER
    return {"kind": "LeaderWorkerSet",
            "metadata": {"name": name, "resourceVersion": "7", "labels": labels, "ownerReferences": list(owners)}}


def test_to_controller_adds_the_owner_reference_pinned_to_the_version_read():
    plan = plan_handover(TO_CONTROLLER, STORED, [lws(), lws("llm-0-abcd1234-decode", owners=[OWNER], role="decode")])
    assert plan.refusal == () and plan.unchanged == ("leaderworkerset/llm-0-abcd1234-decode",)
    (change,) = plan.changes
    assert change.patch == ({"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                            {"op": "add", "path": "/metadata/ownerReferences", "value": [OWNER]})
    # As the controller stamps it (its lws_manager.go): controller, no blockOwnerDeletion.
    assert OWNER == {**{k: STORED[k] for k in ("apiVersion", "kind")}, "name": "llm", "uid": "u-1",
                     "controller": True}


def test_to_plugin_labels_and_leaves_the_references_to_the_orphaning_delete():
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "u-9"}
    plan = plan_handover(TO_PLUGIN, STORED, [lws(managed=False, owners=[OWNER, other]),
                                             lws("llm-0-abcd1234-decode", owners=[OWNER], role="decode")])
    (change,) = plan.changes
    assert change.patch == ({"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                            {"op": "add", "path": "/metadata/labels/app.kubernetes.io~1managed-by",
                             "value": naming.MANAGER})
    assert plan.unchanged == ("leaderworkerset/llm-0-abcd1234-decode",)
    assert plan.refusal == () and "propagationPolicy=Orphan (uid u-1)" in plan.orphan
    assert plan_handover(TO_CONTROLLER, STORED, [lws()]).orphan is None


def test_to_plugin_refuses_a_set_mid_rollout():
    objects = [lws(owners=[OWNER]), lws("llm-0-ffff0000-prefill", owners=[OWNER])]
    objects[1]["metadata"]["labels"][naming.REVISION_LABEL] = "ffff0000"
    (refusal,) = plan_handover(TO_PLUGIN, STORED, objects).refusal
    assert refusal.startswith("disaggregatedset/llm is mid-rollout (slice 0 has revisions abcd1234, ffff0000)")
    assert plan_handover(TO_CONTROLLER, STORED, objects).refusal == ()


def test_an_lws_missing_its_slice_or_revision_label_is_refused_not_a_crash():
    """Its labels are incomplete: the name check refuses it; the mid-rollout check, which groups
    the LWS by slice and revision, leaves it out (a None beside an int or str sorted raised)."""
    no_slice, no_revision = lws("llm-x-prefill", owners=[OWNER]), lws("llm-y-prefill", owners=[OWNER])
    del no_slice["metadata"]["labels"][naming.SLICE_LABEL]
    del no_revision["metadata"]["labels"][naming.REVISION_LABEL]
    plan = plan_handover(TO_PLUGIN, STORED, [lws(owners=[OWNER]), no_slice, no_revision])
    assert [refusal.split(":")[0] for refusal in plan.refusal] == ["leaderworkerset/llm-x-prefill",
                                                                   "leaderworkerset/llm-y-prefill"]


def test_anything_not_adoptable_refuses():
    foreign = {**OWNER, "kind": "JobSet", "name": "x", "uid": "u-2"}
    cases = {
        "neither kubectl-disagg nor the controller manages it": lws(managed=False),
        "is controlled by jobset/x": lws(owners=[foreign]),
        "should be named llm-0-abcd1234-prefill": lws("llm-renamed"),
    }
    for direction in (TO_CONTROLLER, TO_PLUGIN):
        for reason, obj in cases.items():
            (refusal,) = plan_handover(direction, STORED, [obj]).refusal
            assert reason in refusal, (direction, refusal)
