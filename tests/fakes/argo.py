"""Argo CD's sync and the LWS controller over a MemoryCluster, and the rounds of a git rollout driven through them."""

from __future__ import annotations

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.gitops.render import render_with_state
from kubectl_disagg.rollout.served import served_object
from kubectl_disagg.gitops.state import parse_state, state_document
from kubectl_disagg.rollout.git_step import GitopsStep, Outcome, gitops_step
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from tests.fakes.cluster import MemoryCluster
from tests.support.sets import NS, check_invariants, groups_by_slice


def round_trip(state, ds):
    """Write the state as a file would hold it and read it back, checked against `ds`."""
    (document,) = parse_stream(to_yaml(state_document(state)), "disagg-rollout-state.yaml")
    return parse_state(document, ds, NS)


class MemoryArgo:
    """Argo CD's sync (apply render, prune the rest) and the LWS controller, in memory; and the
    cluster it syncs as a git rollout reads it (`rollout.git_status.GitLooks`, `rollout.git_step.
    next_step`): the live objects, the RolloutState served, and watches (`watched`)."""

    def __init__(self):
        self.cluster = MemoryCluster(NS)
        self.served = None  # the RolloutState object applied with the LWS (the cluster serves the kind)
        self.syncs: list = []  # what each watch sees happen: a sync (called), or None (nothing)
        self.clock: list[float] | None = None  # the seconds a quiet watch lasts are added to clock[0]
        self.watches: list[float] = []  # the timeout of each watch, in order

    def watched(self, syncs=(), clock: list[float] | None = None) -> MemoryArgo:
        """This cluster, each watch of it now the next of `syncs` (a callable: Argo CD syncs, the
        watch sees a change; None or none left: nothing changes, the watch lasts its timeout on
        `clock`), the watches counted afresh."""
        self.syncs, self.clock, self.watches, self.state_versions = list(syncs), clock, [], []
        return self

    def sync(self, ds, state, *, prune: bool = True) -> None:
        self.served = served_object(ds, state) if state is not None else None
        wanted = {(o["kind"], o["metadata"]["name"]): o for o in render_with_state(ds, state, NS)}
        for key in [k for k in self.cluster.objects if k not in wanted and prune]:
            del self.cluster.objects[key]
        for key, obj in wanted.items():
            live = self.cluster.objects.get(key)
            if live is None:
                if obj["kind"] == "LeaderWorkerSet" and "replicas" not in obj["spec"]:
                    obj = {**obj, "spec": {**obj["spec"], "replicas": 1}}  # the API's default
                self.cluster.add(obj)
                continue
            before = live["spec"]
            spec = dict(obj["spec"])
            if obj["kind"] == "LeaderWorkerSet":  # ignoreDifferences + RespectIgnoreDifferences
                replicas = applied_replicas(live, obj)
                spec["replicas"] = 1 if replicas is None else replicas  # a field dropped: the API's default
            live["metadata"]["labels"] = obj["metadata"]["labels"]
            live["metadata"]["annotations"] = obj["metadata"].get("annotations", {})
            if spec != before:
                live["spec"] = spec
                live["metadata"]["generation"] += 1
            self.cluster._stamp(live)

    def snapshot(self, ds, namespace=NS, services=True, scalers=False):
        """The live objects of the set `ds` (or of the set named `ds`, as a rollout asks)."""
        return self.cluster.snapshot(getattr(ds, "name", ds))

    def rollout_state(self, set_name, namespace):
        return self.served

    def wait_for_change(self, set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet",
                        state_version=None):
        self.watches.append(timeout)
        self.state_versions.append(state_version)  # None: the watch is blind to the RolloutState
        sync = self.syncs.pop(0) if self.syncs else None
        if sync is None:
            if self.clock is not None:
                self.clock[0] += timeout  # a quiet watch lasts its whole timeout
            return False
        sync()
        return True


def applied_replicas(live: dict, target: dict) -> int | None:
    """The spec.replicas Argo CD applies to an LWS under the shipped Application's rule
    (REPLICAS_OWNER_JQ): the target's unless the rule strips it from the target; then the live
    one if it strips it from the live object too, else none (server-side apply then drops the
    field). tests/unit/argocd/test_sync_targets.py holds this to Argo CD's own code."""
    def ignored(obj: dict, is_live: bool) -> bool:
        owner = (obj["metadata"].get("annotations") or {}).get(naming.REPLICAS_OWNER_ANNOTATION)
        return owner == naming.REPLICAS_OWNER_AUTOSCALER or (owner == naming.REPLICAS_OWNER_HANDING_BACK and is_live)

    if not ignored(target, False):
        return target["spec"].get("replicas")
    return live["spec"].get("replicas") if ignored(live, True) else None


def roll(argo: MemoryArgo, ds, state, *, limit: int = 50) -> tuple[object, list[GitopsStep]]:
    """Rounds of sync → settle → step → commit until complete; invariants after every sync."""
    steps = []
    initial = {s: dict(roles) for s, roles in _totals(argo.cluster).items()}
    for _ in range(limit):
        argo.sync(ds, state)
        check_invariants(ds, argo.cluster, initial)
        _check_services(argo.cluster)
        argo.cluster.settle()
        step = gitops_step(ds, state, argo.snapshot(ds), argo.served)
        steps.append(step)
        if step.outcome == Outcome.COMPLETE:
            return state, steps
        assert step.outcome == Outcome.ADVANCED, step
        state = round_trip(step.state, ds)
    raise AssertionError("the rollout did not complete")


def _totals(cluster):
    return {s: {role: sum(g.get(role, 0) for g in groups.values()) for g in groups.values() for role in g}
            for s, groups in groups_by_slice(cluster).items()}


def _check_services(cluster):
    services = {name for (kind, name) in cluster.objects if kind == "Service"}
    for (kind, name) in cluster.objects:
        if kind == "LeaderWorkerSet":
            assert name + naming.SERVICE_SUFFIX in services, name


def assert_steady(argo, ds):
    wanted = {(o["kind"], o["metadata"]["name"]): o for o in render_set(ds, NS)}
    assert sorted(argo.cluster.objects) == sorted(wanted)
    for key, obj in wanted.items():
        live = argo.cluster.objects[key]
        spec = live["spec"] if "replicas" in obj["spec"] else {k: v for k, v in live["spec"].items() if k != "replicas"}
        assert spec == obj["spec"], key  # (an External role's size is the autoscaler's)
        assert live["metadata"]["labels"] == obj["metadata"]["labels"], key


def deploy(ds):
    argo = MemoryArgo()
    state, steps = roll(argo, ds, None)
    assert steps[0].outcome == Outcome.ADVANCED and steps[-1].outcome == Outcome.COMPLETE
    assert_steady(argo, ds)
    return argo, state
