"""Regenerate the testdata of the Argo CD health checks from a live control plane.

    python -m testenv.argocd_health_testdata    (or: make argocd-testdata)

Each scenario creates real objects on the local control plane (rendered by kubectl-disagg,
status written by the LWS status simulator or, where the simulator has no such mode, through
the status subresource the way a controller would), reads them back and writes them to
argocd/resource_customizations/<group>/<Kind>/testdata/ without the server-only noise
(managedFields, uid, resourceVersion, timestamps). The expected health of each file is written
by hand in health_test.yaml next to it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.core.delivery.sets import load_sets
from kubectl_disagg.manifests.writer import to_yaml
from kubectl_disagg.core.controller.render import render_set
from testenv.controlplane import ControlPlane
from testenv.lws_simulator import LWSSimulator

REPO = Path(__file__).resolve().parent.parent
CUSTOMIZATIONS = REPO / "argocd" / "resource_customizations"
EXAMPLE = REPO / "examples" / "prefill-decode.yaml"
LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{ns}/leaderworkersets"
DS_PATH = "/apis/disaggregatedset.x-k8s.io/v1/namespaces/{ns}/disaggregatedsets"
MERGE_PATCH = "application/merge-patch+json"
# Conditions need a transition time; a fixed one keeps the testdata stable.
TRANSITION = "2026-01-01T00:00:00Z"
SERVER_NOISE = ("managedFields", "uid", "resourceVersion", "creationTimestamp")


def example_set(namespace: str, replicas: dict[str, int] | None = None) -> dict:
    """The bundled prefill/decode example in `namespace`, roles resized as asked."""
    data = parse_stream(EXAMPLE.read_bytes(), str(EXAMPLE))[0].data
    data["metadata"]["namespace"] = namespace
    for role in data["spec"]["roles"]:
        role["spec"]["replicas"] = (replicas or {}).get(role["name"], role["spec"]["replicas"])
    return data


def prefill_lws(namespace: str, replicas: int = 2) -> dict:
    """The prefill LWS kubectl-disagg renders for the example."""
    document = parse_stream(EXAMPLE.read_bytes(), str(EXAMPLE))[0]
    document.data["metadata"]["namespace"] = namespace
    ds = load_sets([document])[0]
    lws = next(o for o in render_set(ds, namespace) if o["kind"] == "LeaderWorkerSet")
    lws["spec"]["replicas"] = replicas
    return lws


def condition(type_: str, status: str, reason: str, message: str) -> dict:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": TRANSITION}


class Session:
    def __init__(self, cp: ControlPlane):
        self.cp = cp
        self.api_client = cp.api_client()
        self.count = 0

    def namespace(self) -> str:
        self.count += 1
        name = f"health-{self.count}"
        self.cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        return name

    def create(self, path: str, body: dict) -> dict:
        return self.cp.request("POST", path.format(ns=body["metadata"]["namespace"]), body)

    def patch(self, path: str, obj: dict, body: dict, subresource: str = "") -> dict:
        url = f"{path.format(ns=obj['metadata']['namespace'])}/{obj['metadata']['name']}{subresource}"
        return self.cp.request("PATCH", url, body, content_type=MERGE_PATCH)

    def get(self, path: str, obj: dict) -> dict:
        return self.cp.request("GET", f"{path.format(ns=obj['metadata']['namespace'])}/{obj['metadata']['name']}")

    def simulator(self, observed_generation: bool = True) -> LWSSimulator:
        return LWSSimulator(self.api_client, observed_generation=observed_generation)


# --- LeaderWorkerSet scenarios: each returns the object as the server stores it -----------

def lws_no_status(s: Session) -> dict:
    return s.create(LWS_PATH, prefill_lws(s.namespace()))


def lws_not_ready(s: Session) -> dict:
    lws = s.create(LWS_PATH, prefill_lws(s.namespace()))
    sim = s.simulator()
    sim.never_ready()
    sim.sync(lws["metadata"]["namespace"])
    return s.get(LWS_PATH, lws)


def lws_partially_ready(s: Session) -> dict:
    lws = s.create(LWS_PATH, prefill_lws(s.namespace()))
    sim = s.simulator()
    sim.partially_ready(1)
    sim.sync(lws["metadata"]["namespace"])
    return s.get(LWS_PATH, lws)


def lws_stale(s: Session) -> dict:
    lws = s.create(LWS_PATH, prefill_lws(s.namespace()))
    s.simulator().sync(lws["metadata"]["namespace"])
    return s.patch(LWS_PATH, lws, {"spec": {"replicas": 3}})  # nobody observes generation 2


def lws_rolling_update(s: Session) -> dict:
    """Mid rolling update with one surge group: one of two groups on the new template."""
    lws = s.create(LWS_PATH, prefill_lws(s.namespace()))
    s.simulator().sync(lws["metadata"]["namespace"])
    s.patch(LWS_PATH, lws, {"status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 1}}, "/status")
    return s.get(LWS_PATH, lws)


def lws_scaling_down(s: Session) -> dict:
    lws = s.create(LWS_PATH, prefill_lws(s.namespace()))
    s.simulator().sync(lws["metadata"]["namespace"])
    lws = s.patch(LWS_PATH, lws, {"spec": {"replicas": 1}})
    s.patch(LWS_PATH, lws, {"status": {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2,
                                       "observedGeneration": lws["metadata"]["generation"]}}, "/status")
    return s.get(LWS_PATH, lws)


def lws_healthy(s: Session) -> dict:
    lws = s.create(LWS_PATH, prefill_lws(s.namespace()))
    s.simulator().sync(lws["metadata"]["namespace"])
    return s.get(LWS_PATH, lws)


def lws_healthy_without_observed_generation(s: Session) -> dict:
    """An LWS controller before v0.9 never writes observedGeneration: judged on counts alone."""
    lws = s.create(LWS_PATH, prefill_lws(s.namespace()))
    s.patch(LWS_PATH, lws, {"spec": {"replicas": 3}})
    s.simulator(observed_generation=False).sync(lws["metadata"]["namespace"])
    return s.get(LWS_PATH, lws)


def lws_zero(s: Session) -> dict:
    lws = s.create(LWS_PATH, prefill_lws(s.namespace(), replicas=0))
    s.simulator().sync(lws["metadata"]["namespace"])
    return s.get(LWS_PATH, lws)


def lws_zero_no_status(s: Session) -> dict:
    """Created at 0 groups, before the controller has written anything: not yet Healthy."""
    return s.create(LWS_PATH, prefill_lws(s.namespace(), replicas=0))


def partitioned_lws(s: Session, updated: int) -> dict:
    """4 groups, partition 2: groups 2..3 take the new template; `updated` of them have."""
    body = prefill_lws(s.namespace(), replicas=4)
    body["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] = {"partition": 2}
    lws = s.create(LWS_PATH, body)
    s.patch(LWS_PATH, lws, {"status": {
        "observedGeneration": lws["metadata"]["generation"], "replicas": 4, "readyReplicas": 4,
        "updatedReplicas": updated,
        "conditions": [condition("Available", "True", "AllGroupsReady", "All replicas are ready")],
    }}, "/status")
    return s.get(LWS_PATH, lws)


def lws_partitioned_complete(s: Session) -> dict:
    return partitioned_lws(s, updated=2)


def lws_partitioned_rolling(s: Session) -> dict:
    return partitioned_lws(s, updated=1)


def lws_failed(s: Session) -> dict:
    lws = s.create(LWS_PATH, prefill_lws(s.namespace()))
    sim = s.simulator()
    sim.never_ready()
    sim.sync(lws["metadata"]["namespace"])
    s.patch(LWS_PATH, lws, {"status": {"conditions": [
        condition("Available", "False", "GroupsNotReady", "0 of 2 groups ready"),
        condition("Failed", "True", "CreateFailed", "pods \"llama-0-036a2009-prefill-0\" is forbidden: exceeded quota"),
    ]}}, "/status")
    return s.get(LWS_PATH, lws)


# --- DisaggregatedSet scenarios (status as its controller writes it) ------------------------

def ds_status(generation: int, roles: dict[str, tuple[int, int, int]], conditions: list[dict]) -> dict:
    return {"status": {
        "observedGeneration": generation,
        "roleStatuses": [{"name": name, "replicas": r, "readyReplicas": ready, "updatedReplicas": u}
                         for name, (r, ready, u) in roles.items()],
        "conditions": conditions,
    }}


def ds_with(s: Session, roles: dict[str, tuple[int, int, int]], conditions: list[dict],
            replicas: dict[str, int] | None = None) -> dict:
    ds = s.create(DS_PATH, example_set(s.namespace(), replicas))
    s.patch(DS_PATH, ds, ds_status(ds["metadata"]["generation"], roles, conditions), "/status")
    return s.get(DS_PATH, ds)


AVAILABLE = [condition("Available", "True", "AllRolesReady", "every role is ready"),
             condition("Progressing", "False", "AllRolesReady", "every role is ready")]
ROLLING = [condition("Available", "False", "RolloutInProgress", "rolling out revision 5d3c1a7e"),
           condition("Progressing", "True", "RolloutInProgress", "rolling out revision 5d3c1a7e")]


def ds_no_status(s: Session) -> dict:
    return s.create(DS_PATH, example_set(s.namespace()))


def ds_rolling(s: Session) -> dict:
    return ds_with(s, {"prefill": (3, 2, 1), "decode": (1, 1, 1)}, ROLLING)


def ds_not_ready(s: Session) -> dict:
    return ds_with(s, {"prefill": (2, 2, 2), "decode": (1, 0, 1)}, ROLLING)


def ds_stale(s: Session) -> dict:
    ds = ds_with(s, {"prefill": (2, 2, 2), "decode": (1, 1, 1)}, AVAILABLE)
    return s.patch(DS_PATH, ds, {"spec": {"slices": 2}})


def ds_healthy(s: Session) -> dict:
    return ds_with(s, {"prefill": (2, 2, 2), "decode": (1, 1, 1)}, AVAILABLE)


def ds_zero(s: Session) -> dict:
    return ds_with(s, {"prefill": (0, 0, 0), "decode": (0, 0, 0)}, AVAILABLE, {"prefill": 0, "decode": 0})


def ds_zero_no_status(s: Session) -> dict:
    """Every role at 0 and no controller status: still nobody has said it is there."""
    return s.create(DS_PATH, example_set(s.namespace(), {"prefill": 0, "decode": 0}))


def external_decode(namespace: str) -> dict:
    data = example_set(namespace)
    decode = next(role for role in data["spec"]["roles"] if role["name"] == "decode")
    decode["scaling"] = {"mode": "External"}
    del decode["spec"]["replicas"]
    return data


def ds_external_raised(s: Session) -> dict:
    """The autoscaler raised decode to 3; its LWS still has 1 group, all ready. Only the
    controller knows the scaler's target: its conditions say the set is progressing."""
    ds = s.create(DS_PATH, external_decode(s.namespace()))
    s.patch(DS_PATH, ds, ds_status(ds["metadata"]["generation"], {"prefill": (2, 2, 2), "decode": (1, 1, 1)}, [
        condition("Available", "False", "RolloutInProgress", "decode: 1 of 3 groups (scaler target)"),
        condition("Progressing", "True", "RolloutInProgress", "decode: 1 of 3 groups (scaler target)"),
    ]), "/status")
    return s.get(DS_PATH, ds)


def ds_external_healthy(s: Session) -> dict:
    ds = s.create(DS_PATH, external_decode(s.namespace()))
    s.patch(DS_PATH, ds, ds_status(ds["metadata"]["generation"], {"prefill": (2, 2, 2), "decode": (3, 3, 3)},
                                   AVAILABLE), "/status")
    return s.get(DS_PATH, ds)


def ds_degraded(s: Session) -> dict:
    return ds_with(s, {"prefill": (2, 2, 2), "decode": (1, 0, 1)}, [
        condition("Available", "False", "RolloutInProgress", "rolling out revision 5d3c1a7e"),
        condition("Degraded", "True", "LeaderWorkerSetFailed", "decode: LeaderWorkerSet llama-0-5d3c1a7e-decode failed"),
    ])


SCENARIOS: dict[str, dict[str, Callable[[Session], dict]]] = {
    "leaderworkerset.x-k8s.io/LeaderWorkerSet": {
        "progressing-no-status": lws_no_status,
        "progressing-not-ready": lws_not_ready,
        "progressing-partially-ready": lws_partially_ready,
        "progressing-stale": lws_stale,
        "progressing-rolling-update": lws_rolling_update,
        "progressing-scaling-down": lws_scaling_down,
        "healthy": lws_healthy,
        "healthy-without-observed-generation": lws_healthy_without_observed_generation,
        "healthy-zero": lws_zero,
        "degraded-failed-condition": lws_failed,
        "progressing-zero-no-status": lws_zero_no_status,
        "healthy-partitioned": lws_partitioned_complete,
        "progressing-partitioned": lws_partitioned_rolling,
    },
    "disaggregatedset.x-k8s.io/DisaggregatedSet": {
        "progressing-no-status": ds_no_status,
        "progressing-rolling-update": ds_rolling,
        "progressing-not-ready": ds_not_ready,
        "progressing-stale": ds_stale,
        "healthy": ds_healthy,
        "healthy-zero": ds_zero,
        "degraded-condition": ds_degraded,
        "progressing-zero-no-status": ds_zero_no_status,
        "progressing-external-raised": ds_external_raised,
        "healthy-external": ds_external_healthy,
    },
}


def without_noise(obj: dict) -> dict:
    metadata = obj["metadata"]
    for key in SERVER_NOISE:
        metadata.pop(key, None)
    return obj


def main() -> int:
    with ControlPlane() as cp:
        session = Session(cp)
        for kind, scenarios in SCENARIOS.items():
            directory = CUSTOMIZATIONS / kind / "testdata"
            directory.mkdir(parents=True, exist_ok=True)
            for stale in directory.glob("*.yaml"):
                stale.unlink()
            for name, scenario in scenarios.items():
                (directory / f"{name}.yaml").write_text(to_yaml(without_noise(scenario(session))))
                print(f"{kind}/testdata/{name}.yaml", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
