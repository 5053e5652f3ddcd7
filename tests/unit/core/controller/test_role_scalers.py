"""External roles sized through their `<set>-<role>` DisaggregatedSetRoleScaler, as the controller does."""

from __future__ import annotations

from dataclasses import replace

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.reconcile import Create, Phase, reconcile
from kubectl_disagg.core.delivery.status import derive_status
from tests.fakes.cluster import MemoryCluster
from tests.support.sets import groups_by_slice, make_set

SCALER = (naming.SCALER_KIND, "llm-decode")


def external(ds):
    return replace(ds, roles=tuple(replace(r, external=True) if r.name == "decode" else r for r in ds.roles))


def step_until_complete(ds, cluster: MemoryCluster, hpa=None, max_passes: int = 100) -> list:
    history = []
    for _ in range(max_passes):
        result = reconcile(ds, cluster.snapshot(ds.name))
        assert not result.problems and all(r.phase != Phase.STALLED for r in result.slices), result.slices
        history.append(result)
        if result.complete:
            return history
        cluster.execute(result.actions)
        for groups in groups_by_slice(cluster).values():
            for _revision, roles in groups.items():
                assert all(c == 0 for c in roles.values()) or all(c > 0 for c in roles.values()), roles
        cluster.settle()
        if hpa:
            hpa(cluster, len(history))
    raise AssertionError(history[-1].slices)


def decode_replicas(cluster: MemoryCluster) -> dict[str, int]:
    return {n: o["spec"]["replicas"] for n, o in cluster.lws().items() if n.endswith("-decode")}


def test_the_scaler_is_created_seeded_and_then_sizes_the_role():
    cluster = MemoryCluster("serving", scalers=True)
    ds = external(make_set({"prefill": 2, "decode": 1}))  # External roles run in one slice
    first = reconcile(ds, cluster.snapshot("llm"))
    (scaler,) = [a for a in first.actions if isinstance(a, Create) and a.kind == naming.SCALER_KIND]
    assert scaler.name == "llm-decode" and scaler.object["spec"] == {"replicas": 1}
    assert scaler.object["metadata"]["labels"][naming.ROLE_LABEL] == "decode"
    step_until_complete(ds, cluster)

    cluster.objects[SCALER]["spec"]["replicas"] = 3  # an HPA wrote /scale
    scales = reconcile(ds, cluster.snapshot("llm")).actions
    assert [a.describe() for a in scales] == [f"scale leaderworkerset/llm-0-{ds.revision}-decode 1 → 3"]
    step_until_complete(ds, cluster)
    snapshot = cluster.snapshot("llm")
    status = derive_status(ds, snapshot, reconcile(ds, snapshot))
    assert {r.name: r.desired for r in status.roles} == {"prefill": 2, "decode": 3}  # scaler × slices


def test_an_existing_role_is_seeded_with_its_current_replicas():
    cluster = MemoryCluster("serving")  # no RoleScaler CRD: the LWS is sized directly
    ds = external(make_set({"prefill": 1, "decode": 1}))
    step_until_complete(ds, cluster)
    (name,) = decode_replicas(cluster)
    cluster.lws()[name]["spec"]["replicas"] = 4
    cluster.settle()
    cluster.serves_scalers = True
    (create,) = reconcile(ds, cluster.snapshot("llm")).actions
    assert create.kind == naming.SCALER_KIND and create.object["spec"]["replicas"] == 4


def test_a_rollout_follows_the_scaler_and_never_drops_below_the_new_revision():
    cluster = MemoryCluster("serving", scalers=True)
    step_until_complete(external(make_set({"prefill": 2, "decode": 2}, rolling={
        "decode": {"maxSurge": "50%", "maxUnavailable": 0}})), cluster)
    cluster.objects[SCALER]["spec"]["replicas"] = 4
    new = external(make_set({"prefill": 2, "decode": 2}, image="img:2", rolling={
        "decode": {"maxSurge": "50%", "maxUnavailable": 0}}))
    first = reconcile(new, cluster.snapshot("llm"))
    report = first.slices[0]
    assert report.phase == Phase.ROLLOUT_STARTED
    assert report.plan.target == (2, 4)  # the scaler's count is decode's target
    assert report.plan.configs[1].surge == 2  # 50% of the scaler's 4

    def hpa_lowers_mid_rollout(cluster, passes):
        new_decode = [c for n, c in decode_replicas(cluster).items() if new.revision in n]
        if new_decode and new_decode[0] >= 2:
            cluster.objects[SCALER]["spec"]["replicas"] = 1
    history = step_until_complete(new, cluster, hpa_lowers_mid_rollout)
    assert any(r.slices[0].phase == Phase.ROLLING for r in history)
    assert decode_replicas(cluster) == {f"llm-0-{new.revision}-decode": 1}  # then down to the scaler's 1
