"""Whether a live LWS is the one its revision renders: template and field managers (issue 34, item 4)."""

from __future__ import annotations

from kubectl_disagg.core import naming
from kubectl_disagg.core.provenance import foreign_spec_managers, template_difference, unrendered
from kubectl_disagg.core.render import deep_copy, leader_worker_set
from kubectl_disagg.core.snapshot import Snapshot, lws_from_object
from tests.unit.core.test_reconcile import NS, make_set


def live(ds, role="prefill", slice_index=0, managers=(), **changes):
    obj = leader_worker_set(ds, next(r for r in ds.roles if r.name == role), slice_index, NS)
    obj["metadata"].update(uid="u", resourceVersion="1", creationTimestamp="2026-01-01T00:00:00Z",
                           managedFields=[dict(m) for m in managers])
    for key, value in changes.items():
        obj.setdefault("spec", {})[key] = value
    return obj


def ours(fields=None, **extra):
    return {"manager": naming.MANAGER, "operation": "Apply", "fieldsV1": fields or {"f:spec": {"f:replicas": {}}}, **extra}


def snapshot_of(*objects):
    return Snapshot(NS, lws=tuple(lws_from_object(o) for o in objects),
                    objects={(o["kind"], o["metadata"]["name"]): o for o in objects})


def test_what_the_set_renders_and_we_wrote_passes():
    ds = make_set({"prefill": 1, "decode": 1})
    status_writer = {"manager": "lws-controller", "operation": "Update", "subresource": "status",
                     "fieldsV1": {"f:status": {"f:replicas": {}}}}
    scaler = {"manager": "kubectl-scale", "operation": "Update", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    objects = [live(ds, role, managers=[ours(), status_writer, scaler]) for role in ("prefill", "decode")]
    assert unrendered(ds, snapshot_of(*objects)) == ()


def test_defaults_the_api_server_fills_in_are_no_difference():
    ds = make_set({"prefill": 1, "decode": 1})
    stored = live(ds)
    stored["spec"]["leaderWorkerTemplate"]["size"] = 1  # the CRD's default
    stored["spec"]["leaderWorkerTemplate"]["unknownField"] = "pruned by the server"
    assert template_difference(stored, live(ds)) is None


def test_a_planted_lws_with_another_image_is_named_with_the_field_that_differs():
    old = make_set({"prefill": 1, "decode": 1})
    new = make_set({"prefill": 1, "decode": 1}, image="img:2")
    planted = live(new, replicas=0, managers=[{"manager": "kubectl", "operation": "Apply",
                                               "fieldsV1": {"f:spec": {"f:leaderWorkerTemplate": {}}}}])
    planted["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = "evil.example/miner"
    (reason,) = unrendered(new, snapshot_of(live(old), planted))
    assert reason.startswith(f"leaderworkerset/{planted['metadata']['name']} is not the one kubectl-disagg made")
    assert "written by kubectl, not kubectl-disagg" in reason
    assert "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].image differs" in reason


def test_a_template_patched_later_by_someone_else_is_found_by_either_sign():
    ds = make_set({"prefill": 1, "decode": 1})
    patched = live(ds, managers=[ours(), {"manager": "kubectl-patch", "operation": "Update",
                                          "fieldsV1": {"f:spec": {"f:leaderWorkerTemplate": {"f:size": {}}}}}])
    assert foreign_spec_managers(patched) == ["kubectl-patch"]
    (reason,) = unrendered(ds, snapshot_of(patched))
    assert "written by kubectl-patch" in reason and "template" not in reason.split("; ")[0]
    # ... and with our own field manager name, by the template alone
    disguised = deep_copy(live(ds, managers=[ours()]))
    disguised["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = "other:1"
    (reason,) = unrendered(ds, snapshot_of(disguised))
    assert "its template is not the one revision" in reason and "written by" not in reason


def test_an_old_revision_is_judged_by_its_field_managers_only():
    old = make_set({"prefill": 1, "decode": 1})
    new = make_set({"prefill": 1, "decode": 1}, image="img:2")
    assert unrendered(new, snapshot_of(live(old, managers=[ours()]))) == ()
    edited = live(old, managers=[ours(), {"manager": "kubectl-edit", "operation": "Update",
                                          "fieldsV1": {"f:spec": {"f:startupPolicy": {}}}}])
    assert "written by kubectl-edit" in unrendered(new, snapshot_of(edited))[0]


def test_objects_we_do_not_manage_are_not_judged_here():
    ds = make_set({"prefill": 1, "decode": 1})
    foreign = live(ds, managers=[{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {"f:x": {}}}}])
    del foreign["metadata"]["labels"][naming.MANAGED_BY_LABEL]
    assert unrendered(ds, snapshot_of(foreign)) == ()
