"""`controller`: telling a set the upstream controller runs from one kubectl-disagg runs."""

from __future__ import annotations

from kubectl_disagg.core.controller import ownership

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.snapshot import Snapshot, lws_from_object, service_from_object

OWNER = {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet", "name": "llm",
         "uid": "u-1", "controller": True}


def obj(name: str, owners=(), managed: bool = False) -> dict:
    labels = {naming.NAME_LABEL: "llm", naming.SLICE_LABEL: "0", naming.REVISION_LABEL: "abcd1234",
              naming.ROLE_LABEL: "prefill"}
    if managed:
        labels[naming.MANAGED_BY_LABEL] = naming.MANAGER
    return {"metadata": {"name": name, "labels": labels, "ownerReferences": list(owners)}}


def test_only_a_controller_reference_to_the_set_counts():
    owned = lws_from_object(obj("a", [OWNER]))
    assert owned.owned_by_controller("llm") and owned.belongs_to("llm") and not owned.managed_by_us("llm")
    for owners in ([{**OWNER, "controller": False}], [{**OWNER, "name": "other"}],
                   [{**OWNER, "kind": "Deployment", "apiVersion": "apps/v1"}], []):
        assert not lws_from_object(obj("b", owners)).belongs_to("llm"), owners
    assert lws_from_object(obj("c", managed=True)).belongs_to("llm")


def test_step_refuses_when_any_object_is_the_controllers():
    ours = Snapshot("ns", lws=(lws_from_object(obj("a", managed=True)),))
    assert ownership.controller_owned("llm", ours) == []
    handed = Snapshot("ns", lws=(lws_from_object(obj("a", [OWNER], managed=True)),),
                      services=(service_from_object(obj("a-prv", [OWNER])),))
    assert ownership.controller_owned("llm", handed) == ["leaderworkerset/a", "service/a-prv"]


def test_a_stored_status_is_the_controllers_signature():
    assert ownership.reconciled_by_controller({"metadata": {"name": "llm"}}) == []
    assert ownership.reconciled_by_controller({"metadata": {"name": "llm"}, "status": {}}) == []
    assert ownership.reconciled_by_controller({"metadata": {"name": "llm"}, "status": {
        "observedGeneration": 2, "conditions": [{}]}}) == ["status.observedGeneration", "status.conditions"]
