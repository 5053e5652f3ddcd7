"""Concurrent writes (`--max-in-flight`) against the real API server: a 409 in the middle of a
rollout start over several slices, and a write failing inside a revision group while other
slices' writes are in flight. Each leaves a state the next passes converge from."""

from __future__ import annotations

from kubectl_disagg.core.controller.reconcile import Scale
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import StepExit
from kubectl_disagg.kube.executor import ClusterExecutor
from tests.support.stepping import assert_matches_render, model, write_set

SLICES = 6


def test_a_409_in_the_middle_of_a_concurrent_rollout_start_converges(stepper, tmp_path, monkeypatch):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, slices=SLICES))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, slices=SLICES, image="img:2")
    old_revision = next(iter(stepper.live.groups()[3]))
    real_snapshot = ClusterExecutor.snapshot
    moved: list[str] = []

    def snapshot(self, set_name, namespace, services=True, scalers=False):
        read = real_snapshot(self, set_name, namespace, services)
        if not moved:  # someone scales slice 3's prefill by hand right after the read
            (target,) = [o for o in read.lws if o.identity.slice == 3 and o.identity.role == "prefill"]
            stepper.control_plane.request(
                "PATCH", f"/apis/leaderworkerset.x-k8s.io/v1/namespaces/{namespace}/leaderworkersets/{target.name}",
                {"spec": {"replicas": 2}}, content_type="application/merge-patch+json")
            moved.append(target.name)
        return read

    monkeypatch.setattr(ClusterExecutor, "snapshot", snapshot)
    run = stepper(path, "--max-in-flight", str(SLICES))
    assert run.code == StepExit.ERROR
    assert f"leaderworkerset/{moved[0]} changed since it was read" in run.err
    groups = stepper.live.groups()
    assert set(groups[3]) == {old_revision}  # slice 3 stopped before its creates
    assert groups[3][old_revision]["prefill"] == 2
    monkeypatch.setattr(ClusterExecutor, "snapshot", real_snapshot)
    stepper.drive(path)
    assert_matches_render(model(path), stepper.live)


def test_a_failure_inside_a_group_is_undone_while_other_slices_write(stepper, tmp_path, monkeypatch):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, slices=SLICES))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, slices=SLICES, image="img:2")
    assert stepper(path, "--max-in-flight", "4").code == StepExit.OK  # rollout started in every slice
    stepper.simulator.sync(stepper.namespace)
    real_execute = ClusterExecutor.execute
    failed: list[str] = []

    def execute(self, action, namespace=None):
        # Slice 2's new decode (0 → 1) fails after its prefill 0 → 1 landed.
        if (isinstance(action, Scale) and action.slice == 2 and action.from_replicas == 0
                and action.name.endswith("-decode")):
            failed.append(action.name)
            raise UserError(f"leaderworkerset/{action.name}: the API server answered 500 InternalError: boom")
        return real_execute(self, action, namespace)

    monkeypatch.setattr(ClusterExecutor, "execute", execute)
    run = stepper(path, "--max-in-flight", "4")
    assert run.code == StepExit.ERROR and failed
    prefill = failed[0].removesuffix("-decode") + "-prefill"
    assert f"undid: scale leaderworkerset/{prefill} 0 → 1" in run.err
    new_revision = model(path).revision
    assert stepper.live.groups()[2][new_revision] == {"prefill": 0, "decode": 0}  # never split
    for groups in stepper.live.groups().values():  # no slice's new group was left split
        new = groups[new_revision]
        assert new["prefill"] == new["decode"]
    monkeypatch.setattr(ClusterExecutor, "execute", real_execute)
    stepper.drive(path)
    assert_matches_render(model(path), stepper.live)
