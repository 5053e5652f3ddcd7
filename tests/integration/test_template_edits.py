"""`set image` and `rollout restart` (design §2.1) against the local control plane: the edit is a
new revision, and the next steps roll it out with the coordinated arithmetic, checked at every
pass (the stepper's invariants), until the live objects are what the edited set renders."""

from __future__ import annotations

import yaml
from kubernetes import client

from kubectl_disagg.core.api.template_edit import RESTARTED_AT
from tests.support.stepping import SET, assert_matches_render, cli, model, write_set

SETS = ("disaggregatedset.x-k8s.io", "v1", "disaggregatedsets")


def templates(live_lws: list[dict], role: str) -> list[dict]:
    return [lws["spec"]["leaderWorkerTemplate"]["workerTemplate"] for lws in live_lws
            if lws["metadata"]["labels"]["disaggregatedset.x-k8s.io/role"] == role]


def test_set_image_then_steps_roll_the_new_image_out(stepper, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2})
    stepper.drive(path)
    before = model(path).revision
    code, out, err = cli(stepper, "set", "image", "-f", str(path), "decode=img:2")
    assert (code, out) == (0, f"disaggregatedset/{SET} image updated\n"), err
    after = model(path)
    assert after.revision != before
    history = stepper.drive(path)
    assert len(history) > 2  # a rollout, not one replacement
    live = stepper.live.lws()
    assert {lws["metadata"]["labels"]["disaggregatedset.x-k8s.io/revision"] for lws in live} == {after.revision}
    assert [t["spec"]["containers"][0]["image"] for t in templates(live, "decode")] == ["img:2"]
    assert [t["spec"]["containers"][0]["image"] for t in templates(live, "prefill")] == ["img:1"]
    assert_matches_render(after, stepper.live)


def test_restart_of_one_role_rolls_it_with_the_others_untouched_in_their_template(stepper, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1})
    stepper.drive(path)
    code, out, err = cli(stepper, "rollout", "restart", "-f", str(path), "--role", "prefill")
    assert code == 0 and out.endswith("its rollout replaces the groups of every role (prefill, decode), not only "
                                      "prefill's\n"), err
    after = model(path)
    stepper.drive(path)
    live = stepper.live.lws()
    # Only prefill's templates are annotated, yet decode's groups are replaced too, as the command
    # says: the set's revision covers every role (issue 47).
    assert {lws["metadata"]["labels"]["disaggregatedset.x-k8s.io/revision"] for lws in live} == {after.revision}
    assert all(RESTARTED_AT in (t.get("metadata") or {}).get("annotations", {}) for t in templates(live, "prefill"))
    assert all(RESTARTED_AT not in ((t.get("metadata") or {}).get("annotations") or {})
               for t in templates(live, "decode"))
    assert_matches_render(after, stepper.live)


def test_name_patches_the_stored_set_guarded_by_its_resource_version(stepper, tmp_path, api_client):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    api = client.CustomObjectsApi(api_client)
    stored = api.create_namespaced_custom_object(*SETS[:2], stepper.namespace, SETS[2], yaml.safe_load(path.read_text()))
    code, out, err = cli(stepper, "rollout", "restart", SET, "-n", stepper.namespace, "--role", "decode",
                         "--dry-run=server")
    assert code == 0 and out.startswith(f"disaggregatedset/{SET} restarted: decode's pod templates annotated, a new "
                                        "revision; its rollout replaces the groups of every role ("), err
    assert out.endswith(", not only decode's (server dry run)\n")
    unchanged = api.get_namespaced_custom_object(*SETS[:2], stepper.namespace, SETS[2], SET)
    assert unchanged["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    code, _, err = cli(stepper, "set", "image", SET, "-n", stepper.namespace, "prefill=img:3")
    assert code == 0, err
    code, _, err = cli(stepper, "rollout", "restart", SET, "-n", stepper.namespace, "--role", "decode")
    assert code == 0, err
    patched = api.get_namespaced_custom_object(*SETS[:2], stepper.namespace, SETS[2], SET)
    prefill, decode = (role["spec"]["leaderWorkerTemplate"]["workerTemplate"] for role in patched["spec"]["roles"])
    assert prefill["spec"]["containers"][0]["image"] == "img:3" and "metadata" not in prefill
    assert list(decode["metadata"]["annotations"]) == [RESTARTED_AT]
    code, _, err = cli(stepper, "set", "image", SET, "-n", stepper.namespace, "nope=img:4")
    assert code == 1 and "no role named 'nope'" in err
