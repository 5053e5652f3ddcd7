"""An in-memory stand-in for the API server and the LWS controller, for unit tests of the
pure core only (integration tests use a real kube-apiserver). It applies reconcile actions
with the same preconditions the real executor sends, and settles LWS status on request."""

from __future__ import annotations

import copy
import itertools

from kubectl_disagg.core import naming
from kubectl_disagg.core.reconcile import Annotate, Create, Delete, Scale
from kubectl_disagg.core.snapshot import Snapshot, lws_from_object, service_from_object
from testenv.lws_simulator import lws_conditions


class Conflict(Exception):
    pass


class MemoryCluster:
    def __init__(self, namespace: str = "default", scalers: bool = False):
        self.namespace = namespace
        self.serves_scalers = scalers  # the RoleScaler CRD is installed
        self.objects: dict[tuple[str, str], dict] = {}
        self._counter = itertools.count(1)

    def _stamp(self, obj: dict) -> None:
        obj["metadata"]["resourceVersion"] = str(next(self._counter))

    def add(self, obj: dict) -> dict:
        obj = copy.deepcopy(obj)
        metadata = obj["metadata"]
        tick = next(self._counter)
        metadata.setdefault("uid", f"uid-{tick}")
        metadata.setdefault("creationTimestamp", f"2026-01-01T00:{tick // 60:02d}:{tick % 60:02d}Z")
        metadata["generation"] = 1
        self._stamp(obj)
        if (obj["kind"], metadata["name"]) in self.objects:
            raise Conflict(f"{metadata['name']} already exists")
        self.objects[(obj["kind"], metadata["name"])] = obj
        return obj

    def snapshot(self, set_name: str) -> Snapshot:
        mine = [o for o in self.objects.values() if o["metadata"].get("labels", {}).get(naming.NAME_LABEL) == set_name]
        return Snapshot(
            self.namespace,
            tuple(lws_from_object(o) for o in mine if o["kind"] == "LeaderWorkerSet"),
            tuple(service_from_object(o) for o in mine if o["kind"] == "Service"),
            scalers={name: o["spec"]["replicas"] for (kind, name), o in self.objects.items()
                     if kind == naming.SCALER_KIND},
            scalers_served=self.serves_scalers,
            objects={(o["kind"], o["metadata"]["name"]): copy.deepcopy(o) for o in mine},
        )

    def occupants(self, names) -> dict[tuple[str, str], dict]:
        """The objects at these (kind, name)s, as a GET of each would find them."""
        return {key: copy.deepcopy(self.objects[key]) for key in names if key in self.objects}

    def _get(self, kind: str, name: str, resource_version: str) -> dict:
        obj = self.objects.get((kind, name))
        if obj is None:
            raise Conflict(f"{name} not found")
        if obj["metadata"]["resourceVersion"] != resource_version:
            raise Conflict(f"{name} changed since it was read")
        return obj

    def _replicas_at(self, name: str, replicas: int) -> dict:
        obj = self.objects.get(("LeaderWorkerSet", name))
        if obj is None:
            raise Conflict(f"{name} not found")
        if obj["spec"].get("replicas", 1) != replicas:
            raise Conflict(f"{name}: spec.replicas changed since it was read")
        return obj

    def execute(self, actions) -> None:
        for action in actions:
            if isinstance(action, Create):
                self.add(dict(action.object))
            elif isinstance(action, Scale):  # preconditioned on spec.replicas, as the JSON patch is
                obj = self._replicas_at(action.name, action.from_replicas)
                obj["spec"]["replicas"] = action.to_replicas
                obj["metadata"]["generation"] += 1
                self._stamp(obj)
            elif isinstance(action, Annotate):
                obj = self._replicas_at(action.name, action.replicas)
                obj["metadata"].setdefault("annotations", {}).update(action.annotations)
                self._stamp(obj)
            elif isinstance(action, Delete):
                self._get(action.kind, action.name, action.resource_version)
                del self.objects[(action.kind, action.name)]
            else:  # pragma: no cover
                raise TypeError(action)

    def settle(self, ready_cap=None, stale=()) -> None:
        """Play the LWS controller: status follows spec.replicas (ready capped per name)."""
        for (kind, name), obj in self.objects.items():
            if kind != "LeaderWorkerSet" or name in stale:
                continue
            replicas = obj["spec"].get("replicas", 1)
            ready = replicas if ready_cap is None else min(replicas, ready_cap(name, replicas))
            obj["status"] = {"replicas": replicas, "readyReplicas": ready, "updatedReplicas": replicas,
                             "observedGeneration": obj["metadata"]["generation"],
                             "conditions": lws_conditions(obj, available=ready == replicas)}

    def lws(self) -> dict[str, dict]:
        return {name: o for (kind, name), o in self.objects.items() if kind == "LeaderWorkerSet"}
