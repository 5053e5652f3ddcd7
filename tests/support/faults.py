"""Recording what a rollout did under injected faults."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from kubernetes import client, watch

from kubectl_disagg.core.api import naming
from tests.support.stepping import LWS
from tests.support.sets import set_selector


@dataclass
class Recorder:
    """Every replica state of the set's LWS the API server went through, from one WATCH."""

    api: client.ApiClient
    namespace: str
    name: str
    points: list[dict] = field(default_factory=list)  # each: (slice, revision, role) → replicas
    errors: list[BaseException] = field(default_factory=list)

    def __post_init__(self):
        self._stop = threading.Event()
        self._lws = client.CustomObjectsApi(self.api)
        listed = self._lws.list_namespaced_custom_object(*LWS, self.namespace, "leaderworkersets",
                                                         label_selector=set_selector(self.name))
        self._state = {_key(o): (o["spec"].get("replicas", 1)) for o in listed["items"]}
        self.points.append(dict(self._state))
        self._version = listed["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, name="watch-recorder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                stream = watch.Watch().stream(
                    self._lws.list_namespaced_custom_object, *LWS, self.namespace, "leaderworkersets",
                    label_selector=set_selector(self.name), resource_version=self._version,
                    timeout_seconds=1, allow_watch_bookmarks=True)
                for event in stream:
                    self._observe(event["type"], event["object"])
        except BaseException as err:  # noqa: BLE001 - reported by stop()
            self.errors.append(err)

    def _observe(self, kind: str, obj: dict) -> None:
        self._version = obj["metadata"]["resourceVersion"]
        if kind == "BOOKMARK":
            return
        state = dict(self._state)
        if kind == "DELETED":
            state.pop(_key(obj), None)
        else:
            state[_key(obj)] = obj["spec"].get("replicas", 1)
        if state != self._state:  # status writes change no replica count: not a point
            self._state = state
            self.points.append(state)

    def stop(self, timeout: float = 10.0) -> list[dict]:
        """Once the recorder has caught up with the live state, stop it; the points it recorded."""
        listed = self._lws.list_namespaced_custom_object(*LWS, self.namespace, "leaderworkersets",
                                                         label_selector=set_selector(self.name))
        live = {_key(o): o["spec"].get("replicas", 1) for o in listed["items"]}
        deadline = time.monotonic() + timeout
        while self._state != live and time.monotonic() < deadline and not self.errors:
            time.sleep(0.02)
        self._stop.set()
        self._thread.join(timeout)
        assert not self.errors, self.errors
        assert self._state == live, f"the watch did not see the live state {live}; it saw {self._state}"
        return self.points


def _key(obj: dict) -> tuple[int, str, str]:
    labels = obj["metadata"]["labels"]
    return int(labels[naming.SLICE_LABEL]), labels[naming.REVISION_LABEL], labels[naming.ROLE_LABEL]
