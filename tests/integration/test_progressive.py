"""Progressive rollouts (design §9) on the real kube-apiserver, driven only through the CLI: a
RolloutPolicy beside the set, the position in the set's RolloutState, the verbs."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from kubectl_disagg.core.api import naming
from kubectl_disagg.exits import StepExit, VerbExit
from tests.support.git_repo import deploy
from tests.support.progressive import (
    CONSOLE_SCRIPT,
    ROLES,
    deployed_then_changed,
    paced,
    process,
    revisions,
    rollout_state,
    until_held_or_complete,
    versions_of,
    versions_of_git,
)
from tests.support.stepping import assert_matches_render, cli, model


def verb(stepper, name: str, directory: Path, *extra: str) -> tuple[int, str, str]:
    return cli(stepper, "rollout", name, "-f", str(directory), *extra)


def start(stepper, tmp_path, spec: dict):
    """The set deployed at img:1, then changed to img:2 under `spec`: (old dir, new dir, old revision)."""
    old, new = deployed_then_changed(stepper, tmp_path, spec)
    return old, new, model(old).revision


def test_the_canary_rolls_alone_and_holds_then_promote_finishes_the_rest(stepper, tmp_path, lws_simulator):
    old, new, stable = start(stepper, tmp_path, {"waves": [{"slices": 1, "pause": {}}, {"slices": "100%"}]})
    untouched = versions_of(stepper, {1, 2, 3})
    run = until_held_or_complete(stepper, new, lws_simulator)
    assert run.code == StepExit.HELD, run.err
    assert "wave 1 is paused: `kubectl disagg rollout promote` starts the next wave" in run.err
    target = model(new).revision
    assert revisions(stepper) == {0: {target}, 1: {stable}, 2: {stable}, 3: {stable}}
    assert versions_of(stepper, {1, 2, 3}) == untouched  # never written: no LWS, no annotation
    state = rollout_state(stepper)
    assert state["rollout"]["phase"] == "AtGate" and state["rollout"]["wave"] == "1/2"
    again = stepper(new)
    assert again.code == StepExit.HELD and versions_of(stepper, {1, 2, 3}) == untouched
    code, out, _ = cli(stepper, "rollout", "status", "-f", str(new))
    assert "RolloutPolicy: AtGate, wave 1 of 2 (slices 0-0)" in out
    assert "held: wave 1 is paused: `kubectl disagg rollout promote` starts the next wave" in out
    listed = stepper.control_plane.kubectl("get", "rolloutstates.kubectl-disagg.x-k8s.io", "-n", stepper.namespace)
    assert listed.stdout.split("\n")[0].split()[:6] == ["NAME", "SET", "REVISION", "STEP", "WAVE", "PHASE"]
    step, wave, phase = listed.stdout.split("\n")[1].split()[3:6]  # issue 47: STEP was empty in the cluster
    assert step == state["rollout"]["step"] and step.startswith("0/") and (wave, phase) == ("1/2", "AtGate")
    events = stepper.control_plane.kubectl("get", "events.events.k8s.io", "-n", stepper.namespace,
                                           "-o", "jsonpath={.items[*].reason}").stdout.split()
    assert {"WaveCompleted"} <= set(events) and "WaveStarted" not in events

    code, out, err = verb(stepper, "promote", new)
    assert code == StepExit.OK, err
    assert "promoted: the pause after wave 1 passed" in out
    gate = rollout_state(stepper)["position"]["gates"][0]
    assert gate["wave"] == 0 and gate["how"] == "promote" and gate["by"] == "admin"
    run = until_held_or_complete(stepper, new, lws_simulator)
    assert run.code == StepExit.OK, run.err
    assert_matches_render(model(new), stepper.live)
    assert rollout_state(stepper)["rollout"]["phase"] == "AtRest"
    events = stepper.control_plane.kubectl("get", "events.events.k8s.io", "-n", stepper.namespace,
                                           "-o", "jsonpath={.items[*].reason}").stdout.split()
    assert {"RolloutPromoted", "WaveStarted"} <= set(events)


def test_max_slices_in_flight_1_never_has_two_slices_mid_rollout(stepper, tmp_path):
    old, new, stable = start(stepper, tmp_path, {"maxSlicesInFlight": 1})
    for _ in range(80):
        run = stepper(new, "-o", "json")
        assert run.code == StepExit.OK, run.err
        mid = [s for s, revs in revisions(stepper).items() if len(revs) > 1]
        assert len(mid) <= 1, revisions(stepper)
        if run.json()["complete"]:
            break
        stepper.simulator.sync(stepper.namespace)
    else:
        raise AssertionError("not complete")
    assert_matches_render(model(new), stepper.live)


def test_pause_holds_and_resume_continues(stepper, tmp_path, lws_simulator):
    old, new, stable = start(stepper, tmp_path, {"maxSlicesInFlight": 2})
    assert stepper(new).code == StepExit.OK  # slices 0 and 1 start
    code, out, err = verb(stepper, "pause", new)
    assert code == StepExit.OK and "paused at wave 1 of 1" in out, err
    before = versions_of(stepper, {0, 1, 2, 3})
    lws_simulator.sync(stepper.namespace)
    settled = versions_of(stepper, {0, 1, 2, 3})
    run = stepper(new)
    assert run.code == StepExit.HELD and "the rollout is paused" in run.err
    assert versions_of(stepper, {0, 1, 2, 3}) == settled and before.keys() == settled.keys()
    assert rollout_state(stepper)["rollout"]["phase"] == "Paused"
    assert verb(stepper, "pause", new)[0] == StepExit.OK  # paused already: no change
    code, out, err = verb(stepper, "resume", new)
    assert code == StepExit.OK and "resumed" in out, err
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.OK
    assert_matches_render(model(new), stepper.live)
    code, _, err = verb(stepper, "resume", new)
    assert code == StepExit.REFUSED and "not paused" in err


def test_abort_after_a_two_slice_wave_brings_both_back_and_never_writes_the_others(stepper, tmp_path,
                                                                                       lws_simulator):
    old, new, stable = start(stepper, tmp_path, {"waves": [{"slices": 2, "pause": {}}]})
    untouched = versions_of(stepper, {2, 3})
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.HELD
    assert revisions(stepper)[1] == {model(new).revision}
    code, out, err = verb(stepper, "abort", new)
    assert code == StepExit.OK, err
    assert f"rolls slices 0-1 back to revision {stable}; slices 2-3 never started" in out  # ranges (issue 47)
    assert rollout_state(stepper)["rollout"]["phase"] == "Aborted"
    run = until_held_or_complete(stepper, new, lws_simulator)
    assert run.code == StepExit.HELD, run.err
    assert "the rollout was aborted and every slice is back at the stable revision" in run.err
    assert revisions(stepper) == {s: {stable} for s in range(4)}
    assert versions_of(stepper, {2, 3}) == untouched
    assert_matches_render(model(old), stepper.live)
    # aborted until the template changes: back to the stable one ends it
    assert until_held_or_complete(stepper, old, lws_simulator).code == StepExit.OK
    assert rollout_state(stepper)["rollout"]["phase"] == "AtRest"


def test_a_soak_passes_on_its_own(stepper, tmp_path, lws_simulator):
    old, new, stable = start(stepper, tmp_path, {"waves": [{"slices": 1, "pause": {"duration": "3s"}}]})
    run = until_held_or_complete(stepper, new, lws_simulator)
    assert run.code == StepExit.HELD and "wave 1 soaks until" in run.err, run.err
    time.sleep(3.5)
    run = until_held_or_complete(stepper, new, lws_simulator)
    assert run.code == StepExit.OK, run.err
    assert_matches_render(model(new), stepper.live)
    gate = rollout_state(stepper)["position"]["gates"][0]
    assert gate["how"] == "duration"
    events = stepper.control_plane.kubectl("get", "events.events.k8s.io", "-n", stepper.namespace,
                                           "-o", "jsonpath={.items[*].reason}").stdout.split()
    assert "GatePassed" in events  # the soak passed on its own


def test_a_stored_set_reads_its_policy_from_the_cluster(stepper, tmp_path, lws_simulator):
    pytest.importorskip("kubernetes")
    old, new, stable = start(stepper, tmp_path, {"waves": [{"slices": 1, "pause": {}}]})
    api = client.CustomObjectsApi(stepper.live.api)
    for path in new.iterdir():
        document = yaml.safe_load(path.read_text())
        group, version = document["apiVersion"].split("/")
        plural = "rolloutpolicies" if document["kind"] == "RolloutPolicy" else "disaggregatedsets"
        api.create_namespaced_custom_object(group, version, stepper.namespace, plural, document)
    with lws_simulator.running(stepper.namespace, delay=0.05, interval=0.05):
        code, out, err = cli(stepper, "rollout", "step", "llm", "-n", stepper.namespace, "--until-complete",
                             "--timeout", "2m")
    assert code == StepExit.HELD, err
    assert revisions(stepper)[1] == {stable}
    assert cli(stepper, "rollout", "promote", "llm", "-n", stepper.namespace)[0] == StepExit.OK


@pytest.mark.parametrize("brake, done", [("pause", "paused"), ("abort", "aborted")])
def test_a_brake_from_another_process_reaches_a_running_until_complete(stepper, tmp_path, lws_simulator, brake,
                                                                       done):
    # Issue 37 item 15: `rollout pause|abort` exited 3 (the Lease is held) while `rollout step
    # --until-complete` ran, and the stepper finished the rollout. Two real processes now: the
    # brake needs no Lease, and the stepper stops (or turns back) at its next boundary.
    assert CONSOLE_SCRIPT.exists(), f"{CONSOLE_SCRIPT} not installed"
    old, new, stable = start(stepper, tmp_path, {"maxSlicesInFlight": 1})
    target, untouched = model(new).revision, versions_of(stepper, {2, 3})
    with lws_simulator.running(stepper.namespace, delay=1.0, interval=0.1):
        running = process(stepper, "rollout", "step", "-f", str(new), "--until-complete", "--timeout", "3m")
        until = time.monotonic() + 90
        while target not in revisions(stepper).get(1, set()):  # slice 0 rolled, slice 1 under way
            assert running.poll() is None and time.monotonic() < until, running.communicate()
            time.sleep(0.05)
        braked = process(stepper, "rollout", brake, "-f", str(new))
        out, err = braked.communicate(timeout=60)
        landed = time.monotonic()
        stepped, stepper_err = running.communicate(timeout=180)
        took = time.monotonic() - landed
    assert braked.returncode == 0, err
    assert "`rollout step` by " in out and f"/{running.pid}/" in out  # the verb names the running stepper
    assert running.returncode == StepExit.HELD, stepper_err
    assert f"the rollout was {done} by " in stepper_err and "while this step ran" in stepper_err
    assert "Traceback" not in stepper_err + err
    assert versions_of(stepper, {2, 3}) == untouched  # never started, never written
    if brake == "pause":
        assert took < 15, took  # one pass, or one quiet watch (10 s), after the pause landed
        assert target not in revisions(stepper).get(2, set())
        assert rollout_state(stepper)["rollout"]["phase"] == "Paused"
    else:  # it turned back: every started slice at the stable revision again
        assert revisions(stepper) == {s: {stable} for s in range(4)}
        assert rollout_state(stepper)["rollout"]["phase"] == "Aborted"
    print(f"{brake}: the stepper exited {took:.2f}s after the verb returned")


def test_item4_7_16_the_position_moves_only_through_its_gates(stepper, tmp_path, lws_simulator):
    """Issue 37 items 7, 4 and 16 against the cluster: a promote while the canary is in flight,
    a RolloutState patched past the canary's gate, an abort after the rollout completed."""
    old, new, stable = start(stepper, tmp_path, {"waves": [{"slices": 1, "pause": {}}]})
    assert stepper(new).code == StepExit.OK  # the canary starts
    written = rollout_state(stepper)["metadata"]["resourceVersion"]
    code, _, err = verb(stepper, "promote", new)
    assert code == VerbExit.REFUSED, err
    assert "the rollout waits at no gate: wave 1 of 2 (slice 0) has 0 of 1 slices done" in err
    assert rollout_state(stepper)["metadata"]["resourceVersion"] == written  # nothing recorded ahead of the gate
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.HELD
    untouched = versions_of(stepper, {1, 2, 3})

    api = client.CustomObjectsApi(stepper.live.api)
    api.patch_namespaced_custom_object("kubectl-disagg.x-k8s.io", "v1alpha1", stepper.namespace, "rolloutstates",
                                       "llm", {"position": {"wave": 1}})
    run = stepper(new)
    assert run.code == StepExit.ERROR, run.err
    assert run.err.splitlines()[0].startswith(
        "rolloutstate/llm: position.wave: is 1 (wave 2), past the pause gate after wave 1, which is not recorded as "
        "passed (position.gates)"), run.err
    assert versions_of(stepper, {1, 2, 3}) == untouched  # the later wave never started
    api.patch_namespaced_custom_object("kubectl-disagg.x-k8s.io", "v1alpha1", stepper.namespace, "rolloutstates",
                                       "llm", {"position": {"wave": 0}})

    assert verb(stepper, "promote", new)[0] == VerbExit.OK
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.OK
    done = rollout_state(stepper)
    assert done["rollout"]["phase"] == "AtRest"
    code, out, err = verb(stepper, "abort", new)
    assert code == VerbExit.REFUSED and out == "", (out, err)
    assert (f"the rollout to {model(new).revision} is complete: nothing to abort; to go back, change the set's "
            "template back") in err
    assert rollout_state(stepper) == done  # untouched: not Aborted, not Degraded


# --- issue 37: slices added, a lost RolloutState, a policy removed ------------------------------


def test_item_2_slices_added_at_the_canary_s_gate_start_at_the_stable_revision(stepper, tmp_path, lws_simulator):
    """`slices` 6 -> 9 with the canary at its `pause: {}` gate: slices 6-8 are created at the
    stable revision, the gate still holds, and promote rolls all nine."""
    spec = {"waves": [{"slices": 1, "pause": {}}, {"slices": "100%"}]}
    old = paced(tmp_path, stepper.namespace, "img:1", spec, slices=6)
    stepper.drive(old)
    stable = model(old).revision
    new = paced(tmp_path, stepper.namespace, "img:2", spec, slices=6)
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.HELD
    (tmp_path / "nine").mkdir()
    nine = paced(tmp_path / "nine", stepper.namespace, "img:2", spec, slices=9)
    target = model(nine).revision
    run = until_held_or_complete(stepper, nine, lws_simulator)
    assert run.code == StepExit.HELD, run.err
    assert "wave 1 is paused" in run.err
    assert revisions(stepper) == {0: {target}, **{s: {stable} for s in range(1, 9)}}
    assert rollout_state(stepper)["rollout"]["phase"] == "AtGate"
    assert verb(stepper, "promote", nine)[0] == StepExit.OK
    assert until_held_or_complete(stepper, nine, lws_simulator).code == StepExit.OK
    assert_matches_render(model(nine), stepper.live)


def test_item_3_a_rollout_state_deleted_after_an_abort_holds_paused(stepper, tmp_path, lws_simulator):
    """The RolloutState deleted after `rollout abort` and one rollback step: the next step does
    not roll the aborted revision forward; it pauses, says why, and `rollout abort` goes on."""
    old, new, stable = start(stepper, tmp_path, {"waves": [{"slices": 2, "pause": {}}]})
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.HELD
    assert verb(stepper, "abort", new)[0] == StepExit.OK
    assert stepper(new).code == StepExit.OK  # one rollback step
    lws_simulator.sync(stepper.namespace)
    client.CustomObjectsApi(stepper.live.api).delete_namespaced_custom_object(
        "kubectl-disagg.x-k8s.io", "v1alpha1", stepper.namespace, "rolloutstates", "llm")
    before = versions_of(stepper, {0, 1, 2, 3})
    run = stepper(new)
    assert run.code == StepExit.HELD, run.err
    assert ("the rollout is paused (no recorded position: the RolloutState of this rollout was not found; "
            f"slices 0-1 already run {model(new).revision})") in run.err
    assert "`kubectl disagg rollout abort` rolls it back to the stable revision" in run.err
    assert versions_of(stepper, {0, 1, 2, 3}) == before
    state = rollout_state(stepper)
    assert state["rollout"]["phase"] == "Paused" and state["position"]["paused"]["by"] == "kubectl-disagg"
    assert stepper(new).code == StepExit.HELD and versions_of(stepper, {0, 1, 2, 3}) == before
    assert verb(stepper, "abort", new)[0] == StepExit.OK
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.HELD
    assert revisions(stepper) == {s: {stable} for s in range(4)}


def test_item_17a_a_policy_removed_mid_rollout_ends_at_rest(stepper, tmp_path, lws_simulator):
    """The policy removed while the canary waits at its gate: the rest rolls as the controller
    does, and the RolloutState it left says AtRest, not AtGate."""
    old, new, stable = start(stepper, tmp_path, {"waves": [{"slices": 1, "pause": {}}]})
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.HELD
    assert rollout_state(stepper)["rollout"]["phase"] == "AtGate"
    (new / "policy.yaml").unlink()
    run = until_held_or_complete(stepper, new, lws_simulator)
    assert run.code == StepExit.OK, run.err
    assert_matches_render(model(new), stepper.live)
    rollout = rollout_state(stepper)["rollout"]
    assert rollout["phase"] == "AtRest" and "no RolloutPolicy: paced as the controller" in rollout["message"]


# --- through git and the Argo CD harness -------------------------------------------------------


def rounds(repo, until: set[int], limit: int = 40):
    """Sync (as Argo CD does) → ready → step → commit, until the step's code is in `until`."""
    for index in range(limit):
        repo.sync()
        repo.simulator.sync(repo.namespace)
        run = repo.step()
        if run.code in until:
            return run
        assert run.code == StepExit.OK, (run.code, run.out, run.err)
        repo.commit(f"rollout step {index}")
    raise AssertionError("never reached")


def test_through_git_the_canary_holds_suspended_and_one_promote_commit_finishes(repo):
    deploy(repo, ROLES, slices=4)
    stable = model(repo.set_file).revision
    policy = {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
              "metadata": {"name": "llm", "namespace": repo.namespace},
              "spec": {"targetRef": {"name": "llm"}, "waves": [{"slices": 1, "pause": {}}]}}
    (repo.root / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    repo.change_set("new image, paced", ROLES, slices=4, image="img:2")
    target = model(repo.set_file).revision
    untouched = versions_of_git(repo, {1, 2, 3})
    held = rounds(repo, {StepExit.HELD})
    # the set's own directory, not the placeholder `-f DIR` (issue 47)
    assert (f"wave 1 is paused: `kubectl disagg rollout promote --gitops -f {shlex.quote(repo.target)}` starts the "
            "next wave") in held.out
    repo.sync()
    assert {s: set(g) for s, g in repo.live.groups().items()} == {0: {target}, 1: {stable}, 2: {stable},
                                                                   3: {stable}}
    assert versions_of_git(repo, {1, 2, 3}) == untouched  # no new revision, no annotation, same spec
    health = repo.state_health()
    assert health["status"] == "Suspended" and "rollout promote --gitops" in health["message"], health
    assert all("RolloutPolicy" not in o["kind"] for o in repo.render_committed())  # never passed through
    status = repo.status()
    assert status.code == StepExit.HELD and f"rollout promote --gitops -f {shlex.quote(repo.target)}`" in status.out, status

    promoted = repo.cli("rollout", "promote", "--gitops", "-f", str(repo.root), "--commit")
    assert promoted.code == StepExit.OK and "committed" in promoted.err, promoted
    assert repo.clean() and "rollout promote at wave 1 of 2" in repo.git("log", "-1", "--format=%s")
    done = rounds(repo, {StepExit.COMPLETE})
    assert done.code == StepExit.COMPLETE
    repo.sync()
    assert {s: set(g) for s, g in repo.live.groups().items()} == {s: {target} for s in range(4)}
    assert repo.state_health()["status"] == "Healthy"
def test_item5_7_16_through_git_the_position_moves_only_through_its_gates(repo):
    """Issue 37 items 7, 5 and 16 through git: a promote commit while the canary is in flight, a
    state edit past the canary's gate with slice 1 started, an abort after the rollout completed."""
    deploy(repo, ROLES, slices=4)
    policy = {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
              "metadata": {"name": "llm", "namespace": repo.namespace},
              "spec": {"targetRef": {"name": "llm"}, "waves": [{"slices": 1, "pause": {}}]}}
    (repo.root / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    repo.change_set("new image, paced", ROLES, slices=4, image="img:2")
    target = model(repo.set_file).revision
    repo.sync()
    assert repo.step().code == StepExit.OK  # the canary starts
    repo.commit("rollout step: the canary")
    head = repo.git("rev-parse", "HEAD")
    promote = ("rollout", "promote", "--gitops", "-f", str(repo.root), "--commit")
    refused = repo.cli(*promote)
    assert refused.code == VerbExit.REFUSED, refused
    assert "the rollout waits at no gate: wave 1 of 2 (slice 0) has 0 of 1 slices done" in refused.err
    assert repo.clean() and repo.git("rev-parse", "HEAD") == head
    rounds(repo, {StepExit.HELD})

    document = yaml.safe_load(repo.state_file.read_text())
    document["position"]["wave"] = 1  # past the canary's pause, and slice 1 started as wave 2 would
    slice1 = next(entry for entry in document["slices"] if entry["slice"] == 1)
    slice1["previous"] = [dict(entry) for entry in slice1["revisions"]]
    slice1["revisions"][0]["initialReplicas"] = dict(slice1["revisions"][0]["replicas"])
    slice1["revisions"].append({"revision": target, "replicas": {"prefill": 0, "decode": 0}})
    repo.state_file.write_text(yaml.safe_dump(document, sort_keys=False))
    repo.commit("hand edit: wave 2")
    try:
        expected = ("position.wave: is 1 (wave 2), past the pause gate after wave 1, which is not recorded as "
                    "passed (position.gates)")
        for run in (repo.generate_committed(), repo.cli("render", "-f", str(repo.root)), repo.step()):
            assert run.code == StepExit.ERROR and expected in run.err, run
            assert f"{naming.STATE_FILE}:" in run.err
    finally:
        repo.git("revert", "--no-edit", "HEAD")

    assert repo.cli(*promote).code == VerbExit.OK
    assert rounds(repo, {StepExit.COMPLETE}).code == StepExit.COMPLETE
    head = repo.git("rev-parse", "HEAD")
    aborted = repo.cli("rollout", "abort", "--gitops", "-f", str(repo.root), "--commit")
    assert aborted.code == VerbExit.REFUSED, aborted
    assert f"the rollout to {target} is complete: nothing to abort" in aborted.err
    assert repo.clean() and repo.git("rev-parse", "HEAD") == head  # the state file untouched
    assert repo.state_health()["status"] == "Healthy"


def test_item_2_through_git_slices_added_at_the_gate_start_at_the_stable_revision(repo):
    """`slices` 3 -> 5 committed while the canary waits at its gate: the commit renders slices 3-4
    at the stable revision at once (issue 47 item 7), Argo CD syncs them so, the step is held at
    the gate, and one promote commit rolls all five."""
    deploy(repo, ROLES, slices=3)
    stable = model(repo.set_file).revision
    policy = {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
              "metadata": {"name": "llm", "namespace": repo.namespace},
              "spec": {"targetRef": {"name": "llm"}, "waves": [{"slices": 1, "pause": {}}]}}
    (repo.root / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    repo.change_set("new image, paced", ROLES, slices=3, image="img:2")
    target = model(repo.set_file).revision
    assert rounds(repo, {StepExit.HELD}).code == StepExit.HELD
    repo.change_set("two more slices", ROLES, slices=5, image="img:2")
    assert repo.generate_committed().code == 0  # outside the canary's wave: at the stable revision, no step first
    assert rounds(repo, {StepExit.HELD}).code == StepExit.HELD
    repo.sync()
    assert {s: set(g) for s, g in repo.live.groups().items()} == {0: {target}, **{s: {stable} for s in range(1, 5)}}
    assert repo.state_health()["status"] == "Suspended"
    promoted = repo.cli("rollout", "promote", "--gitops", "-f", str(repo.root), "--commit")
    assert promoted.code == StepExit.OK, promoted
    assert rounds(repo, {StepExit.COMPLETE}).code == StepExit.COMPLETE
    repo.sync()
    assert {s: set(g) for s, g in repo.live.groups().items()} == {s: {target} for s in range(5)}
