"""Driving the real controllers of the upstream stack (testenv/upstream.py) from tests.

Side by side in two namespaces of one cluster: the controller runs a stored set in one, the
plugin steps the same set from a file in the other, and what each leaves behind is compared:
the objects (field for field, minus what the API server sets and our managed-by label), every
LWS's sequence of `spec.replicas` (recorded from a watch), and the status.
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kubectl_disagg.cli import main
from kubectl_disagg.core.api import naming

SET_PATH = "/apis/disaggregatedset.x-k8s.io/v1/namespaces/{}/disaggregatedsets"
LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{}/leaderworkersets"
SERVICE_PATH = "/api/v1/namespaces/{}/services"
POD_PATH = "/api/v1/namespaces/{}/pods"
# Set by the API server on every object, whoever wrote it.
SERVER_METADATA = ("namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
                   "ownerReferences", "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers")


def wait_until(check: Callable[[], object], what: str, timeout: float = 120.0, interval: float = 0.2):
    """Poll `check` until it returns something truthy (returned), or fail naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def set_document(name: str, namespace: str, roles: list[dict], *, slices: int = 1,
                 placement: dict | None = None) -> dict:
    """A DisaggregatedSet; each role `{"name", "replicas", "image", "size"?, "rolling"?}`."""
    specs = []
    for role in roles:
        template = {"spec": {"containers": [{"name": "server", "image": role["image"]}]}}
        spec: dict = {"replicas": role["replicas"],
                      "leaderWorkerTemplate": {"size": role.get("size", 1), "workerTemplate": template}}
        if role.get("rolling"):
            spec["rolloutStrategy"] = {"rollingUpdateConfiguration": role["rolling"]}
        specs.append({"name": role["name"], "spec": spec})
    document = {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
                "metadata": {"name": name, "namespace": namespace}, "spec": {"slices": slices, "roles": specs}}
    if placement:
        document["spec"]["placementPolicy"] = placement
    return document


def with_images(document: dict, image: str) -> dict:
    """The same set with every role's image changed: a new revision."""
    changed = copy.deepcopy(document)
    for role in changed["spec"]["roles"]:
        role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = image
    return changed


def in_namespace(document: dict, namespace: str) -> dict:
    moved = copy.deepcopy(document)
    moved["metadata"]["namespace"] = namespace
    return moved


class ReplicaRecorder:
    """Every LWS's `spec.replicas` over time in a namespace, from a watch: name → the distinct
    values in the order they were seen (a value repeated by consecutive events counts once), and
    whether the LWS was deleted."""

    def __init__(self, stack, namespace: str):
        self.stack, self.namespace = stack, namespace
        self.sequences: dict[str, list[int]] = {}
        self.deleted: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ReplicaRecorder:
        listed = self.stack.cp.request("GET", LWS_PATH.format(self.namespace))
        for obj in listed["items"]:
            self._seen(obj)
        version = listed["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._watch, args=(version,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(1.0)  # the watch delivers what happened just before
        self._stop.set()
        if self._thread:
            self._thread.join(10)

    def _seen(self, obj: dict) -> None:
        name = obj["metadata"]["name"]
        replicas = obj["spec"].get("replicas", 1)
        sequence = self.sequences.setdefault(name, [])
        if not sequence or sequence[-1] != replicas:
            sequence.append(replicas)

    def _watch(self, version: str) -> None:
        cp = self.stack.cp
        while not self._stop.is_set():
            path = f"{LWS_PATH.format(self.namespace)}?watch=1&resourceVersion={version}&timeoutSeconds=1"
            req = urllib.request.Request(cp.server + path, headers={"Authorization": f"Bearer {cp.token()}"})
            with contextlib.suppress(OSError), cp._opener.open(req, timeout=5) as stream:
                for line in stream:
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        break
                    obj = event["object"]
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] == "DELETED":
                        self.deleted.add(obj["metadata"]["name"])
                    else:
                        self._seen(obj)


class Side:
    """One namespace of the upstream stack, and the commands a person runs there."""

    def __init__(self, stack, namespace: str, capsys, tmp_path: Path):
        self.stack, self.namespace, self.capsys, self.tmp_path = stack, namespace, capsys, tmp_path
        self.cp = stack.cp

    # -- the controller's way: a stored set ---------------------------------------------------

    def apply(self, document: dict) -> dict:
        """Server-side apply of the set (as `kubectl apply --server-side`)."""
        name = document["metadata"]["name"]
        return self.cp.request("PATCH", f"{SET_PATH.format(self.namespace)}/{name}?fieldManager=test&force=true",
                               in_namespace(document, self.namespace), content_type="application/apply-patch+yaml")

    def stored(self, name: str) -> dict:
        return self.cp.request("GET", f"{SET_PATH.format(self.namespace)}/{name}")

    def controller_at_rest(self, name: str, timeout: float = 120.0) -> dict:
        """The stored set once the controller has observed its generation and found it Available."""
        def settled():
            stored = self.stored(name)
            status = stored.get("status") or {}
            available = any(c["type"] == "Available" and c["status"] == "True" for c in status.get("conditions") or [])
            if available and status.get("observedGeneration") == stored["metadata"]["generation"]:
                return stored
            return None
        return wait_until(settled, f"disaggregatedset/{name} Available in {self.namespace}", timeout)

    # -- the plugin's way: a file --------------------------------------------------------------

    def write(self, document: dict, label: str) -> Path:
        path = self.tmp_path / f"{self.namespace}-{label}.yaml"
        path.write_text(yaml.safe_dump(in_namespace(document, self.namespace), sort_keys=False))
        return path

    def cli(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main([*argv, "--kubeconfig", str(self.cp.kubeconfig)])
        out, err = self.capsys.readouterr()
        assert "Traceback" not in err
        return exited.value.code, out, err

    def step_until_complete(self, path: Path, timeout: str = "180s") -> tuple[int, str, str]:
        return self.cli("rollout", "step", "-f", str(path), "--until-complete", "--timeout", timeout)

    # -- reading ---------------------------------------------------------------------------------

    def objects(self, name: str) -> dict[tuple[str, str], dict]:
        """The set's LWS and Services by (kind, name), as stored."""
        selector = f"?labelSelector={naming.NAME_LABEL}%3D{name}"
        found = {}
        for kind, path in (("LeaderWorkerSet", LWS_PATH), ("Service", SERVICE_PATH)):
            for obj in self.cp.request("GET", path.format(self.namespace) + selector)["items"]:
                found[(kind, obj["metadata"]["name"])] = obj
        return found

    def pods(self) -> dict[str, str]:
        """name → uid of every pod in the namespace."""
        return {p["metadata"]["name"]: p["metadata"]["uid"]
                for p in self.cp.request("GET", POD_PATH.format(self.namespace))["items"]}


def comparable(obj: dict) -> dict:
    """An object as either side wrote it: without what the API server sets, the status, our
    managed-by label and the field managers' bookkeeping."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    metadata = out.get("metadata") or {}
    for key in SERVER_METADATA:
        metadata.pop(key, None)
    labels = metadata.get("labels") or {}
    labels.pop(naming.MANAGED_BY_LABEL, None)
    annotations = metadata.get("annotations") or {}
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if not annotations:
        metadata.pop("annotations", None)
    return out


def without_times(status: dict) -> dict:
    out = copy.deepcopy(status)
    for condition in out.get("conditions") or []:
        condition.pop("lastTransitionTime", None)
    return out
