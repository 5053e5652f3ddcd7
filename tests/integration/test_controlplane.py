"""The local control plane and the LWS status simulator, against the real
kube-apiserver."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from testenv import controlplane
from testenv.controlplane import REQUIRED_CRDS, ControlPlane, ControlPlaneError
from testenv.lws_simulator import LWSSimulator

LWS_API = ("leaderworkerset.x-k8s.io", "v1")
LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1"


def lws_manifest(name: str, replicas: int | None = None, labels: dict | None = None) -> dict:
    """A minimal valid LeaderWorkerSet (no replicas field when None)."""
    spec: dict = {
        "leaderWorkerTemplate": {
            "size": 2,
            "workerTemplate": {"spec": {"containers": [{"name": "w", "image": "registry.example/w:1"}]}},
        }
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


def create_lws(cp: ControlPlane, namespace: str, name: str, replicas: int | None = None,
               labels: dict | None = None) -> dict:
    return cp.request("POST", f"{LWS_PATH}/namespaces/{namespace}/leaderworkersets",
                      lws_manifest(name, replicas, labels))


def get_lws(cp: ControlPlane, namespace: str, name: str) -> dict:
    return cp.request("GET", f"{LWS_PATH}/namespaces/{namespace}/leaderworkersets/{name}")


def scale_lws(cp: ControlPlane, namespace: str, name: str, replicas: int) -> dict:
    return cp.request("PATCH", f"{LWS_PATH}/namespaces/{namespace}/leaderworkersets/{name}",
                      {"spec": {"replicas": replicas}}, content_type="application/merge-patch+json")


def status_of(cp: ControlPlane, namespace: str, name: str) -> dict:
    """The LWS's status counts (its conditions: `conditions_of`)."""
    status = dict(get_lws(cp, namespace, name).get("status") or {})
    status.pop("conditions", None)
    return status


def conditions_of(cp: ControlPlane, namespace: str, name: str) -> list[tuple[str, str]]:
    return [(c["type"], c["status"]) for c in (get_lws(cp, namespace, name).get("status") or {}).get("conditions", [])]


def leftover_processes(marker: str) -> list[int]:
    """PIDs whose command line mentions ``marker`` (a control plane's work dir)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue  # exited meanwhile
        if marker.encode() in cmdline:
            pids.append(int(proc.name))
    return pids


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --------------------------------------------------------------------------
# The API server and the CRDs


def test_required_crds_are_established(control_plane):
    for name in REQUIRED_CRDS:
        crd = control_plane.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions.get("Established") == "True", name
        assert conditions.get("NamesAccepted") == "True", name


def test_lws_created_and_listed_by_label(control_plane, namespace, api_client):
    create_lws(control_plane, namespace, "prefill", 2, labels={"app": "a", "role": "prefill"})
    create_lws(control_plane, namespace, "decode", 1, labels={"app": "a", "role": "decode"})
    create_lws(control_plane, namespace, "other", 1, labels={"app": "b"})

    api = client.CustomObjectsApi(api_client)
    listed = api.list_namespaced_custom_object(*LWS_API, namespace, "leaderworkersets", label_selector="app=a")
    assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["decode", "prefill"]

    # The schema applies its defaults: a real CRD (the upstream or the project's), not a stub.
    assert get_lws(control_plane, namespace, "prefill")["spec"]["startupPolicy"] == "LeaderCreated"


def test_lws_schema_validation_rejects_invalid_objects(control_plane, namespace):
    invalid = lws_manifest("broken")
    del invalid["spec"]["leaderWorkerTemplate"]
    with pytest.raises(urllib.error.HTTPError) as err:
        control_plane.request("POST", f"{LWS_PATH}/namespaces/{namespace}/leaderworkersets", invalid)
    assert err.value.code == 422
    assert "leaderWorkerTemplate" in err.value.read().decode()


def test_kubectl_server_side_dry_run_creates_nothing(control_plane, namespace):
    manifest = yaml.safe_dump(lws_manifest("dry", 3))
    out = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-n", namespace,
                                "-f", "-", input=manifest)
    assert "serverside-applied (server dry run)" in out.stdout
    listed = json.loads(control_plane.kubectl("get", "leaderworkersets", "-n", namespace, "-o", "json").stdout)
    assert listed["items"] == []


def test_kubectl_matches_the_api_server_version(control_plane):
    version = json.loads(control_plane.kubectl("version", "-o", "json").stdout)
    assert version["clientVersion"]["gitVersion"] == version["serverVersion"]["gitVersion"]


# --------------------------------------------------------------------------
# Authentication and RBAC


def test_viewer_reads_default_namespace_only(control_plane, namespace):
    create_lws(control_plane, "default", "visible", 1)
    try:
        out = control_plane.kubectl("get", "leaderworkersets", "-n", "default", "-o", "name", user="viewer")
        assert "leaderworkerset.leaderworkerset.x-k8s.io/visible" in out.stdout

        denied = control_plane.kubectl("get", "leaderworkersets", "-n", namespace, user="viewer", check=False)
        assert denied.returncode != 0
        assert "Forbidden" in denied.stderr
    finally:
        control_plane.request("DELETE", f"{LWS_PATH}/namespaces/default/leaderworkersets/visible")


def test_viewer_cannot_create_lws(control_plane):
    with control_plane.api_client("viewer") as viewer:
        api = client.CustomObjectsApi(viewer)
        with pytest.raises(ApiException) as err:
            api.create_namespaced_custom_object(*LWS_API, "default", "leaderworkersets", lws_manifest("nope", 1))
    assert err.value.status == 403
    assert 'User "viewer" cannot create' in json.loads(err.value.body)["message"]


def test_nobody_cannot_list_lws(control_plane):
    with control_plane.api_client("nobody") as nobody:
        api = client.CustomObjectsApi(nobody)
        with pytest.raises(ApiException) as err:
            api.list_namespaced_custom_object(*LWS_API, "default", "leaderworkersets")
    assert err.value.status == 403


def test_unknown_token_is_unauthenticated(control_plane):
    control_plane._tokens["intruder"] = "not-a-valid-token"
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            control_plane.request("GET", "/api/v1/namespaces", user="intruder")
    finally:
        del control_plane._tokens["intruder"]
    assert err.value.code == 401


# --------------------------------------------------------------------------
# LWS status simulator


def test_simulator_follows_spec_replicas(control_plane, namespace, lws_simulator):
    create_lws(control_plane, namespace, "three", 3)
    create_lws(control_plane, namespace, "implicit")  # no spec.replicas: counts 1

    assert lws_simulator.sync(namespace) == ["implicit", "three"]
    assert status_of(control_plane, namespace, "three") == {
        "replicas": 3, "readyReplicas": 3, "updatedReplicas": 3, "observedGeneration": 1}
    assert status_of(control_plane, namespace, "implicit")["readyReplicas"] == 1
    assert lws_simulator.sync(namespace) == []  # already up to date: no writes

    scale_lws(control_plane, namespace, "three", 5)
    before = get_lws(control_plane, namespace, "three")
    assert before["metadata"]["generation"] == 2
    assert before["status"]["observedGeneration"] == 1  # nobody else writes status

    assert lws_simulator.sync(namespace) == ["three"]
    assert status_of(control_plane, namespace, "three") == {
        "replicas": 5, "readyReplicas": 5, "updatedReplicas": 5, "observedGeneration": 2}


def test_simulator_keeps_conditions_as_the_lws_controller_does(control_plane, namespace, lws_simulator):
    # The LWS controller adds Available the first time it holds and only flips it afterwards:
    # an LWS that was ever available keeps the condition through a scale-up.
    create_lws(control_plane, namespace, "grows", 2)
    lws_simulator.never_ready("grows")
    lws_simulator.sync(namespace)
    assert conditions_of(control_plane, namespace, "grows") == [("Progressing", "True")]
    lws_simulator.healthy("grows")
    lws_simulator.sync(namespace)
    assert conditions_of(control_plane, namespace, "grows") == [("Progressing", "False"), ("Available", "True")]
    scale_lws(control_plane, namespace, "grows", 3)
    lws_simulator.partially_ready(2, name="grows")
    lws_simulator.sync(namespace)
    assert conditions_of(control_plane, namespace, "grows") == [("Progressing", "True"), ("Available", "False")]


def test_simulator_reports_a_new_lws_at_zero_with_no_counts_and_only_available(control_plane, namespace,
                                                                              lws_simulator):
    create_lws(control_plane, namespace, "empty", 0)
    lws_simulator.sync(namespace)
    assert status_of(control_plane, namespace, "empty") == {"observedGeneration": 1}
    assert conditions_of(control_plane, namespace, "empty") == [("Available", "True")]


def test_simulator_advances_a_scale_the_way_the_lws_controller_reports_it(control_plane, namespace, lws_simulator):
    create_lws(control_plane, namespace, "moving", 3)
    lws_simulator.sync(namespace)
    scale_lws(control_plane, namespace, "moving", 5)
    # Up: the new generation observed first, the groups being created updated but not yet
    # counted or ready; then there.
    assert lws_simulator.advance(namespace) == ["moving"]
    assert status_of(control_plane, namespace, "moving") == {
        "replicas": 3, "readyReplicas": 3, "updatedReplicas": 5, "observedGeneration": 2}
    assert conditions_of(control_plane, namespace, "moving") == [("Available", "False"), ("Progressing", "True")]
    assert lws_simulator.advance(namespace) == ["moving"]
    assert status_of(control_plane, namespace, "moving") == {
        "replicas": 5, "readyReplicas": 5, "updatedReplicas": 5, "observedGeneration": 2}
    # Down: observed at once, the groups being removed still counted and ready for a while.
    scale_lws(control_plane, namespace, "moving", 2)
    lws_simulator.advance(namespace)
    assert status_of(control_plane, namespace, "moving") == {
        "replicas": 5, "readyReplicas": 5, "updatedReplicas": 5, "observedGeneration": 3}
    lws_simulator.advance(namespace)
    assert status_of(control_plane, namespace, "moving") == {
        "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "observedGeneration": 3}
    assert lws_simulator.advance(namespace) == []


def test_simulator_sync_honours_label_selector(control_plane, namespace, lws_simulator):
    create_lws(control_plane, namespace, "mine", 1, labels={"team": "a"})
    create_lws(control_plane, namespace, "theirs", 1, labels={"team": "b"})
    assert lws_simulator.sync(namespace, label_selector="team=a") == ["mine"]
    assert status_of(control_plane, namespace, "theirs") == {}


def test_simulator_never_ready(control_plane, namespace, lws_simulator):
    create_lws(control_plane, namespace, "stuck", 2)
    create_lws(control_plane, namespace, "fine", 2)
    lws_simulator.never_ready("stuck")
    lws_simulator.sync(namespace)
    assert status_of(control_plane, namespace, "stuck") == {  # zero left out, as the LWS API does
        "replicas": 2, "updatedReplicas": 2, "observedGeneration": 1}
    assert status_of(control_plane, namespace, "fine")["readyReplicas"] == 2


def test_simulator_partially_ready_caps_ready(control_plane, namespace, lws_simulator):
    create_lws(control_plane, namespace, "big", 4, labels={"capacity": "scarce"})
    create_lws(control_plane, namespace, "small", 1, labels={"capacity": "scarce"})
    lws_simulator.partially_ready(2, labels={"capacity": "scarce"})
    lws_simulator.sync(namespace)
    assert status_of(control_plane, namespace, "big")["readyReplicas"] == 2
    assert status_of(control_plane, namespace, "big")["replicas"] == 4
    assert status_of(control_plane, namespace, "small")["readyReplicas"] == 1


def test_simulator_latest_rule_wins(control_plane, namespace, lws_simulator):
    create_lws(control_plane, namespace, "a", 2, labels={"set": "x"})
    create_lws(control_plane, namespace, "b", 2, labels={"set": "x"})
    lws_simulator.never_ready(labels={"set": "x"})
    lws_simulator.healthy(predicate=lambda lws: lws["metadata"]["name"] == "b")
    lws_simulator.sync(namespace)
    assert "readyReplicas" not in status_of(control_plane, namespace, "a")  # zero: left out
    assert status_of(control_plane, namespace, "b")["readyReplicas"] == 2


def test_simulator_stale_leaves_status_behind(control_plane, namespace, lws_simulator):
    create_lws(control_plane, namespace, "frozen", 2)
    lws_simulator.sync(namespace)
    lws_simulator.stale("frozen")
    scale_lws(control_plane, namespace, "frozen", 4)

    assert lws_simulator.sync(namespace) == []
    lws = get_lws(control_plane, namespace, "frozen")
    assert lws["metadata"]["generation"] == 2
    assert status_of(control_plane, namespace, "frozen") == {
        "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "observedGeneration": 1}


def test_simulator_legacy_controller_omits_observed_generation(control_plane, namespace, api_client):
    create_lws(control_plane, namespace, "old", 2)
    LWSSimulator(api_client, observed_generation=False).sync(namespace)
    assert status_of(control_plane, namespace, "old") == {
        "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2}


def test_simulator_status_writes_need_status_permission(control_plane, namespace):
    create_lws(control_plane, "default", "ro", 1)
    try:
        with control_plane.api_client("viewer") as viewer, pytest.raises(ApiException) as err:
            LWSSimulator(viewer).sync("default")
        assert err.value.status == 403
        assert status_of(control_plane, "default", "ro") == {}
    finally:
        control_plane.request("DELETE", f"{LWS_PATH}/namespaces/default/leaderworkersets/ro")


def test_simulator_background_mode_follows_after_delay(control_plane, namespace, lws_simulator):
    delay = 0.5
    with lws_simulator.running(namespace, delay=delay, interval=0.05):
        started = time.monotonic()
        create_lws(control_plane, namespace, "bg", 2)
        wait_for(lambda: status_of(control_plane, namespace, "bg").get("readyReplicas") == 2)
        # The loop first sees the LWS after `started`, then waits `delay`.
        assert time.monotonic() - started >= delay

        scale_lws(control_plane, namespace, "bg", 3)
        # Half way the new generation is observed with the new group not yet ready, then it is.
        wait_for(lambda: status_of(control_plane, namespace, "bg").get("observedGeneration") == 2)
        wait_for(lambda: status_of(control_plane, namespace, "bg").get("readyReplicas") == 3)
        assert status_of(control_plane, namespace, "bg")["observedGeneration"] == 2
    assert lws_simulator.errors == []


def wait_for(condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


# --------------------------------------------------------------------------
# Lifecycle: errors and teardown leave nothing behind. These start their own
# control planes (a few seconds each).


def test_stop_leaves_no_processes_or_files(control_plane):
    cp = ControlPlane(bin_dir=control_plane.bin_dir)
    cp.start()
    pids, workdir = cp.pids, cp.workdir
    assert set(pids) == {"etcd", "kube-apiserver"}
    assert all(pid_alive(pid) for pid in pids.values())

    cp.stop()
    assert not any(pid_alive(pid) for pid in pids.values())
    assert not workdir.exists()
    assert leftover_processes(str(workdir)) == []
    cp.stop()  # idempotent


@pytest.mark.parametrize("component_port", [0, 2], ids=["etcd", "kube-apiserver"])
def test_start_retries_when_a_port_is_taken(control_plane, monkeypatch, component_port):
    real_free_ports = controlplane._free_ports
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        calls = []

        def first_offer_taken_port(count):
            ports = real_free_ports(count)
            if not calls:
                ports[component_port] = taken  # order: etcd client, etcd peer, apiserver
            calls.append(ports)
            return ports

        monkeypatch.setattr(controlplane, "_free_ports", first_offer_taken_port)
        with ControlPlane(bin_dir=control_plane.bin_dir) as cp:
            assert len(calls) == 2
            assert not cp.server.endswith(f":{taken}")
            assert cp.kubectl("get", "namespace", "default", "-o", "name").stdout.strip() == "namespace/default"


def test_failed_start_reports_log_and_cleans_up(control_plane, monkeypatch):
    monkeypatch.setattr(controlplane, "SERVICE_CIDR", "not-a-cidr")
    cp = ControlPlane(bin_dir=control_plane.bin_dir)
    with pytest.raises(ControlPlaneError) as err:
        cp.start()
    message = str(err.value)
    assert "kube-apiserver exited" in message
    assert "is not a valid cidr" in message  # the tail of the apiserver log
    assert cp.pids == {}
    assert not cp.workdir.exists()
    assert leftover_processes(str(cp.workdir)) == []


def test_ctrl_c_during_start_cleans_up(control_plane, monkeypatch):
    real_wait = ControlPlane._wait

    def interrupted_once_apiserver_runs(self, proc, *args):
        if proc.name == "kube-apiserver":
            raise KeyboardInterrupt  # as if Ctrl-C hit while waiting for /readyz
        real_wait(self, proc, *args)

    monkeypatch.setattr(ControlPlane, "_wait", interrupted_once_apiserver_runs)
    cp = ControlPlane(bin_dir=control_plane.bin_dir)
    with pytest.raises(KeyboardInterrupt):
        cp.start()
    assert cp.pids == {}
    assert not cp.workdir.exists()
    assert leftover_processes(str(cp.workdir)) == []


@pytest.mark.parametrize(("sig", "returncode"), [
    (signal.SIGINT, 0),                   # Ctrl-C: the documented way to stop it
    (signal.SIGTERM, -signal.SIGTERM),    # safety net: clean up, then die by the signal
], ids=["SIGINT", "SIGTERM"])
def test_module_entry_point_serves_until_signalled(control_plane, sig, returncode):
    env = {**os.environ, controlplane.ENV_BIN_DIR: str(control_plane.bin_dir)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "testenv.controlplane"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("export KUBECONFIG="), proc.stderr.read() if proc.poll() is not None else line
        kubeconfig = Path(line.strip().split("=", 1)[1])
        out = subprocess.run(
            [str(control_plane.bin_dir / "kubectl"), f"--kubeconfig={kubeconfig}", "get", "crd", "-o", "name"],
            capture_output=True, text=True, check=True,
        ).stdout
        assert "leaderworkersets.leaderworkerset.x-k8s.io" in out

        proc.send_signal(sig)
        assert proc.wait(timeout=30) == returncode
        assert not kubeconfig.parent.exists()
        assert leftover_processes(str(kubeconfig.parent)) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
