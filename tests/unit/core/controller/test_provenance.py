"""Whether a live LWS is the one its revision renders (issue 34, item 4)."""

from __future__ import annotations

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.provenance import foreign_spec_managers, template_difference, unrendered
from kubectl_disagg.core.controller.render import leader_worker_set
from kubectl_disagg.core.controller.snapshot import Snapshot, lws_from_object
from tests.support.sets import NS, make_set

IMAGE = ("spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", 0, "image")


def live(ds, role="prefill", slice_index=0, managers=(), image=None, **changes):
    obj = leader_worker_set(ds, next(r for r in ds.roles if r.name == role), slice_index, NS)
    obj["metadata"].update(uid="u", resourceVersion="1", creationTimestamp="2026-01-01T00:00:00Z",
                           managedFields=[dict(m) for m in managers])
    obj["spec"].update(changes)
    if image is not None:
        obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = image
    return obj


def manager(name, fields=None, **extra):
    return {"manager": name, "operation": "Apply", "fieldsV1": fields or {"f:spec": {"f:leaderWorkerTemplate": {}}},
            **extra}


def snapshot_of(*objects):
    return Snapshot(NS, lws=tuple(lws_from_object(o) for o in objects),
                    objects={(o["kind"], o["metadata"]["name"]): o for o in objects})


def test_what_the_set_renders_passes_whoever_applied_it():
    ds = make_set({"prefill": 1, "decode": 1})
    status_writer = manager("lws-controller", {"f:status": {"f:replicas": {}}}, subresource="status")
    objects = [live(ds, role, managers=[manager("kubectl"), status_writer]) for role in ("prefill", "decode")]
    assert unrendered(ds, snapshot_of(*objects)) == ()  # `render | kubectl apply --server-side`, Argo CD


def test_defaults_the_api_server_fills_in_are_no_difference():
    ds = make_set({"prefill": 1, "decode": 1})
    stored = live(ds)
    stored["spec"]["leaderWorkerTemplate"]["size"] = 1  # the CRD's default
    stored["spec"]["leaderWorkerTemplate"]["unknownField"] = "pruned by the server"
    assert template_difference(stored, live(ds)) is None


def test_a_planted_lws_with_another_image_is_named_with_the_field_and_who_wrote_it():
    old = make_set({"prefill": 1, "decode": 1})
    new = make_set({"prefill": 1, "decode": 1}, image="img:2")
    planted = live(new, replicas=0, image="evil.example/miner", managers=[manager("kubectl")])
    (reason,) = unrendered(new, snapshot_of(live(old), planted))
    assert reason.startswith(f"leaderworkerset/{planted['metadata']['name']} is not the one revision "
                             f"{new.revision} renders: its template differs (spec.leaderWorkerTemplate."
                             "workerTemplate.spec.containers[0].image differs); its spec was also written by kubectl")


def test_a_template_patched_later_is_found_even_under_our_own_field_manager():
    ds = make_set({"prefill": 1, "decode": 1})
    (reason,) = unrendered(ds, snapshot_of(live(ds, image="other:1", managers=[manager(naming.MANAGER)])))
    assert "its template differs" in reason and "written by" not in reason


def test_foreign_spec_managers_leave_out_ours_subresources_and_replicas():
    obj = live(make_set({"prefill": 1, "decode": 1}), managers=[
        manager(naming.MANAGER), manager("hpa", {"f:spec": {"f:replicas": {}}}, subresource="scale"),
        manager("kubectl-scale", {"f:spec": {"f:replicas": {}}}), manager("kubectl-patch"), manager("kubectl-patch")])
    assert foreign_spec_managers(obj) == ["kubectl-patch"]


def test_old_revisions_and_objects_we_do_not_manage_are_not_judged():
    old = make_set({"prefill": 1, "decode": 1})
    new = make_set({"prefill": 1, "decode": 1}, image="img:2")
    assert unrendered(new, snapshot_of(live(old, image="patched:1"))) == ()  # its templates are not in the set
    foreign = live(new, image="other:1")
    del foreign["metadata"]["labels"][naming.MANAGED_BY_LABEL]
    assert unrendered(new, snapshot_of(foreign)) == ()
