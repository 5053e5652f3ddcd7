"""RoleScalers against the real kube-apiserver (the upstream CRD, with its /scale subresource)."""

from __future__ import annotations

import json

import pytest

from tests.support.controller import with_external_decode
from tests.support.stepping import SET, Stepper, cli, model, write_set


@pytest.fixture
def stepper(control_plane, namespace, capsys, lws_simulator, api_client) -> Stepper:
    return Stepper(control_plane, namespace, capsys, lws_simulator, api_client)


def test_an_autoscaler_scales_the_role_through_its_scaler(stepper, tmp_path):
    path = with_external_decode(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    stepper.drive(path)
    scaler = json.loads(stepper.control_plane.kubectl(
        "get", "disaggregatedsetrolescaler", f"{SET}-decode", "-n", stepper.namespace, "-o", "json").stdout)
    assert scaler["spec"] == {"replicas": 1}
    assert scaler["status"] == {"replicas": 1, "selector": f"disaggregatedset.x-k8s.io/name={SET},"
                                "disaggregatedset.x-k8s.io/role=decode,leaderworkerset.sigs.k8s.io/worker-index=0"}

    # What an HPA or KEDA does: write the scaler's /scale subresource.
    stepper.control_plane.kubectl("scale", "disaggregatedsetrolescaler", f"{SET}-decode", "--replicas", "3",
                                  "-n", stepper.namespace)
    run = stepper(path, "-o", "json")  # (drive's invariants assume the file's replicas)
    assert [a["action"] for a in run.json()["slices"][0]["actions"]] == [
        f"scale leaderworkerset/{SET}-0-{model(path).revision}-decode 1 → 3"]
    stepper.simulator.sync(stepper.namespace)
    revision = model(path).revision
    assert stepper.live.groups() == {0: {revision: {"prefill": 1, "decode": 3}}}
    code, out, _ = cli(stepper, "rollout", "status", "-f", str(path), "-o", "json")
    assert code == 0, out
    assert json.loads(out)["status"]["roleStatuses"][1] == {
        "name": "decode", "replicas": 3, "readyReplicas": 3, "updatedReplicas": 3}
    assert stepper(path, "--dry-run", "-o", "json").json()["slices"][0]["actions"] == []
