"""What the Argo CD sidecar renders, applied the way Argo CD applies it (server-side apply with
Argo CD's field manager), then judged by the Lua health check as Argo CD would judge it."""

from __future__ import annotations

import json

import yaml

from tests.argocd_sidecar import Sidecar
from tests.conftest import EXAMPLES
from tests.argocd_lua import CUSTOMIZATIONS, health

LWS_HEALTH = CUSTOMIZATIONS / "leaderworkerset.x-k8s.io" / "LeaderWorkerSet" / "health.lua"
UNNAMESPACED = (EXAMPLES / "prefill-decode.yaml").read_text().replace("  namespace: serving\n", "")
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"


def test_generated_manifests_apply_server_side_and_become_healthy(control_plane, namespace, lws_simulator, tmp_path):
    sidecar = Sidecar(tmp_path, {"llama.yaml": UNNAMESPACED, "settings.yaml": CONFIGMAP})
    result = sidecar.generate({"ARGOCD_APP_NAMESPACE": namespace})
    assert result.returncode == 0, result.stderr.decode()
    manifests = result.stdout.decode()
    rendered = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(manifests)}
    applied = control_plane.kubectl("apply", "--server-side", "--field-manager=argocd-controller",
                                    "-f", "-", input=manifests).stdout
    assert applied.count("serverside-applied") == len(rendered) == 5

    def live_lws() -> list[dict]:
        return json.loads(control_plane.kubectl("get", "leaderworkersets", "-n", namespace, "-o", "json").stdout)["items"]

    assert {health(LWS_HEALTH, lws)["status"] for lws in live_lws()} == {"Progressing"}
    lws_simulator.sync(namespace)
    assert [health(LWS_HEALTH, lws) for lws in live_lws()] == [
        {"status": "Healthy", "message": "All 1 groups ready and updated"},
        {"status": "Healthy", "message": "All 2 groups ready and updated"},
    ]  # decode (1 group) sorts before prefill (2)
    # The next commit renders the same objects: applying again changes nothing.
    again = sidecar.generate({"ARGOCD_APP_NAMESPACE": namespace, "ARGOCD_APP_REVISION": "0" * 40})
    reapplied = control_plane.kubectl("apply", "--server-side", "--field-manager=argocd-controller",
                                      "-f", "-", input=again.stdout.decode()).stdout
    assert reapplied.count("serverside-applied") == 5
    # Only an annotation changed: no new generation, so nothing to roll and the LWS stay Healthy.
    assert {health(LWS_HEALTH, lws)["status"] for lws in live_lws()} == {"Healthy"}
