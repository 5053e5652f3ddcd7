"""The one in-memory cluster of the unit tests (integration tests use a real kube-apiserver).

`MemoryCluster` stands in for the API server and the LWS controller: it applies reconcile
actions with the same preconditions the real executor sends, and settles LWS status on request.
`MemoryExecutor` is that cluster as a `rollout.executors.Executor` (the LWS controller settles
status while it 'watches'); `MemorySession` adds what a command's session has besides (a
default namespace, Events, the RolloutState kind not served), for `run.step`,
`rollout status` and `rollout step --gitops`."""

from __future__ import annotations

import contextlib
import itertools
import threading
from types import SimpleNamespace

from kubectl_disagg import errors
from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.reconcile import Annotate, Create, Delete, Scale
from kubectl_disagg.core.controller.snapshot import Snapshot, lws_from_object, service_from_object
from testenv.lws_simulator import lws_conditions


class Conflict(Exception):
    pass


def fresh(obj):
    """A copy of a JSON object as a read from the API server returns it: every dict and list new,
    the scalars shared (copy.deepcopy's memo and dispatch cost the property tests most of their time)."""
    if type(obj) is dict:
        return {key: fresh(value) for key, value in obj.items()}
    if type(obj) is list:
        return [fresh(value) for value in obj]
    if type(obj) is tuple:
        return tuple(fresh(value) for value in obj)
    return obj


class MemoryCluster:
    def __init__(self, namespace: str = "default", scalers: bool = False):
        self.namespace = namespace
        self.serves_scalers = scalers  # the RoleScaler CRD is installed
        self.objects: dict[tuple[str, str], dict] = {}
        self._counter = itertools.count(1)

    def _stamp(self, obj: dict) -> None:
        obj["metadata"]["resourceVersion"] = str(next(self._counter))

    def add(self, obj: dict) -> dict:
        obj = fresh(obj)
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
            objects={(o["kind"], o["metadata"]["name"]): fresh(o) for o in mine},
        )

    def occupants(self, names) -> dict[tuple[str, str], dict]:
        """The objects at these (kind, name)s, as a GET of each would find them."""
        return {key: fresh(self.objects[key]) for key in names if key in self.objects}

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


class MemoryExecutor:
    """MemoryCluster as an Executor; the LWS controller settles status while we 'watch'."""

    def __init__(self, cluster: MemoryCluster, conflicts: int = 0, conflict_on: str | None = None):
        # `conflicts`: the next so many writes get a 409; `conflict_on`: the next write of that name does.
        self.cluster, self.conflicts, self.conflict_on = cluster, conflicts, conflict_on
        self.lock = threading.RLock()  # a pass may write from several threads (max_in_flight)
        self.leases = 0
        self.watches = 0
        self.authorized: list[int] = []  # actions per pass, checked before its writes
        self.waits: list = []

    def snapshot(self, set_name, namespace, services=True, scalers=False):
        with self.lock:
            return self.cluster.snapshot(set_name)

    def execute(self, action, namespace, *, dry_run=False):
        if dry_run:
            return  # judged only, and the memory cluster refuses nothing: nothing is stored
        if self.conflicts:
            self.conflicts -= 1
            raise errors.Conflict(f"{action.kind.lower()}/{action.name} changed since it was read")
        if action.name == self.conflict_on:
            self.conflict_on = None  # once: the next pass goes through
            raise errors.Conflict(f"{action.kind.lower()}/{action.name} changed since it was read (409 Conflict)")
        try:
            with self.lock:
                self.cluster.execute([action])
        except Conflict as err:  # as the cluster executor says it
            raise errors.Conflict(str(err)) from None

    def authorize(self, actions, namespace):
        self.authorized.append(len(actions))

    def occupants(self, names, namespace):
        with self.lock:
            return self.cluster.occupants(names)

    @contextlib.contextmanager
    def lease(self, set_name, namespace, wait_until=None):
        self.leases += 1
        self.waits.append(None if wait_until is None else wait_until.at if wait_until.at is not None else float("inf"))
        yield SimpleNamespace(duration=30, renew_if_due=lambda: None)

    def wait_for_change(self, set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet",
                        state_version=None):
        self.watches += 1
        self.cluster.settle()
        return True


class MemorySession(MemoryExecutor):
    """The executor with what a command's session has besides: a default namespace, Events, the
    stored sets (`stored_set`, `set_names`: the DisaggregatedSet objects added to the cluster),
    and no RolloutState kind served. With `watches=False` a watch is a test failure (a command
    run without --wait must not watch); with `quiet`, a watch sees no change (it returns at once
    what a real one returns at its timeout). `watched`: each watch's timeout; `requests`: the
    reads of a stored set, as the API requests they are."""

    default_namespace = "serving"

    def __init__(self, cluster: MemoryCluster | None = None, *args, events_fail: bool = False, watches: bool = True,
                 quiet: bool = False, **kwargs):
        super().__init__(MemoryCluster(self.default_namespace) if cluster is None else cluster, *args, **kwargs)
        self.events, self.events_fail, self.watch_allowed, self.quiet = [], events_fail, watches, quiet
        self.client = SimpleNamespace(serves=lambda resource: False)  # the RolloutState kind is not served
        self.watched: list[float] = []
        self.requests: list[str] = []

    def stored_set(self, name, namespace):
        self.requests.append("get disaggregatedset")
        obj = self.cluster.objects.get(("DisaggregatedSet", name))
        return None if obj is None else fresh(obj)

    def set_names(self, namespace):
        """As the session's: the stored sets and the names the LWS labels carry (two LISTs)."""
        self.requests.extend(["list disaggregatedsets", "list leaderworkersets"])
        labelled = (o["metadata"].get("labels", {}).get(naming.NAME_LABEL, "") for o in self.cluster.lws().values())
        stored = (name for kind, name in self.cluster.objects if kind == "DisaggregatedSet")
        return sorted({name for name in (*stored, *labelled) if name})

    def snapshot(self, set_name, namespace, services=True, scalers=False):
        self.requests.append("list leaderworkersets")
        return super().snapshot(set_name, namespace, services, scalers)

    def record_event(self, event):
        if self.events_fail:
            raise errors.UserError("events.events.k8s.io is forbidden")
        self.events.append(event)

    def rollout_state(self, set_name, namespace):
        return None  # the kind is not served

    def wait_for_change(self, set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet",
                        state_version=None):
        if not self.watch_allowed:
            raise AssertionError("without --wait, nothing is watched")
        self.watched.append(timeout)
        if self.quiet:
            self.watches += 1
            return False
        return super().wait_for_change(set_name, namespace, resource_version, timeout)
