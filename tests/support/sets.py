"""Builders of DisaggregatedSets and checks over an in-memory cluster, shared by the unit tests."""

from __future__ import annotations

import pickle
from dataclasses import replace

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.delivery.policy import RolloutPolicy
from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.core.api.rollout_config import resolve_config
from kubectl_disagg.core.delivery.sets import load_sets
from kubectl_disagg.core.delivery.status import derive_status
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from tests.fakes.cluster import MemoryCluster


def set_selector(set_name: str) -> str:
    """The label selector of everything kubectl-disagg manages for one set."""
    return f"{naming.NAME_LABEL}={set_name},{naming.MANAGED_BY_LABEL}={naming.MANAGER}"


NS = "serving"


def make_set(replicas: dict[str, int], image: str = "img:1", slices: int = 1, rolling: dict | None = None,
             name: str = "llm"):
    roles = []
    for role, count in replicas.items():
        spec = {"replicas": count, "leaderWorkerTemplate": {
            "workerTemplate": {"spec": {"containers": [{"name": "c", "image": image}]}}}}
        if rolling and role in rolling:
            spec["rolloutStrategy"] = {"rollingUpdateConfiguration": rolling[role]}
        roles.append({"name": role, "spec": spec})
    data = {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
            "metadata": {"name": name, "namespace": NS}, "spec": {"slices": slices, "roles": roles}}
    key = repr(data)  # the document, in order: writing it as YAML for a key cost what reading it saves
    if key not in _LOADED:
        if len(_LOADED) >= 4096:
            _LOADED.clear()
        (ds,) = load_sets(parse_stream(to_yaml(data), "ds.yaml"))
        _LOADED[key] = pickle.dumps(ds, pickle.HIGHEST_PROTOCOL)
    return pickle.loads(_LOADED[key])  # a set of its own: a test may edit what it holds


# The set of each document, read and validated once (the property tests build the same few sets
# thousands of times; reading one costs 20 times what unpickling it does).
_LOADED: dict[str, bytes] = {}


def groups_by_slice(cluster: MemoryCluster) -> dict[int, dict[str, dict[str, int]]]:
    out: dict = {}
    for obj in cluster.lws().values():
        labels = obj["metadata"]["labels"]
        out.setdefault(int(labels[naming.SLICE_LABEL]), {}).setdefault(labels[naming.REVISION_LABEL], {})[
            labels[naming.ROLE_LABEL]] = obj["spec"]["replicas"]
    return out


def check_invariants(ds, cluster: MemoryCluster, initial: dict[int, dict[str, int]]) -> None:
    for slice_index, groups in groups_by_slice(cluster).items():
        for revision, roles in groups.items():
            counts = list(roles.values())
            assert all(c == 0 for c in counts) or all(c > 0 for c in counts), (slice_index, revision, roles)
        for role in ds.roles:
            total = sum(g.get(role.name, 0) for g in groups.values())
            # Orphan prevention (design §5) may hold one old replica beyond a surge of 0: with
            # maxSurge 0 the bound is target + 1, not target (see test_orphan_prevention_...).
            surge = max(resolve_config(role.rolling_update, role.replicas).surge, 1)
            start = initial.get(slice_index, {}).get(role.name, 0)
            target = max(start, 1) if role.external else role.replicas  # autoscaled: keep the size
            ceiling = max(target + surge, start)
            assert total <= ceiling, (slice_index, role.name, groups)


def drive(ds, cluster: MemoryCluster, max_passes: int = 200, settle=True, **settle_args) -> list:
    """Step until complete, settling status after every pass; returns every reconciliation."""
    initial = {s: {r: sum(g.get(r, 0) for g in groups.values()) for r in ds.role_names}
               for s, groups in groups_by_slice(cluster).items()}
    history = []
    for _ in range(max_passes):
        result = reconcile(ds, cluster.snapshot(ds.name))
        assert not result.problems, result.problems
        history.append(result)
        if result.complete:
            return history
        cluster.execute(result.actions)
        check_invariants(ds, cluster, initial)
        if settle:
            cluster.settle(**settle_args)
    raise AssertionError(f"not complete after {max_passes} passes: {history[-1].slices}")


def fleet(slices: int, policy_: RolloutPolicy | None, replicas=None):
    """A cluster running the set at img:1, and the set changed to img:2 with `policy_`."""
    replicas = replicas or {"prefill": 1, "decode": 1}
    cluster = MemoryCluster(NS)
    for obj in render_set(make_set(replicas, "img:1", slices), NS):
        cluster.add(obj)
    cluster.settle()
    return cluster, replace(make_set(replicas, "img:2", slices), policy=policy_)


def status_of(ds, cluster):
    snapshot = cluster.snapshot(ds.name)
    return derive_status(ds, snapshot, reconcile(ds, snapshot))


def available_before_the_last_step(slices: int = 2):
    """A rollout from img:1 to img:2 stepped until the set is Available, its drained old
    revision's LWS still there (the rollout's last step removes them): (old, new, cluster)."""
    cluster = MemoryCluster(NS)
    old = make_set({"prefill": 2, "decode": 1}, slices=slices)
    new = make_set({"prefill": 2, "decode": 1}, image="img:2", slices=slices)
    drive(old, cluster)
    while not status_of(new, cluster).available:
        cluster.execute(reconcile(new, cluster.snapshot(new.name)).actions)
        cluster.settle()
    assert {name for name in cluster.lws() if old.revision in name}  # drained, not yet removed
    return old, new, cluster
