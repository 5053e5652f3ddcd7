"""The dashboard's view of the cluster: one LIST+WATCH per kind and namespace, shared by every
tab open on the page (an informer's reasoning: a list at one resourceVersion plus every change
after it is the state at the last change).

Each `Informer` runs in a thread of its own: it LISTs its kind, then watches from the list's
resourceVersion through `RestClient.next_events` (the client every command uses), applying each
event to its objects. A watch the server ends is started again from where it stood; history
compacted (410 Gone) or any other failure lists again, after a short back-off for a failure,
and meanwhile the informer is `behind` (since when, and why), which the page shows. A kind the
cluster does not serve (its CRD not installed) is listed as empty, once. Every change bumps the
hub's `generation` and wakes whoever waits for one (`wait`).

`CachedCluster` is the session the looks read (rollout/status.py's reads, the git store's):
snapshots and RolloutStates answered from the informers, so that drawing the page sends no
request; everything else goes to the real session beneath.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.snapshot import Snapshot, lws_from_object, service_from_object
from kubectl_disagg.kube.client import (DISAGGREGATED_SET, EVENT, LWS, ROLLOUT_STATE, SERVICE, Gone, NotFound,
                                        Resource, RestClient, with_kind)
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.rollout.progressive import ROLLOUT_POLICY

WATCH_SECONDS = 30.0  # how long one WATCH request lasts before it is started again (the server ends it)
BACKOFF_SECONDS = (0.5, 1.0, 2.0, 5.0)  # after a failed LIST or WATCH, before the next one
KINDS = (DISAGGREGATED_SET, ROLLOUT_POLICY, LWS, SERVICE, ROLLOUT_STATE, EVENT)
Key = tuple[str, str]  # (namespace, name)


class Informer:
    """One kind in one namespace ("" for all), kept current by a LIST and then a WATCH."""

    def __init__(self, client: RestClient, resource: Resource, namespace: str, changed: Callable[[], None],
                 clock: Clock = SYSTEM_CLOCK, watch_seconds: float = WATCH_SECONDS):
        self.client, self.resource, self.namespace, self.changed = client, resource, namespace, changed
        self.clock, self.watch_seconds = clock, watch_seconds
        self.items: dict[Key, JsonObject] = {}
        self.resource_version = ""
        self.synced = False
        self.served = True
        self.behind_since: str | None = None  # when it fell behind (None: current, or not yet listed)
        self.error = ""
        self.lists = 0  # LISTs sent (one, unless a watch was lost)
        self.lock = threading.Lock()

    def objects(self) -> list[JsonObject]:
        with self.lock:
            return list(self.items.values())

    def run(self, stop: threading.Event) -> None:
        failures = 0
        while not stop.is_set():
            try:
                if not self.synced:
                    self._list()
                    if not self.served:
                        return
                else:
                    self._watch()
                failures = 0
            except Gone:
                self.synced = False  # history compacted: list again at once
            except Exception as err:  # noqa: BLE001 (a cut, a refusal: the page says it, we list again)
                with self.lock:
                    self.synced = False
                    self.error = str(err) or type(err).__name__
                    self.behind_since = self.behind_since or self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
                self.changed()
                stop.wait(BACKOFF_SECONDS[min(failures, len(BACKOFF_SECONDS) - 1)])
                failures += 1

    def _list(self) -> None:
        try:
            answer = self.client.list(self.resource, self.namespace, "")
        except NotFound:  # the kind is not served here
            with self.lock:
                self.items, self.synced, self.served, self.behind_since, self.error = {}, True, False, None, ""
            self.changed()
            return
        items = {_key(item): with_kind(item, self.resource) for item in answer.get("items") or []}
        with self.lock:
            self.items, self.synced, self.behind_since, self.error = items, True, None, ""
            self.resource_version = str((answer.get("metadata") or {}).get("resourceVersion") or "")
            self.lists += 1
        self.changed()

    def _watch(self) -> None:
        events = self.client.next_events(self.resource, self.namespace, "", self.resource_version,
                                         self.watch_seconds)
        if not events:
            return
        with self.lock:
            for event in events:
                self._apply(event)
        self.changed()

    def _apply(self, event: JsonObject) -> None:
        obj = event.get("object") or {}
        version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        if event.get("type") == "DELETED":
            self.items.pop(_key(obj), None)
        elif event.get("type") in ("ADDED", "MODIFIED"):
            self.items[_key(obj)] = with_kind(obj, self.resource)
        if version:
            self.resource_version = version

    def behind(self) -> dict[str, str] | None:
        with self.lock:
            if self.synced or (self.behind_since is None and not self.error):
                return None if self.synced else {"kind": self.resource.kind, "namespace": self.namespace,
                                                 "since": "", "why": "not listed yet"}
            return {"kind": self.resource.kind, "namespace": self.namespace, "since": self.behind_since or "",
                    "why": self.error}


def _key(obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


class Hub:
    """The informers of `namespace` ("" for all), one per kind, and the generation of what they
    hold: `wait(after)` returns once it has moved past `after` (or the time is up)."""

    def __init__(self, client: RestClient, namespace: str, kinds: Iterable[Resource] = KINDS,
                 clock: Clock = SYSTEM_CLOCK, watch_seconds: float = WATCH_SECONDS):
        self.namespace = namespace
        self.generation = 0
        self._moved = threading.Condition()
        self._stop = threading.Event()
        self.informers = {resource.kind: Informer(client, resource, namespace, self._changed, clock, watch_seconds)
                          for resource in kinds}
        self._threads: list[threading.Thread] = []

    def _changed(self) -> None:
        with self._moved:
            self.generation += 1
            self._moved.notify_all()

    def start(self) -> Hub:
        for kind, informer in self.informers.items():
            thread = threading.Thread(target=informer.run, args=(self._stop,), daemon=True, name=f"informer {kind}")
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._changed()

    def wait(self, after: int, timeout: float) -> int:
        with self._moved:
            self._moved.wait_for(lambda: self.generation != after or self._stop.is_set(), timeout)
            return self.generation

    def synced(self) -> bool:
        return all(informer.synced for informer in self.informers.values())

    def behind_failed(self) -> bool:
        """Some informer has failed (its error said): waiting for it to list is waiting in vain."""
        return any(informer.error for informer in self.informers.values())

    def objects(self, kind: str) -> list[JsonObject]:
        informer = self.informers.get(kind)
        return informer.objects() if informer is not None else []

    def behind(self) -> list[dict[str, str]]:
        return [b for informer in self.informers.values() if (b := informer.behind()) is not None]


class CachedCluster:
    """The reads of a look, answered from the hub (a set's LWS and Services, its RolloutState);
    the rest (the client: discovery, a Lease) from `session`."""

    def __init__(self, session: Any, hub: Hub):
        self.session, self.hub = session, hub
        self.client = session.client
        self.default_namespace: str = session.default_namespace
        self._parsed: dict[tuple[str, str, str], Any] = {}  # (namespace, name, resourceVersion) → its parsed view

    def _parse(self, obj: JsonObject, parse: Callable[[JsonObject], Any]) -> Any:
        """An object's parsed view, kept per object version: a change to one LWS of a thousand re-parses one."""
        metadata = obj["metadata"]
        key = (str(metadata.get("namespace")), str(metadata.get("name")), str(metadata.get("resourceVersion")))
        parsed = self._parsed.get(key)
        if parsed is None:
            if len(self._parsed) > 50_000:
                self._parsed.clear()
            parsed = self._parsed[key] = parse(obj)
        return parsed

    def _mine(self, kind: str, set_name: str, namespace: str) -> list[JsonObject]:
        return [obj for obj in self.hub.objects(kind)
                if (obj.get("metadata") or {}).get("namespace") == namespace
                and ((obj.get("metadata") or {}).get("labels") or {}).get(naming.NAME_LABEL) == set_name]

    def snapshot(self, set_name: str, namespace: str, services: bool = True, scalers: bool = False) -> Snapshot:
        lws = sorted(self._mine(LWS.kind, set_name, namespace), key=lambda obj: obj["metadata"]["name"])
        service_items = self._mine(SERVICE.kind, set_name, namespace) if services else []
        informers = self.hub.informers
        return Snapshot(namespace=namespace, lws=tuple(self._parse(obj, lws_from_object) for obj in lws),
                        services=tuple(self._parse(obj, service_from_object) for obj in service_items),
                        lws_resource_version=informers[LWS.kind].resource_version,
                        services_resource_version=informers[SERVICE.kind].resource_version if SERVICE.kind
                        in informers else "",
                        scalers={}, scalers_served=False,
                        objects={(o["kind"], o["metadata"]["name"]): o for o in (*lws, *service_items)})

    def rollout_state(self, set_name: str, namespace: str) -> JsonObject | None:
        return next((obj for obj in self.hub.objects(ROLLOUT_STATE.kind)
                     if (obj.get("metadata") or {}).get("namespace") == namespace
                     and obj["metadata"].get("name") == set_name), None)

    def wait_for_change(self, set_name: str, namespace: str, resource_version: str, timeout: float,
                        kind: str = naming.LWS_KIND, state_version: str | None = None) -> bool:
        """The hub watches everything: a look is taken on its changes, not on this."""
        return False
