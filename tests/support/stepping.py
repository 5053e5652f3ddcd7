"""Driving `rollout step` against the control plane and checking what it left, shared by the integration tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from kubectl_disagg.cli import main
from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.reconcile import Scale
from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.core.api.rollout_config import resolve_config
from kubectl_disagg.exits import StepExit
from kubectl_disagg.kube.executor import ClusterExecutor
from tests.support.paths import load_sets
from tests.support.sets import set_selector


LWS = ("leaderworkerset.x-k8s.io", "v1")


SET = "llm"


def write_set(directory: Path, namespace: str, replicas: dict[str, int], *, image: str = "img:1",
              slices: int = 1, rolling: dict | None = None, name: str = SET) -> Path:
    roles = []
    for role, count in replicas.items():
        spec: dict = {"replicas": count, "leaderWorkerTemplate": {
            "workerTemplate": {"spec": {"containers": [{"name": "server", "image": image}]}}}}
        if rolling and role in rolling:
            spec["rolloutStrategy"] = {"rollingUpdateConfiguration": rolling[role]}
        roles.append({"name": role, "spec": spec})
    document = {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"slices": slices, "roles": roles}}
    shape = "-".join(f"{role}{count}" for role, count in replicas.items())
    path = directory / f"{name}-{image.replace(':', '-')}-{slices}-{shape}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def model(path: Path) -> DisaggregatedSet:
    (ds,) = load_sets([str(path)]).sets
    return ds


@dataclass
class Live:
    api: client.ApiClient
    namespace: str

    def lws(self, selector: str = set_selector(SET)) -> list[dict]:
        api = client.CustomObjectsApi(self.api)
        return api.list_namespaced_custom_object(*LWS, self.namespace, "leaderworkersets",
                                                 label_selector=selector)["items"]

    def services(self, selector: str = set_selector(SET)) -> list[dict]:
        listed = client.CoreV1Api(self.api).list_namespaced_service(
            self.namespace, label_selector=selector, _preload_content=False)
        return json.loads(listed.data)["items"]

    def groups(self, name: str = SET) -> dict[int, dict[str, dict[str, int]]]:
        """slice → revision → role → spec.replicas, for the set's own LWS."""
        out: dict = {}
        for obj in self.lws(set_selector(name)):
            labels = obj["metadata"]["labels"]
            out.setdefault(int(labels[naming.SLICE_LABEL]), {}).setdefault(
                labels[naming.REVISION_LABEL], {})[labels[naming.ROLE_LABEL]] = obj["spec"].get("replicas", 1)
        return out

    def versions(self) -> dict[str, str]:
        """name → resourceVersion of every LWS and Service in the namespace."""
        objects = self.lws("") + self.services("")
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in objects}

    def totals(self, name: str = SET) -> dict[int, dict[str, int]]:
        return {s: _role_totals(groups) for s, groups in self.groups(name).items()}


def _role_totals(groups: dict[str, dict[str, int]]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for roles in groups.values():
        for role, count in roles.items():
            totals[role] = totals.get(role, 0) + count
    return totals


def check_invariants(ds: DisaggregatedSet, live: Live, initial: dict[int, dict[str, int]]) -> None:
    for slice_index, groups in live.groups(ds.name).items():
        for revision, roles in groups.items():
            counts = list(roles.values())
            assert all(c == 0 for c in counts) or all(c > 0 for c in counts), (
                f"slice {slice_index} revision {revision} is partly drained: {roles}")
        for role in ds.roles:
            total = sum(group.get(role.name, 0) for group in groups.values())
            surge = max(resolve_config(role.rolling_update, role.replicas).surge, 1)
            ceiling = max(role.replicas + surge, initial.get(slice_index, {}).get(role.name, 0))
            assert total <= ceiling, f"slice {slice_index} role {role.name}: {total} > {ceiling}: {groups}"


def is_subset(wanted, live) -> bool:
    """Every field `render` set is there with the same value; the server may add defaults."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(k in live and is_subset(v, live[k]) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(live, list) and len(live) == len(wanted) and all(map(is_subset, wanted, live))
    return wanted == live


def assert_matches_render(ds: DisaggregatedSet, live: Live, *, services: bool = True) -> None:
    wanted = {(o["kind"], o["metadata"]["name"]): o for o in render_set(ds, live.namespace)
              if services or o["kind"] != "Service"}
    actual = {("LeaderWorkerSet", o["metadata"]["name"]): o for o in live.lws(set_selector(ds.name))}
    actual |= {("Service", o["metadata"]["name"]): o for o in live.services(set_selector(ds.name))}
    assert sorted(actual) == sorted(wanted)
    for key, obj in wanted.items():
        assert actual[key]["metadata"]["labels"] == obj["metadata"]["labels"], key
        assert is_subset(obj["spec"], actual[key]["spec"]), key


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict:
        return json.loads(self.out)


class Stepper:
    """`kubectl disagg rollout step` as a user runs it, plus a driver that settles status."""

    def __init__(self, control_plane, namespace: str, capsys, simulator, api_client):
        self.control_plane, self.namespace, self.capsys, self.simulator = control_plane, namespace, capsys, simulator
        self.live = Live(api_client, namespace)

    def __call__(self, path: Path, *args: str, context: str = "admin") -> Run:
        argv = ["rollout", "step", "-f", str(path), "--kubeconfig", str(self.control_plane.kubeconfig),
                "--context", context, *args]
        self.capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(argv)
        out, err = self.capsys.readouterr()
        assert "Traceback" not in err
        return Run(exited.value.code, out, err)

    def drive(self, path: Path, *, until=lambda doc: doc["complete"], max_passes: int = 80,
              sync: bool = True) -> list[dict]:
        """Step (checking the invariants after each pass) and settle status until `until(doc)`."""
        ds = model(path)
        initial = self.live.totals(ds.name)
        history = []
        for _ in range(max_passes):
            run = self(path, "-o", "json")
            assert run.code == StepExit.OK, run.err
            doc = run.json()
            history.append(doc)
            check_invariants(ds, self.live, initial)
            if until(doc):
                return history
            if sync:
                self.simulator.sync(self.namespace)
        raise AssertionError(f"not done after {max_passes} passes; last: {history[-1]['slices']}")


def cli(stepper: Stepper, *argv: str) -> tuple[int, str, str]:
    """Any kubectl-disagg command as a user runs it, against the stepper's control plane."""
    stepper.capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--kubeconfig", str(stepper.control_plane.kubeconfig)])
    out, err = stepper.capsys.readouterr()
    assert "Traceback" not in err
    return exited.value.code, out, err


def kinds_of(doc: dict) -> list[str]:
    return [action["action"].split()[0] for entry in doc["slices"] for action in entry["actions"]]


def interfere_before_writes(monkeypatch, api_client, namespace: str, interference, *, every: bool) -> list[str]:
    """Have someone else write to an LWS between a pass's read and its scale (the first, or every one)."""
    real_execute = ClusterExecutor.execute
    touched: list[str] = []

    def execute(self, action, namespace_=None, **options):
        if isinstance(action, Scale) and (every or not touched):
            touched.append(action.name)
            interference(client.CustomObjectsApi(api_client), action)
        return real_execute(self, action, namespace_, **options)

    monkeypatch.setattr(ClusterExecutor, "execute", execute)
    return touched


def write_replicas(api: client.CustomObjectsApi, action: Scale, namespace: str, replicas: int) -> None:
    api.patch_namespaced_custom_object(*LWS, namespace, "leaderworkersets", action.name,
                                       {"spec": {"replicas": replicas}},
                                       _content_type="application/merge-patch+json")
