"""Working beside the upstream DisaggregatedSet controller, against the real kube-apiserver.

No controller runs here: the tests give objects the controller's shape themselves (the same names
and labels, no managed-by label, ownerReferences naming the stored set as controller) and check
that `rollout status`/`plan` follow such a set exactly as they follow one kubectl-disagg runs,
and that `rollout step` leaves it alone.
"""

from __future__ import annotations

import json

import yaml

from kubectl_disagg.core.api import naming
from kubectl_disagg.exits import StepExit
from tests.support.controller import SERVICE_PATH, controller_owner
from tests.support.controller import store
from tests.support.stepping import SET, Stepper, cli, write_set


MERGE_PATCH = "application/merge-patch+json"
LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{}/leaderworkersets/{}"
SET_PATH = "/apis/disaggregatedset.x-k8s.io/v1/namespaces/{}/disaggregatedsets/{}"


def hand_to_controller(stepper: Stepper, stored: dict) -> list[str]:
    """What the controller's objects look like: ownerReferences, and no managed-by label."""
    patch = {"metadata": {"labels": {naming.MANAGED_BY_LABEL: None}, "ownerReferences": [controller_owner(stored)]}}
    names = []
    for obj in stepper.live.lws(f"{naming.NAME_LABEL}={SET}"):
        stepper.control_plane.request("PATCH", LWS_PATH.format(stepper.namespace, obj["metadata"]["name"]),
                                      patch, content_type=MERGE_PATCH)
        names.append(obj["metadata"]["name"])
    for obj in stepper.live.services(f"{naming.NAME_LABEL}={SET}"):
        stepper.control_plane.request("PATCH", SERVICE_PATH.format(stepper.namespace, obj["metadata"]["name"]),
                                      patch, content_type=MERGE_PATCH)
        names.append(obj["metadata"]["name"])
    return names


def without_times(document: dict) -> dict:
    for condition in document["status"]["conditions"]:
        condition.pop("lastTransitionTime")
    return document


def test_status_and_plan_follow_a_controller_run_set_and_step_refuses_it(stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2}))
    new = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2}, image="img:2")
    stored = store(stepper.control_plane, stepper.namespace, yaml.safe_load(new.read_text()))
    stepper(new)  # the rollout starts
    stepper.simulator.sync(stepper.namespace)
    stepper(new)  # and takes its first step
    stepper.simulator.sync(stepper.namespace)

    def views() -> tuple:
        status = cli(stepper, "rollout", "status", SET, "-n", stepper.namespace, "-o", "json")
        plan = cli(stepper, "rollout", "plan", SET, "-n", stepper.namespace)
        plan_file = cli(stepper, "rollout", "plan", "-f", str(new))
        return status[0], without_times(json.loads(status[1])), plan, plan_file

    by_plugin = views()
    assert by_plugin[0] == 3 and by_plugin[2][0] == 0
    assert "rolling to revision" in by_plugin[2][1] and "(at step 1 of" in by_plugin[2][1]
    assert [s["phase"] for s in by_plugin[1]["slices"]] == ["rolling"]

    names = hand_to_controller(stepper, stored)
    assert len(names) == 8  # two revisions × two roles, an LWS and a Service each
    assert stepper.live.lws() == []  # nothing carries kubectl-disagg's label any more
    by_controller = views()
    assert by_controller == by_plugin  # the same position, plan, waits and next actions
    assert "Warning" not in by_controller[2][2]

    before = stepper.live.versions()
    for argv in (["rollout", "step", SET, "-n", stepper.namespace], ["rollout", "step", "-f", str(new)],
                 ["rollout", "step", "-f", str(new), "--dry-run"]):
        code, out, err = cli(stepper, *argv)
        assert code == StepExit.REFUSED, (argv, err)
        assert "refused, nothing changed" in out
        assert f"refusing to step disaggregatedset/{SET}" in err
        assert "the DisaggregatedSet controller owns this set" in err and "handover" in err
    # --ignore-controller only overrides the stored status heuristic, never ownership.
    code, _, err = cli(stepper, "rollout", "step", SET, "-n", stepper.namespace, "--ignore-controller")
    assert code == StepExit.REFUSED and "the DisaggregatedSet controller owns this set" in err
    assert stepper.live.versions() == before


def test_step_refuses_a_stored_set_whose_status_a_controller_writes(stepper, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    stored = store(stepper.control_plane, stepper.namespace, yaml.safe_load(path.read_text()))
    stored["status"] = {"observedGeneration": 1}
    stepper.control_plane.request("PUT", SET_PATH.format(stepper.namespace, SET) + "/status", stored)

    code, out, err = cli(stepper, "rollout", "step", SET, "-n", stepper.namespace)
    assert code == StepExit.REFUSED and out == ""
    assert "status.observedGeneration, which only the DisaggregatedSet controller writes" in err
    assert "--ignore-controller" in err
    assert stepper.live.versions() == {}

    code, out, err = cli(stepper, "rollout", "step", SET, "-n", stepper.namespace, "--ignore-controller")
    assert code == StepExit.OK, err
    assert len(stepper.live.lws()) == 2
    # A file says nothing about a controller: only ownership stops it.
    code, _, err = cli(stepper, "rollout", "step", "-f", str(path))
    assert code == StepExit.OK, err


def test_kubectl_events_shows_what_each_step_did(stepper, tmp_path):
    old = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    store(stepper.control_plane, stepper.namespace, yaml.safe_load(old.read_text()))
    code, _, err = cli(stepper, "rollout", "step", SET, "-n", stepper.namespace)
    assert code == StepExit.OK, err
    stepper.simulator.sync(stepper.namespace)
    new = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, image="img:2")
    stepper.drive(new)  # a file: events regard the LeaderWorkerSets

    shown = stepper.control_plane.kubectl("events", "-n", stepper.namespace, "-o", "json").stdout
    listed = json.loads(shown)["items"]
    on_set = [e["reason"] for e in listed if e["involvedObject"]["kind"] == "DisaggregatedSet"]
    assert on_set == ["ScalingUp", "ScalingUp"]  # the first deploy, stepped by NAME
    on_lws = {e["reason"] for e in listed if e["involvedObject"]["kind"] == "LeaderWorkerSet"}
    assert on_lws == {"RollingUpdateStarted", "ScalingUp", "ScalingDown", "RollingUpdateCompleted", "LWSDeleted"}
    table = stepper.control_plane.kubectl("events", "-n", stepper.namespace).stdout
    assert "RollingUpdateStarted" in table and f"disaggregatedset/{SET}" in table.lower()
