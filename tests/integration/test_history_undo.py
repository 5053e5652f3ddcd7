"""`rollout history` and `rollout undo` in the cluster (issue 40) on the real kube-apiserver, driven
through the CLI: three rollouts under a RolloutPolicy, the middle one aborted, read back from the
set's RolloutState; then the undo to the revision before last, whose rollout is paced by the policy
(the canary alone first) and is listed as going back."""

from __future__ import annotations

import json

from kubectl_disagg.exits import StepExit
from tests.support.progressive import deployed_then_changed, paced, revisions, rollout_state, until_held_or_complete
from tests.support.stepping import assert_matches_render, cli, model

CANARY = {"waves": [{"slices": 1, "pause": {}}, {"slices": "100%"}]}


def history(stepper, directory, *extra: str) -> dict:
    code, out, err = cli(stepper, "rollout", "history", "-f", str(directory), "-o", "json", *extra)
    assert code == 0, err
    return json.loads(out)


def promoted_to_the_end(stepper, directory, simulator) -> None:
    assert until_held_or_complete(stepper, directory, simulator).code == StepExit.HELD  # the canary's pause
    code, _, err = cli(stepper, "rollout", "promote", "-f", str(directory))
    assert code == 0, err
    run = until_held_or_complete(stepper, directory, simulator)
    assert run.code == StepExit.OK, run.err


def test_history_of_three_rollouts_one_aborted_then_undo_paced_by_the_policy(stepper, tmp_path, lws_simulator):
    first, bad = deployed_then_changed(stepper, tmp_path, CANARY)
    assert until_held_or_complete(stepper, bad, lws_simulator).code == StepExit.HELD
    code, _, err = cli(stepper, "rollout", "abort", "-f", str(bad), "--reason", "p99 doubled")
    assert code == 0, err
    assert until_held_or_complete(stepper, bad, lws_simulator).code == StepExit.HELD  # rolled back
    good = paced(tmp_path, stepper.namespace, "img:3", CANARY)
    promoted_to_the_end(stepper, good, lws_simulator)

    listed = history(stepper, good)["revisions"]
    assert [(r["revision"], r["outcome"]) for r in listed] == [
        (model(good).revision, "complete"), (model(bad).revision, "aborted"), (model(first).revision, "complete")]
    assert (listed[1]["by"], listed[1]["why"]) == ("admin", "p99 doubled")
    assert listed[0]["started"]["by"] == "admin" and listed[0]["changes"] == ["prefill, decode: image img `2 → 3`"]
    code, out, err = cli(stepper, "rollout", "history", "-f", str(good))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"disaggregatedset/llm in {stepper.namespace}: 3 revisions, newest first"
    assert "aborted" in lines[3] and "by admin: p99 doubled" in lines[3]
    one = history(stepper, good, "--revision", model(bad).revision)
    assert one["roles"][0]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] == "img:2"
    assert rollout_state(stepper)["history"][-1]["outcome"] == "complete"

    # undo: the revision before last that was not aborted, written back into the file
    current = model(good).revision
    code, out, err = cli(stepper, "rollout", "undo", "-f", str(good))
    assert (code, out) == (0, f"disaggregatedset/llm rolled back to revision {model(first).revision}\n"), err
    assert "next: the rollout back is paced like any other" in err
    back = model(good)
    assert back.revision == model(first).revision
    run = until_held_or_complete(stepper, good, lws_simulator)
    assert run.code == StepExit.HELD, run.err  # the canary alone, as for any rollout
    assert revisions(stepper) == {0: {back.revision}, 1: {current}, 2: {current}, 3: {current}}
    newest = history(stepper, good)["revisions"][0]
    assert (newest["revision"], newest["outcome"], newest.get("rollback")) == (back.revision, "rolling", True)
    code, _, err = cli(stepper, "rollout", "promote", "-f", str(good))
    assert code == 0, err
    assert until_held_or_complete(stepper, good, lws_simulator).code == StepExit.OK
    assert_matches_render(back, stepper.live)
    assert history(stepper, good)["revisions"][0]["outcome"] == "complete"


def test_undo_by_name_patches_the_stored_set_in_one_session(stepper, tmp_path, monkeypatch):
    """`rollout undo NAME`: the history read from the set's RolloutState and the stored set
    patched back to the revision before, in one session with the API server; a server dry run
    first changes nothing."""
    from kubectl_disagg.kube import session as session_module
    from tests.support.stepping import write_set

    by_name = ("llm", "-n", stepper.namespace)
    for image in ("img:1", "img:2"):
        path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, image=image)
        stepper.control_plane.kubectl("apply", "--server-side", "-f", str(path))
        for _ in range(8):
            code, out, err = cli(stepper, "rollout", "step", *by_name)
            assert code == 0, err
            stepper.simulator.sync(stepper.namespace)
        code, out, _ = cli(stepper, "rollout", "status", *by_name, "--for=complete")
        assert code == 0, out
    first, second = (model(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, image=image)).revision
                     for image in ("img:1", "img:2"))
    code, out, err = cli(stepper, "rollout", "history", *by_name, "-o", "json")
    assert code == 0, err
    assert [r["revision"] for r in json.loads(out)["revisions"]] == [second, first]

    opened = []
    real_init = session_module.Session.__init__

    def counted(self, *args, **kwargs):
        opened.append(1)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(session_module.Session, "__init__", counted)
    code, out, err = cli(stepper, "rollout", "undo", *by_name, "--dry-run=server")
    assert (code, out) == (0, f"disaggregatedset/llm rolled back to revision {first} (server dry run)\n"), err
    code, out, err = cli(stepper, "rollout", "undo", *by_name)
    assert (code, out) == (0, f"disaggregatedset/llm rolled back to revision {first}\n"), err
    assert len(opened) == 2  # one session a run
    stored = json.loads(stepper.control_plane.kubectl("get", "disaggregatedset", "llm", "-n", stepper.namespace,
                                                      "-o", "json").stdout)
    images = {c["image"] for role in stored["spec"]["roles"]
              for c in role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]}
    assert images == {"img:1"}


def test_issue47_single_steps_are_recorded_complete_and_a_forged_entry_is_refused(stepper, tmp_path):
    """Single `rollout step`s until `rollout status --for=complete` exits 0: the status that sees
    it records the rollout complete (the history, and AtRest for Argo CD), so the next image does
    not call it replaced. Then an image patched into a history entry with kubectl: history and
    undo refuse the entry, and nothing is written."""
    from tests.support.stepping import write_set

    by_name = ("llm", "-n", stepper.namespace)
    for image in ("img:1", "img:2"):
        path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, image=image)
        stepper.control_plane.kubectl("apply", "--server-side", "-f", str(path))
        for _ in range(8):
            code, out, _ = cli(stepper, "rollout", "status", *by_name, "--for=complete")
            if code == 0:
                break
            code, out, err = cli(stepper, "rollout", "step", *by_name)
            assert code == 0, err
            stepper.simulator.sync(stepper.namespace)
        assert code == 0, out
        state = rollout_state(stepper)
        assert state["history"][-1]["outcome"] == "complete" and state["rollout"]["phase"] == "AtRest", state
    assert [r["outcome"] for r in history(stepper, path)["revisions"]] == ["complete", "complete"]

    stepper.control_plane.kubectl(
        "patch", "rolloutstates.kubectl-disagg.x-k8s.io", "llm", "-n", stepper.namespace, "--type", "json", "-p",
        json.dumps([{"op": "replace", "path": "/history/0/roles/0/leaderWorkerTemplate/workerTemplate/spec/"
                     "containers/0/image", "value": "evil:666"}]))
    before = stepper.control_plane.kubectl("get", "disaggregatedset", "llm", "-n", stepper.namespace,
                                           "-o", "jsonpath={.metadata.resourceVersion}").stdout
    for verb in ("history", "undo"):
        code, out, err = cli(stepper, "rollout", verb, *by_name)
        assert (code, out) == (1, ""), (verb, out)
        assert err.startswith("rolloutstate/llm: history[0].revision: the role templates recorded here hash to "
                              "revision "), err
    assert stepper.control_plane.kubectl("get", "disaggregatedset", "llm", "-n", stepper.namespace,
                                         "-o", "jsonpath={.metadata.resourceVersion}").stdout == before
