"""`rollout status` and the live `rollout plan -f` against the real kube-apiserver."""

from __future__ import annotations

import json

import pytest
import yaml

from kubectl_disagg.cli import main
from kubectl_disagg.exits import StatusExit
from tests.support.stepping import cli, write_set


def test_status_of_a_deployed_set_is_available(stepper, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, slices=2)
    stepper.drive(path)
    code, out, _ = cli(stepper, "rollout", "status", "-f", str(path), "-o", "json")
    assert code == 0
    document = json.loads(out)
    assert document["status"]["roleStatuses"] == [
        {"name": "prefill", "replicas": 4, "readyReplicas": 4, "updatedReplicas": 4},
        {"name": "decode", "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
    ]
    conditions = {c["type"]: (c["status"], c["reason"]) for c in document["status"]["conditions"]}
    assert conditions == {"Available": ("True", "AllRolesReady"), "Progressing": ("False", "AllRolesReady")}
    assert [s["phase"] for s in document["slices"]] == ["steady", "steady"]


def test_status_mid_rollout_in_every_output(stepper, tmp_path):
    """Mid-rollout, every output says the same: not Available (exit 3), the same slices."""
    old = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1})
    stepper.drive(old)
    new = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, image="img:2")
    stepper(new)  # mid-rollout: more to say than "Available"
    outputs = {}
    for output in ("text", "json", "yaml"):
        code, outputs[output], err = cli(stepper, "rollout", "status", "-f", str(new), "-o", output)
        assert code == StatusExit.NOT_AVAILABLE and outputs[output] and err == ""
    as_json, as_yaml = json.loads(outputs["json"]), yaml.safe_load(outputs["yaml"])
    assert as_json["slices"] == as_yaml["slices"] and as_json["status"]["roleStatuses"] == as_yaml["status"]["roleStatuses"]
    assert [s["phase"] for s in as_json["slices"]] != ["steady"]
    assert outputs["text"].splitlines()[0].endswith(": Progressing")


def test_impersonation_in_the_kubeconfig_is_honoured(stepper, tmp_path):
    """A user entry's `as:` acts as that user, as kubectl does: here one without any role."""
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    stepper.drive(path)
    config = yaml.safe_load(stepper.control_plane.kubeconfig.read_text())
    for user in config["users"]:
        user["user"]["as"] = "someone-without-roles"
    impersonating = tmp_path / "kubeconfig"
    impersonating.write_text(yaml.safe_dump(config))
    stepper.capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["rollout", "status", "-f", str(path), "--kubeconfig", str(impersonating)])
    err = stepper.capsys.readouterr().err
    assert exited.value.code == 1
    assert "forbidden" in err and "someone-without-roles" in err


def test_the_as_flags_act_as_that_user_and_groups(stepper, tmp_path):
    """Issue 47: kubectl's --as and --as-group, sent as Impersonate-* headers by our client: a
    user without roles is forbidden, naming it; with system:masters it reads the set."""
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    stepper.drive(path)
    kubeconfig = str(stepper.control_plane.kubeconfig)
    stepper.capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["rollout", "status", "-f", str(path), "--kubeconfig", kubeconfig, "--as", "someone-without-roles"])
    err = stepper.capsys.readouterr().err
    assert exited.value.code == 1 and "forbidden" in err and "someone-without-roles" in err
    with pytest.raises(SystemExit) as exited:
        main(["rollout", "status", "-f", str(path), "--kubeconfig", kubeconfig, "--as", "someone-without-roles",
              "--as-group", "system:masters"])
    captured = stepper.capsys.readouterr()
    assert exited.value.code == 0, captured.err
    assert "Available" in captured.out.splitlines()[0]


def test_status_mid_rollout_is_not_available_and_says_why(stepper, tmp_path):
    old = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2})
    stepper.drive(old)
    new = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2}, image="img:2")
    stepper(new)  # the rollout starts: new revision at 0
    stepper.simulator.sync(stepper.namespace)
    stepper(new)  # first scale-up: the LWS controller has not seen it yet
    code, out, _ = cli(stepper, "rollout", "status", "-f", str(new))
    assert code == StatusExit.NOT_AVAILABLE
    assert "Progressing" in out.splitlines()[0]
    assert "slice 0 waiting for: prefill: status is stale (observedGeneration 1 < generation 2)" in out
    assert "stale status: leaderworkerset/llm-0-" in out
    stepper.simulator.never_ready(labels={"disaggregatedset.x-k8s.io/revision": out.split("revision ")[1][:8]})
    stepper.simulator.sync(stepper.namespace)
    code, out, _ = cli(stepper, "rollout", "status", "-f", str(new))
    assert "slice 0 waiting for: prefill: 0/1 ready" in out and "stale status" not in out
    code, out, _ = cli(stepper, "rollout", "status", "-f", str(new), "-o", "yaml")
    document = yaml.safe_load(out)
    (slice0,) = document["slices"]
    assert slice0["phase"] == "waiting" and len(slice0["revisions"]) == 2
    assert slice0["rollout"]["position"] == "1/4"


def test_status_by_name_reads_the_set_stored_in_the_cluster(stepper, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    stepper.control_plane.kubectl("apply", "--server-side", "-f", str(path))
    code, out, _ = cli(stepper, "rollout", "status", "llm", "-n", stepper.namespace)
    assert code == StatusExit.NOT_AVAILABLE  # nothing deployed yet
    stepper.drive(path)
    code, out, _ = cli(stepper, "rollout", "status", "llm", "-n", stepper.namespace)
    assert code == 0 and "Available" in out.splitlines()[0]


def test_status_of_an_unknown_name_is_a_clear_error(stepper):
    code, out, err = cli(stepper, "rollout", "status", "nope", "-n", stepper.namespace)
    assert code == 1 and out == ""
    assert "nope" in err and "not found" in err.lower()


def test_watch_returns_once_available(stepper, tmp_path, lws_simulator):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1})
    stepper(path)  # LWS created, nothing ready yet
    with lws_simulator.running(stepper.namespace, delay=0.5):
        code, out, _ = cli(stepper, "rollout", "status", "-f", str(path), "-w", "--timeout", "60s")
    assert code == 0
    assert out.count("disaggregatedset/llm") >= 2  # reported at least once before and once after


def test_watch_times_out(stepper, tmp_path, lws_simulator):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    stepper(path)
    lws_simulator.never_ready(labels={"disaggregatedset.x-k8s.io/role": "decode"})
    lws_simulator.sync(stepper.namespace)
    code, _, err = cli(stepper, "rollout", "status", "-f", str(path), "-w", "--timeout", "2s")
    assert code == StatusExit.TIMEOUT and "timed out" in err


def test_live_plan_shows_the_remaining_trajectory(stepper, tmp_path):
    old = write_set(tmp_path, stepper.namespace, {"prefill": 3, "decode": 1})
    stepper.drive(old)
    new = write_set(tmp_path, stepper.namespace, {"prefill": 3, "decode": 1}, image="img:2")
    code, out, _ = cli(stepper, "rollout", "plan", "-f", str(new), "-o", "json")
    assert code == 0
    whole = json.loads(out)
    assert whole["steps"][0] == {"old": [3, 1], "new": [0, 0]}
    assert whole["steps"][-1] == {"old": [0, 0], "new": [3, 1]}
    for _ in range(2):
        stepper(new)
        stepper.simulator.sync(stepper.namespace)
    code, out, _ = cli(stepper, "rollout", "plan", "-f", str(new), "-o", "json")
    remaining = json.loads(out)
    assert len(remaining["steps"]) == len(whole["steps"]) - 1  # one step taken since
    assert remaining["steps"] == whole["steps"][1:]
    code, out, _ = cli(stepper, "rollout", "plan", "-f", str(new))
    assert "slice 0: rolling to revision" in out and "(at step 1 of" in out


def test_step_and_status_by_name_for_a_set_stored_in_the_cluster(stepper, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    stepper.control_plane.kubectl("apply", "--server-side", "-f", str(path))
    for _ in range(3):
        code, out, err = cli(stepper, "rollout", "step", "llm", "-n", stepper.namespace)
        assert code == 0, err
        stepper.simulator.sync(stepper.namespace)
    code, out, _ = cli(stepper, "rollout", "status", "llm", "-n", stepper.namespace)
    assert code == 0 and "Available" in out.splitlines()[0]


def test_issue37_item12_available_is_not_complete_and_watch_for_complete_waits_for_the_last_step(stepper, tmp_path):
    """The drained old revision's LWS stay at 0 until the rollout's last step removes them: the set
    is Available then (exit 0, as before), not complete. `--for=complete` exits 3 there, and
    `-w --for=complete` returns only once another process has taken that step."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from kubectl_disagg.core.api import naming

    old = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, slices=2)
    stepper.drive(old)
    new = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, image="img:2", slices=2)
    for _ in range(40):
        code, out, _ = cli(stepper, "rollout", "status", "-f", str(new))
        if code == StatusExit.AVAILABLE:
            break
        assert stepper(new).code == 0
        stepper.simulator.sync(stepper.namespace)
    else:
        raise AssertionError("never Available")
    revision = out.split("revision ")[1][:8]
    drained = [o for o in stepper.live.lws() if o["metadata"]["labels"][naming.REVISION_LABEL] != revision]
    assert drained and all(o["spec"]["replicas"] == 0 for o in drained)
    assert ": Available, not complete: revision " in out.splitlines()[0]
    assert out.splitlines()[0].endswith("'s LeaderWorkerSets remain in slices 0-1")
    code, out, _ = cli(stepper, "rollout", "status", "-f", str(new), "-o", "json")
    assert code == StatusExit.AVAILABLE and json.loads(out)["complete"] is False
    code, out, _ = cli(stepper, "rollout", "status", "-f", str(new), "--for=complete")
    assert code == StatusExit.NOT_AVAILABLE

    # The last step, taken by another process while status waits for completion.
    script = Path(sys.executable).parent / "kubectl-disagg"
    last_step = subprocess.Popen(
        ["sh", "-c", 'sleep 2 && exec "$@"', "sh", str(script), "rollout", "step", "-f", str(new),
         "--kubeconfig", str(stepper.control_plane.kubeconfig), "--context", "admin"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    code, out, err = cli(stepper, "rollout", "status", "-f", str(new), "-w", "--for=complete", "--timeout", "60s")
    _, step_err = last_step.communicate(timeout=60)
    assert last_step.returncode == 0, step_err
    assert code == StatusExit.AVAILABLE, err
    firsts = [line for line in out.splitlines() if line.startswith("disaggregatedset/llm ")]
    assert ": Available, not complete" in firsts[0] and firsts[-1].endswith(": Available, complete")
    assert {o["metadata"]["labels"][naming.REVISION_LABEL] for o in stepper.live.lws()} == {revision}


def test_issue39_plan_shows_held_slices_as_the_live_lws_run_them(stepper, tmp_path, lws_simulator):
    """Issue 39: `rollout plan` of a paced set at its canary's gate said of the held slices "no
    rollout under way (held at revision <new>)" with 0 replicas. Each slice's revision and
    replicas in the plan are what its live LeaderWorkerSets run."""
    from kubectl_disagg.exits import StepExit
    from tests.support.progressive import deployed_then_changed, until_held_or_complete
    from tests.support.stepping import model

    spec = {"maxSlicesInFlight": 2, "waves": [{"slices": 1, "pause": {}}, {"slices": "100%"}]}
    old, new = deployed_then_changed(stepper, tmp_path, spec)
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.HELD
    code, out, err = cli(stepper, "rollout", "plan", "-f", str(new), "-o", "json")
    assert code == 0, err
    (fleet,) = json.loads(out)["fleets"]
    live = stepper.live.groups()  # slice → revision → role → replicas
    for line in fleet["slices"]:
        assert {line["revision"]: line["replicas"]} == live[line["slice"]], line
    assert [line["situation"] for line in fleet["slices"]] == ["done", "held", "held", "held"]
    assert fleet["slices"][1]["revision"] == model(old).revision and fleet["phase"] == "AtGate"
    code, text, _ = cli(stepper, "rollout", "plan", "-f", str(new))
    assert f"  slices 1-3: held at {model(old).revision[:8]} (prefill 1, decode 1), wave 2\n" in text


def test_issue47_item13_after_an_abort_rolled_back_status_is_available_at_the_stable_revision(
        stepper, tmp_path, lws_simulator):
    """Issue 47 item 13 on the real API server: aborted at the canary's gate and rolled back,
    every slice serves the stable revision: `rollout status` reads Available (exit 0), aborted,
    rolled back, what it serves and what ends it; `-w --for=complete` ends held (7) at once."""
    from tests.support.progressive import deployed_then_changed, until_held_or_complete
    from tests.support.stepping import model

    old, new = deployed_then_changed(stepper, tmp_path, {"waves": [{"slices": 1, "pause": {}}]})
    stable = model(old).revision
    assert until_held_or_complete(stepper, new, lws_simulator).code == StatusExit.HELD
    assert cli(stepper, "rollout", "abort", "-f", str(new))[0] == 0
    assert until_held_or_complete(stepper, new, lws_simulator).code == StatusExit.HELD  # rolled back
    code, out, err = cli(stepper, "rollout", "status", "-f", str(new))
    assert code == StatusExit.AVAILABLE, err
    assert out.splitlines()[0] == (f"disaggregatedset/llm in {stepper.namespace}, revision {model(new).revision}: "
                                   f"Available, aborted: rolled back, every slice serves the stable revision {stable}")
    assert "waiting for" not in out and "`kubectl disagg rollout undo" in out and "rollout retry" in out
    code, _, err = cli(stepper, "rollout", "status", "-f", str(new), "-w", "--for=complete", "--timeout", "30s")
    assert code == StatusExit.HELD and "every slice is back at the stable revision" in err


def test_issue47_item14_watch_ends_at_a_pause_written_while_the_lws_are_quiet(stepper, tmp_path):
    """Issue 47 item 14 on the real API server: the canary in flight and its LWS quiet (no LWS
    controller runs), `rollout status -w` in another process sees `rollout pause` write the
    RolloutState and ends held within seconds, not at its next look a minute later."""
    import time

    from tests.support.progressive import deployed_then_changed, process

    _, new = deployed_then_changed(stepper, tmp_path, {"waves": [{"slices": 1, "pause": {}}]})
    assert stepper(new).code == 0  # the canary starts; nothing settles it
    watching = process(stepper, "rollout", "status", "-f", str(new), "-w", "--timeout", "90s")
    time.sleep(3)  # its first look taken, its watch begun
    assert watching.poll() is None
    paused_at = time.monotonic()
    assert cli(stepper, "rollout", "pause", "-f", str(new))[0] == 0
    _, err = watching.communicate(timeout=60)
    assert watching.returncode == StatusExit.HELD and "the rollout is paused" in err
    assert time.monotonic() - paused_at < 20


def test_issue47_item16_a_set_applied_without_revision_services_steps_and_reads_complete_without_them(
        stepper, tmp_path, lws_simulator):
    """Issue 47 item 16 on the real API server: applied from `render --no-revision-services`, the
    set never read complete and `rollout step` created the `-prv` Services the render left out.
    With the flag on step and status (as on render), or the set's annotation, they agree."""
    import subprocess

    from tests.support.progressive import CONSOLE_SCRIPT

    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, slices=2)
    rendered = subprocess.run([str(CONSOLE_SCRIPT), "render", "-f", str(path), "--no-revision-services"],
                              capture_output=True, text=True, check=True).stdout
    stepper.control_plane.kubectl("apply", "--server-side", "-f", "-", input=rendered)
    with lws_simulator.running(stepper.namespace, delay=0.05, interval=0.05):
        code, _, _ = cli(stepper, "rollout", "status", "-f", str(path), "-w", "--for=available", "--timeout", "30s")
        assert code == StatusExit.AVAILABLE
    assert cli(stepper, "rollout", "status", "-f", str(path), "--for=complete")[0] == StatusExit.NOT_AVAILABLE
    code, out, _ = cli(stepper, "rollout", "status", "-f", str(path), "--for=complete", "--no-revision-services")
    assert code == StatusExit.AVAILABLE and "Available, complete" in out
    assert stepper(path, "--no-revision-services").code == 0
    assert not [s for s in stepper.live.services() if s["metadata"]["name"].endswith("-prv")]
    text = path.read_text().replace("metadata:\n", "metadata:\n  annotations:\n"
                                    "    kubectl-disagg/revision-services: \"false\"\n", 1)
    path.write_text(text)
    assert stepper(path).code == 0 and not stepper.live.services()  # the set says it: no flag needed
    assert cli(stepper, "rollout", "status", "-f", str(path), "--for=complete")[0] == StatusExit.AVAILABLE
