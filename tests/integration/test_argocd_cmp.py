"""Argo CD end to end, through its own logic (tests/oracles/argocd_harness.py): discovery → generate in
the sidecar → split and flatten → server-side apply with Argo CD's field manager to the local
control plane → the health Argo CD gives every object (the argocd-cm of deploy/argocd in its Lua
VM, its built-in checks for the rest), for the Applications
people write: no plugin block, an empty one, only `name`, only `env`, every parameter form,
nested application directories; and a directory without a set, which discovery turns down
cleanly. Where the destination serves the RolloutState kind, a git rollout's state is applied
with the LWS and read Suspended while it waits for the next commit, Healthy at rest."""

from __future__ import annotations

import json

import pytest
import yaml

from kubectl_disagg.core.api.naming import STATE_FILE
from kubectl_disagg.gitops.served import SERVED_RESOURCE
from kubectl_disagg.gitops.state import state_document
from kubectl_disagg.gitops.step import initial_state
from kubectl_disagg.manifests.writer import to_yaml
from tests.oracles.argocd_harness import CUSTOMIZATIONS, LWS_API_VERSIONS, health, resource_health
from tests.oracles.argocd_sidecar import ArgoCD
from tests.support.paths import EXAMPLES
from tests.support.paths import sets_from_files

LWS_HEALTH = CUSTOMIZATIONS / "leaderworkerset.x-k8s.io" / "LeaderWorkerSet" / "health.lua"
UNNAMESPACED = (EXAMPLES / "prefill-decode.yaml").read_text().replace("  namespace: serving\n", "")
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"
NAMED = {"name": "kubectl-disagg"}

# (Application's source.plugin, where the set lives in the application directory)
APPLICATIONS = {
    "no-plugin-block": (None, "llama.yaml"),
    "empty-plugin-block": ({}, "llama.yaml"),
    "name-only": (NAMED, "llama.yaml"),
    "env-only": ({"env": [{"name": "STRICT", "value": "false"}]}, "llama.yaml"),
    "string-and-array-parameters": ({**NAMED, "parameters": [
        {"name": "strict", "string": "false"}, {"name": "include", "array": ["*.yaml", "*.json"]}]}, "llama.yaml"),
    "map-parameter-is-warned-not-refused": ({**NAMED, "parameters": [{"name": "labels", "map": {"team": "ml"}}]},
                                            "llama.yaml"),
    "plugin-env-array-as-commas": ({**NAMED, "env": [{"name": "RECURSE", "value": "true"},
                                                     {"name": "INCLUDE", "value": "serving/*.yaml,*.yaml"}]},
                                   "serving/llama.yaml"),
    "nested-directories": ({**NAMED, "parameters": [{"name": "recurse", "string": "true"}]},
                           "regions/eu/serving/llama.yaml"),
}


def live_lws(control_plane, namespace: str) -> list[dict]:
    return json.loads(control_plane.kubectl("get", "leaderworkersets", "-n", namespace, "-o", "json").stdout)["items"]


def live_health(control_plane, objects: list[dict]) -> dict[str, dict | None]:
    """Argo CD's health of each applied object, read back from the API server."""
    found = {}
    for obj in objects:
        kind, name, namespace = obj["kind"], obj["metadata"]["name"], obj["metadata"]["namespace"]
        live = json.loads(control_plane.kubectl("get", f"{kind}.{obj['apiVersion'].rpartition('/')[0] or ''}".rstrip("."),
                                                name, "-n", namespace, "-o", "json").stdout)
        found[f"{kind}/{name}"] = resource_health(live)
    return found


def apply(control_plane, objects: list[dict]) -> str:
    stream = "".join("---\n" + yaml.safe_dump(obj) for obj in objects)
    return control_plane.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-f", "-",
                                 input=stream).stdout


@pytest.mark.parametrize("application", list(APPLICATIONS))
def test_applications_sync_and_become_healthy(control_plane, namespace, lws_simulator, tmp_path, application):
    plugin, set_path = APPLICATIONS[application]
    argocd = ArgoCD(tmp_path, {f"apps/llama/{set_path}": UNNAMESPACED, "apps/llama/settings.yaml": CONFIGMAP})
    answer = argocd.manifests(plugin=plugin, namespace=namespace)
    assert answer.get("error") is None and answer["sourceType"] == "Plugin"
    objects = answer["manifests"]
    assert sorted(o["kind"] for o in objects) == ["ConfigMap", "LeaderWorkerSet", "LeaderWorkerSet", "Service", "Service"]
    assert {o["metadata"]["namespace"] for o in objects} == {namespace}
    assert apply(control_plane, objects).count("serverside-applied") == 5

    def statuses(found: dict[str, dict | None]) -> list[tuple[str, str | None]]:
        return sorted((key.split("/")[0], status and status["status"]) for key, status in found.items())

    assert statuses(live_health(control_plane, objects)) == [
        ("ConfigMap", None), ("LeaderWorkerSet", "Progressing"), ("LeaderWorkerSet", "Progressing"),
        ("Service", "Healthy"), ("Service", "Healthy")]
    lws_simulator.sync(namespace)
    after = live_health(control_plane, objects)
    assert statuses(after) == [("ConfigMap", None), ("LeaderWorkerSet", "Healthy"), ("LeaderWorkerSet", "Healthy"),
                               ("Service", "Healthy"), ("Service", "Healthy")]
    assert sorted(status["message"] for key, status in after.items() if key.startswith("LeaderWorkerSet/")) == [
        "All 1 groups ready and updated", "All 2 groups ready and updated"]


def test_a_new_commit_reapplies_without_a_rollout(control_plane, namespace, lws_simulator, tmp_path):
    argocd = ArgoCD(tmp_path, {"apps/llama/llama.yaml": UNNAMESPACED})
    apply(control_plane, argocd.objects(namespace=namespace))
    lws_simulator.sync(namespace)
    again = argocd.objects(namespace=namespace, revision="0" * 40)
    assert apply(control_plane, again).count("serverside-applied") == 4
    # Only an annotation changed: no new generation, so nothing to roll and the LWS stay Healthy.
    assert {health(LWS_HEALTH, lws)["status"] for lws in live_lws(control_plane, namespace)} == {"Healthy"}


def test_a_served_rollout_state_is_applied_and_reads_suspended_mid_rollout(control_plane, namespace, lws_simulator,
                                                                          tmp_path):
    (tmp_path / "llama.yaml").write_text(UNNAMESPACED)
    (ds,) = sets_from_files([str(tmp_path / "llama.yaml")])
    state = to_yaml(state_document(initial_state(ds, namespace)))
    served = LWS_API_VERSIONS + ["kubectl-disagg.x-k8s.io/v1alpha1", SERVED_RESOURCE]
    argocd = ArgoCD(tmp_path / "at-rest", {"apps/llama/llama.yaml": UNNAMESPACED, f"apps/llama/{STATE_FILE}": state})
    objects = argocd.objects(namespace=namespace, api_versions=served)
    assert sorted(o["kind"] for o in objects) == ["LeaderWorkerSet", "LeaderWorkerSet", "RolloutState", "Service",
                                                  "Service"]
    apply(control_plane, objects)
    lws_simulator.sync(namespace)
    found = live_health(control_plane, objects)
    assert found["RolloutState/llama"] == {"status": "Healthy", "message": f"llama: at rest at revision {ds.revision}"}
    # A new image committed: the rollout starts (the new revision at 0 beside the old), and the
    # Application waits for the next commit, as a paused Argo Rollout does.
    rolled = UNNAMESPACED.replace("vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.11.1")
    argocd = ArgoCD(tmp_path / "rolling", {"apps/llama/llama.yaml": rolled, f"apps/llama/{STATE_FILE}": state})
    objects = argocd.objects(namespace=namespace, api_versions=served)
    assert [o["kind"] for o in objects].count("LeaderWorkerSet") == 4
    apply(control_plane, objects)
    lws_simulator.sync(namespace)
    found = live_health(control_plane, objects)
    assert found["RolloutState/llama"]["status"] == "Suspended"
    assert found["RolloutState/llama"]["message"].startswith("llama: slice 0 step 0 of ")
    assert {status["status"] for key, status in found.items() if key.startswith("LeaderWorkerSet/")} == {"Healthy"}
    (tmp_path / "llama.yaml").write_text(rolled)
    (target,) = sets_from_files([str(tmp_path / "llama.yaml")])
    rollout = json.loads(control_plane.kubectl("get", "rolloutstate", "llama", "-n", namespace, "-o", "json").stdout)[
        "rollout"]
    assert rollout["revision"] == target.revision and rollout["step"].startswith("0/")
    columns = control_plane.kubectl("get", "rolloutstates", "-n", namespace).stdout.splitlines()
    assert columns[0].split() == ["NAME", "SET", "REVISION", "STEP", "WAVE", "PHASE", "AGE"]  # WAVE: a policy's
    assert columns[1].split()[:5] == ["llama", "llama", target.revision, rollout["step"], "Rolling"]
