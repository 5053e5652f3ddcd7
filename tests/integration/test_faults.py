"""Faults on the wire and SIGKILLs at each write of a rollout, through real proxies.

The rollout under test ({prefill: 1, decode: 1}, img:1 → img:2) takes four passes and 14
writes. To hit write W of pass P, passes 1..P-1 run cleanly (status settled after each by the
LWS simulator, so nothing else writes during a pass and the order of writes is fixed), then
pass P runs through testenv/faults.py's path, where faultproxy counts the writes to
leaderworkersets and services and hits the Wth one:

* HTTP 500, 409, 429 with Retry-After: answered by faultproxy, the write never lands;
* timeout, reset, latency, cut: a toxiproxy toxic on the client's connection for exactly that
  write's answer, the write lands and its answer is dropped, closed, delayed or cut;
* SIGKILL: faultproxy holds the write, the stepper (a subprocess) is killed while waiting.

A stepper that saw the fault must leave no revision group split. Then `rollout step
--until-complete` on the direct path (the simulator writing status in the background) must
finish the rollout, ending in what `render` says. Meanwhile a WATCH on the set's LWS records
every replica state the API server went through, and at each recorded point:

* per slice and role, old + new never exceeds target + max(surge, 1);
* a split revision group (some roles at 0, others above 0) is repaired by the next recorded
  change: no group stays split for longer than one write.
"""

from __future__ import annotations

import datetime
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kubernetes import client

from kubectl_disagg.cli import main
from kubectl_disagg.core.api.rollout_config import resolve_config
from kubectl_disagg.exits import StepExit
from testenv.faults import CONTEXT, FaultPath, ensure_fault_binaries
from tests.support.faults import Recorder
from tests.support.stepping import Live, Run, SET, Stepper, assert_matches_render, model, write_set


# --- the watch recorder --------------------------------------------------------------------------


def splits(point: dict) -> set[tuple[int, str]]:
    """The (slice, revision) groups with some roles at 0 and others above 0."""
    groups: dict[tuple[int, str], list[int]] = {}
    for (slice_index, revision, _), replicas in point.items():
        groups.setdefault((slice_index, revision), []).append(replicas)
    return {g for g, counts in groups.items() if 0 in counts and any(counts)}


def split_groups(live: Live) -> dict:
    """The live groups that are split: slice → revision → role → replicas."""
    return {(s, rev): roles for s, groups in live.groups().items() for rev, roles in groups.items()
            if 0 in roles.values() and any(roles.values())}


def check_points(ds, points: list[dict]) -> None:
    """The surge bound at every point; every split repaired by the next point."""
    for index, point in enumerate(points):
        for role in ds.roles:
            ceiling = role.replicas + max(resolve_config(role.rolling_update, role.replicas).surge, 1)
            for slice_index in range(ds.slices):
                total = sum(n for (s, _, r), n in point.items() if (s, r) == (slice_index, role.name))
                assert total <= ceiling, f"point {index}: slice {slice_index} {role.name} {total} > {ceiling}: {point}"
        split = splits(point)
        if index + 1 < len(points):
            lasting = split & splits(points[index + 1])
            assert not lasting, f"points {index}-{index + 1}: {lasting} split for two writes: {points[index:index + 2]}"
        else:
            assert not split, f"ends split: {point}"


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fault_path(control_plane, tmp_path_factory):
    with FaultPath(control_plane, ensure_fault_binaries(), tmp_path_factory.mktemp("faults")) as path:
        yield path


@dataclass
class Rig:
    faults: FaultPath
    stepper: Stepper
    api: client.ApiClient
    recorders: list[Recorder] = field(default_factory=list)

    @property
    def namespace(self) -> str:
        return self.stepper.namespace

    def record(self, name: str = SET) -> Recorder:
        recorder = Recorder(self.api, self.namespace, name)
        self.recorders.append(recorder)
        return recorder

    def faulty_step(self, path: Path, *args: str) -> Run:
        """`rollout step` through the faulty path, in this process (as `kubectl_disagg.cli.main`)."""
        argv = ["rollout", "step", "-f", str(path), "--kubeconfig", str(self.faults.kubeconfig),
                "--context", CONTEXT, *args]
        capsys = self.stepper.capsys
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(argv)
        out, err = capsys.readouterr()
        assert "Traceback" not in err, err
        return Run(exited.value.code, out, err)

    def faulty_process(self, path: Path, *args: str) -> subprocess.Popen:
        """`rollout step` in its own process (to be killed), through the faulty path."""
        argv = [sys.executable, "-m", "kubectl_disagg", "rollout", "step", "-f", str(path),
                "--kubeconfig", str(self.faults.kubeconfig), "--context", CONTEXT, *args]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def passes(self, path: Path, count: int) -> None:
        """`count` clean passes, status settled after each."""
        for _ in range(count):
            run = self.stepper(path)
            assert run.code == StepExit.OK, run.err
            self.stepper.simulator.sync(self.namespace)

    def recover(self, path: Path) -> Run:
        """The same command, run again on the direct path: it must finish the rollout."""
        with self.stepper.simulator.running(self.namespace, delay=0, interval=0.05):
            run = self.stepper(path, "--until-complete", "--timeout", "1m")
        assert run.code == StepExit.OK, run.err
        assert_matches_render(model(path), self.stepper.live)
        return run

    def expire_lease(self, name: str = SET) -> None:
        """What waiting out a dead stepper's Lease would do, without the 30 s wait."""
        past = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        client.CoordinationV1Api(self.api).patch_namespaced_lease(
            f"kubectl-disagg-{name}", self.namespace, {"spec": {"renewTime": past, "acquireTime": past}})


@pytest.fixture
def rig(fault_path, stepper, api_client) -> Rig:
    fault_path.reset()
    rig = Rig(fault_path, stepper, api_client)
    yield rig
    for recorder in rig.recorders:
        recorder.stop()
    fault_path.reset()
    assert fault_path.toxics() == []  # every toxic was taken away


def rollout(rig: Rig, tmp_path: Path) -> tuple[Path, Recorder]:
    """A steady {prefill: 1, decode: 1}, the file of its template change, and a recorder from here."""
    rig.stepper.drive(write_set(tmp_path, rig.namespace, {"prefill": 1, "decode": 1}))
    return write_set(tmp_path, rig.namespace, {"prefill": 1, "decode": 1}, image="img:2"), rig.record()


# --- the rollout under test ----------------------------------------------------------------------

# Writes per pass of that rollout, status settled between passes (nothing else writes during a
# pass, so the order is fixed): 1 starts it (annotate old ×2, create new LWS ×2 at 0, Services ×2),
# 2 scales the new group up (a unit of 2), 3 drains the old group (a unit of 2), 4 deletes the
# old LWS ×2 and Services ×2.
WRITES_PER_PASS = (6, 2, 2, 4)


def test_the_rollout_under_test_makes_these_writes(rig, tmp_path):
    target, recorder = rollout(rig, tmp_path)
    for pass_number, writes in enumerate(WRITES_PER_PASS, 1):
        rig.faults.reset()
        run = rig.faulty_step(target)
        assert run.code == StepExit.OK, run.err
        assert rig.faults.state().writes == writes, (pass_number, run.out)
        rig.stepper.simulator.sync(rig.namespace)
    assert_matches_render(model(target), rig.stepper.live)
    check_points(model(target), recorder.stop())


# --- faults --------------------------------------------------------------------------------------

TOXICS = {
    # toxiproxy drops the answer, then closes the connection after 500 ms (the client's own read
    # timeout is 120 s: too slow to wait out here)
    "timeout": {"type": "timeout", "attributes": {"timeout": 500}},
    # toxiproxy closes the connection as the answer starts to flow (added to a live connection,
    # toxiproxy 2.5.0 closes it without SO_LINGER 0: the client sees the connection dropped)
    "reset": {"type": "reset_peer", "attributes": {"timeout": 0}},
    # the answer arrives 1 s late: the write must simply succeed
    "latency": {"type": "latency", "attributes": {"latency": 1000}},
    # the answer is cut after 200 bytes (headers, or the first bytes of the body)
    "cut": {"type": "limit_data", "attributes": {"bytes": 200}},
}
HTTP_FAULTS = {
    "500": {"status": 500, "body": '{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,'
                                   '"reason":"InternalError","message":"injected"}',
            "headers": {"Content-Type": "application/json"}},
    "409": {"status": 409, "body": '{"kind":"Status","apiVersion":"v1","status":"Failure","code":409,'
                                   '"reason":"Conflict","message":"the object has been modified (injected)"}',
            "headers": {"Content-Type": "application/json"}},
    "429": {"status": 429, "body": '{"kind":"Status","apiVersion":"v1","status":"Failure","code":429,'
                                   '"reason":"TooManyRequests","message":"injected"}',
            "headers": {"Content-Type": "application/json", "Retry-After": "1"}},
}
KINDS = (*HTTP_FAULTS, *TOXICS, "sigkill")

# (pass, write within the pass): every write of the rollout, and a sample of them.
EVERY_WRITE = [(p, w) for p, count in enumerate(WRITES_PER_PASS, 1) for w in range(1, count + 1)]
SAMPLE = [(1, 3), (2, 2), (3, 2)]  # a create, the second scale of each unit
CASES = [(kind, p, w) for kind in KINDS for p, w in (EVERY_WRITE if kind in ("cut", "sigkill") else SAMPLE)]


@pytest.mark.parametrize(("kind", "pass_number", "write"), CASES, ids=[f"{k}-pass{p}-write{w}" for k, p, w in CASES])
def test_a_fault_at_a_write_then_running_again_converges(rig, tmp_path, kind, pass_number, write):
    target, recorder = rollout(rig, tmp_path)
    rig.passes(target, pass_number - 1)

    if kind == "sigkill":
        rig.faults.arm(write, stall=True)
        process = rig.faulty_process(target)
        rig.faults.wait_stalled(process)
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        rig.faults.reset()
        assert process.returncode == -signal.SIGKILL
        rig.expire_lease()
    else:
        if kind in TOXICS:
            rig.faults.arm(write, toxic={"name": kind, "stream": "downstream", **TOXICS[kind]})
        else:
            rig.faults.arm(write, **HTTP_FAULTS[kind])
        run = rig.faulty_step(target)
        assert rig.faults.state().fired
        # A 429 with Retry-After is waited out and the write sent again (as client-go does); a
        # write whose answer was lost (timeout, reset, cut) is sent again, its precondition
        # telling a landed first sending from someone else's change. A 500 without Retry-After
        # and a 409 are the server's verdict on a write: they end the pass.
        assert run.code == (StepExit.ERROR if kind in ("500", "409") else StepExit.OK), run.err
        # A stepper that lived to see the fault leaves no group split behind it, however the
        # write ended (landed or not, answer lost or not): it takes the whole unit back.
        assert not split_groups(rig.stepper.live), run.err

    rig.recover(target)
    check_points(model(target), recorder.stop())


@pytest.mark.parametrize("kind", ["409", "cut"])
def test_until_complete_rides_out_a_conflict_and_a_lost_answer(rig, tmp_path, kind):
    """The fault inside one `--until-complete` run (status written in the background): a 409 is
    read again and stepped past in the same run; a write whose answer was lost is sent again."""
    target, recorder = rollout(rig, tmp_path)
    fault = {"toxic": {"name": kind, "stream": "downstream", **TOXICS[kind]}} if kind in TOXICS else HTTP_FAULTS[kind]
    rig.faults.arm(8, **fault)  # the second scale of the scale-up unit, when nothing else conflicts
    with rig.stepper.simulator.running(rig.namespace, delay=0, interval=0.05):
        run = rig.faulty_step(target, "--until-complete", "--timeout", "1m")
    assert rig.faults.state().fired
    assert run.code == StepExit.OK, run.err
    if kind == "409":
        assert "409" in run.err and "reading the state again" in run.err
    assert_matches_render(model(target), rig.stepper.live)
    check_points(model(target), recorder.stop())


# --- a path that loses a quarter of its connections ----------------------------------------------


@dataclass
class Losses:
    """Every request of the client that got no answer: whether it had left whole."""

    before_sending: int = 0  # reset in the TLS handshake: nothing reached the server
    after_sending: int = 0  # cut in the middle of the answer: it may have landed
    requests: int = 0
    connections: int = 0


def test_a_whole_rollout_through_a_path_resetting_a_quarter_of_its_connections_completes_in_one_run(
        rig, tmp_path, monkeypatch):
    """A quarter of the connections reset at their first bytes, and a quarter cut after their
    first 4 KiB from the server (in the middle of some answer, after its request landed), both
    by toxiproxy's dice; and, so that every run meets at least one loss, the answer to the 8th
    write reset as it flows: one `rollout step --until-complete` run must finish the whole
    rollout, every read and write that got no answer sent again as `retry.retrying` allows."""
    from kubectl_disagg.kube.client.transport import NetworkError, Transport

    losses, request, connect = Losses(), Transport.request, Transport._connect

    def connecting(self, *args):
        losses.connections += 1
        return connect(self, *args)

    def counted(self, *args, **kwargs):
        losses.requests += 1
        try:
            return request(self, *args, **kwargs)
        except NetworkError as err:
            if err.sent:
                losses.after_sending += 1
            else:
                losses.before_sending += 1
            raise

    monkeypatch.setattr(Transport, "request", counted)
    monkeypatch.setattr(Transport, "_connect", connecting)
    target, recorder = rollout(rig, tmp_path)
    rig.faults.arm(8, toxic={"name": "reset", "stream": "downstream", **TOXICS["reset"]})
    with rig.faults.toxic(name="reset-a-quarter", type="reset_peer", stream="downstream", toxicity=0.25,
                          attributes={"timeout": 0}), \
            rig.faults.toxic(name="cut-a-quarter", type="limit_data", stream="downstream", toxicity=0.25,
                             attributes={"bytes": 4096}), \
            rig.stepper.simulator.running(rig.namespace, delay=0, interval=0.05):
        run = rig.faulty_step(target, "--until-complete", "--timeout", "2m")
    assert run.code == StepExit.OK, run.err
    assert_matches_render(model(target), rig.stepper.live)
    check_points(model(target), recorder.stop())
    assert rig.faults.state().fired and losses.after_sending >= 1, losses  # the armed reset at least
    print(f"connections lost: {losses}")


# --- a signal, a restarting API server, a permission revoked: mid-unit (issue 34, item 5) ----------


def wait_fired(faults: FaultPath, process: subprocess.Popen, timeout: float = 60.0) -> None:
    """Until the armed write has arrived at faultproxy; fail at once if `process` exits first."""
    deadline = time.monotonic() + timeout
    while not faults.state().fired:
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"exited {process.returncode} before the armed write:\n{out}{err}")
        assert time.monotonic() < deadline, "the armed write never came"
        time.sleep(0.01)


def lease_of(rig: Rig, name: str = SET) -> dict | None:
    try:
        return client.CoordinationV1Api(rig.api).read_namespaced_lease(f"kubectl-disagg-{name}", rig.namespace)
    except client.exceptions.ApiException as err:
        if err.status == 404:
            return None
        raise


SIGNAL_CASES = [(name, p) for name in ("SIGTERM", "SIGHUP") for p in (2, 3)]  # the scale-up unit, the drain unit


@pytest.mark.parametrize(("signame", "pass_number"), SIGNAL_CASES, ids=[f"{s}-pass{p}" for s, p in SIGNAL_CASES])
def test_a_termination_signal_mid_unit_lets_the_unit_end_and_releases_the_lease(rig, tmp_path, signame,
                                                                                 pass_number):
    """The signal arrives while the unit's first write is out (its answer held back 1 s): the
    unit's other write still goes, the process exits 128 + the signal, the Lease is released
    at once (not left to lapse in 30 s), and no group is split."""
    target, recorder = rollout(rig, tmp_path)
    rig.passes(target, pass_number - 1)
    rig.faults.arm(1, toxic={"name": "latency", "stream": "downstream", **TOXICS["latency"]})
    process = rig.faulty_process(target)
    wait_fired(rig.faults, process)
    process.send_signal(getattr(signal, signame))
    out, err = process.communicate(timeout=60)
    assert process.returncode == 128 + getattr(signal, signame), err
    assert f"Terminated ({signame})." in err and "Traceback" not in err, err
    assert rig.faults.state().writes == WRITES_PER_PASS[pass_number - 1]  # the whole unit, and nothing after it
    assert not split_groups(rig.stepper.live), err
    assert lease_of(rig) is None
    rig.recover(target)
    check_points(model(target), recorder.stop())


def _three_slices(rig: Rig, tmp_path: Path) -> Path:
    """A steady 3-slice {prefill, decode, encode: 1}, its template changed and the rollout started:
    the next pass scales the new group up in every slice, a unit of 3 per slice."""
    replicas = {"prefill": 1, "decode": 1, "encode": 1}
    rig.stepper.drive(write_set(tmp_path, rig.namespace, replicas, slices=3))
    target = write_set(tmp_path, rig.namespace, replicas, slices=3, image="img:2")
    assert rig.stepper(target).code == StepExit.OK  # the rollout starts
    rig.stepper.simulator.sync(rig.namespace)
    return target


def after_first_scale_up(monkeypatch, hook) -> None:
    """Run `hook()` once, right after the first scale-up of a pass has landed."""
    from kubectl_disagg.core.controller.reconcile import Scale
    from kubectl_disagg.kube.executor import ClusterExecutor

    execute, fired = ClusterExecutor.execute, threading.Event()

    def executing(self, action, namespace, **options):
        execute(self, action, namespace, **options)
        if isinstance(action, Scale) and action.to_replicas > action.from_replicas and not fired.is_set():
            fired.set()
            hook()

    monkeypatch.setattr(ClusterExecutor, "execute", executing)


def test_an_api_server_restart_mid_unit_is_waited_out_within_the_timeout(rig, tmp_path, monkeypatch, control_plane):
    """kube-apiserver killed right after the first scale of a unit (every later write and read
    refused): the unit is taken back once the server answers again, and the same
    `--until-complete` run goes on to finish the rollout."""
    from testenv.faults import ApiServerRestart

    target = _three_slices(rig, tmp_path)
    restart = ApiServerRestart(control_plane, down=1.0)
    after_first_scale_up(monkeypatch, restart.kill)
    with rig.stepper.simulator.running(rig.namespace, delay=0, interval=0.05):
        run = rig.stepper(target, "--until-complete", "--timeout", "4m")
    seconds_down = restart.wait()
    print(f"kube-apiserver down for {seconds_down:.1f} s")
    assert run.code == StepExit.OK, run.err
    assert "connection refused" in run.err and "waiting for the API server" in run.err
    assert not split_groups(rig.stepper.live)
    assert_matches_render(model(target), rig.stepper.live)


def test_a_permission_revoked_mid_unit_leaves_no_group_split(rig, tmp_path, monkeypatch, control_plane, namespace):
    """The stepper's `patch` on leaderworkersets revoked right after its first scale (and given
    back 2 s later): every unit cut short is taken back, its undo sent again while it is
    refused, and the pass exits 1 saying what it undid."""
    from tests.support.privilege import Accounts, RBAC_API, STEPPER, without_verb

    accounts = Accounts(control_plane, namespace, tmp_path)
    target = _three_slices(rig, tmp_path)
    role = accounts.role(STEPPER)
    path = f"{RBAC_API}/namespaces/{namespace}/roles/{STEPPER}"
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": f"system:serviceaccount:{namespace}:{STEPPER}",
        "resourceAttributes": {"namespace": namespace, "verb": "patch", "group": "leaderworkerset.x-k8s.io",
                               "resource": "leaderworkersets"}}}

    def allowed() -> bool:
        return control_plane.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                     review)["status"].get("allowed", False)

    def revoke() -> None:
        control_plane.request("PUT", path, without_verb(role, "leaderworkersets", "patch", STEPPER))
        while allowed():  # the authorizer's cache has seen it: the next write is refused
            time.sleep(0.005)
        threading.Timer(2.0, lambda: control_plane.request("PUT", path, role)).start()

    after_first_scale_up(monkeypatch, revoke)
    capsys = rig.stepper.capsys
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["rollout", "step", "-f", str(target), "--kubeconfig", str(accounts.kubeconfig), "--context", STEPPER])
    out, err = capsys.readouterr()
    assert exited.value.code == StepExit.ERROR, err
    assert "forbidden" in err.lower() and "undid: scale leaderworkerset/" in err and "could not undo" not in err, err
    assert not split_groups(rig.stepper.live), err
    deadline = time.monotonic() + 10
    while not allowed() and time.monotonic() < deadline:
        time.sleep(0.05)
    rig.recover(target)
