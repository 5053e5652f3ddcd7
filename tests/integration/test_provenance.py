"""An LWS that carries our labels and name but is not what the set renders, against the real
kube-apiserver (issue 34, item 4): planted under the next revision's name, or patched after we
made it. `rollout step` refuses (exit 3) naming it, and never counts or scales it."""

from __future__ import annotations

import json

import yaml
from kubernetes import client

from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.exits import StepExit
from tests.support.stepping import LWS, assert_matches_render, model, write_set

EVIL = "evil.example/miner"


def _lws(stepper, name: str) -> dict:
    return client.CustomObjectsApi(stepper.live.api).get_namespaced_custom_object(
        *LWS, stepper.namespace, "leaderworkersets", name)


def test_an_lws_planted_under_the_next_revisions_name_is_refused_not_adopted(stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    target = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, image="img:2")
    # Someone else applies the next revision's prefill LWS (the revision is predictable from the
    # pull request), with our labels, another image and 0 replicas.
    planted = next(obj for obj in render_set(model(target), stepper.namespace)
                   if obj["kind"] == "LeaderWorkerSet" and obj["metadata"]["name"].endswith("-prefill"))
    planted["spec"]["replicas"] = 0
    planted["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = EVIL
    manifest = tmp_path / "planted.yaml"
    manifest.write_text(yaml.safe_dump(planted))
    stepper.control_plane.kubectl("apply", "--server-side", "-f", str(manifest))
    name = planted["metadata"]["name"]

    with stepper.simulator.running(stepper.namespace, delay=0, interval=0.05):
        run = stepper(target, "--until-complete", "--timeout", "20s")
    assert run.code == StepExit.REFUSED, run.err
    assert f"leaderworkerset/{name} is not the one revision {model(target).revision} renders" in run.err
    assert "containers[0].image differs" in run.err and "its spec was also written by kubectl." in run.err
    after = _lws(stepper, name)
    assert after["spec"]["replicas"] == 0 and after["metadata"]["generation"] == 1  # never scaled


def test_a_template_patched_after_we_made_it_is_refused_not_up_to_date_for_ever(stepper, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    stepper.drive(path)
    name = next(obj["metadata"]["name"] for obj in stepper.live.lws() if obj["metadata"]["name"].endswith("-decode"))
    stepper.control_plane.kubectl("patch", "leaderworkerset", name, "-n", stepper.namespace, "--type", "json", "-p",
                                  json.dumps([{"op": "replace", "value": EVIL, "path":
                                               "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0/image"}]))
    for args in ((), ("--dry-run",), ("--until-complete", "--timeout", "10s")):
        run = stepper(path, *args)
        assert run.code == StepExit.REFUSED, (args, run.out, run.err)
        assert f"leaderworkerset/{name} is not the one revision {model(path).revision} renders: its template " \
               "differs (spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].image differs); its spec " \
               "was also written by kubectl-patch." in run.err
    # Deleted, as the refusal says, the next pass makes it again as rendered.
    stepper.control_plane.kubectl("delete", "leaderworkerset", name, "-n", stepper.namespace)
    stepper.drive(path)
    assert_matches_render(model(path), stepper.live)


def test_what_others_applied_as_rendered_and_their_scales_are_no_reason_to_refuse(stepper, tmp_path):
    """`render | kubectl apply --server-side` (the README's quick start), status written by the
    simulator, a `kubectl scale`: all stepped as usual."""
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(yaml.safe_dump_all(list(render_set(model(path), stepper.namespace))))
    stepper.control_plane.kubectl("apply", "--server-side", "-f", str(manifest))
    stepper.drive(path)
    name = next(obj["metadata"]["name"] for obj in stepper.live.lws() if obj["metadata"]["name"].endswith("-decode"))
    stepper.control_plane.kubectl("scale", "leaderworkerset", name, "-n", stepper.namespace, "--replicas", "2")
    run = stepper(path)  # scaled back to the spec's 1
    assert run.code == StepExit.OK, run.err
    assert _lws(stepper, name)["spec"]["replicas"] == 1
