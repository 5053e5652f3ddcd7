"""A session with one API server: what every cluster command reads.

`Session` is the connection a cluster command opens (with `with`) and closes: where and who
(see `kubeconfig`), the `RestClient` its requests go through, and the reads of `rollout step`,
`status`, `plan`, `handover` and `validate --server`: a set's live objects as a `Snapshot`
(carrying the objects themselves, for dry-run diffs), the stored set and its RolloutState, the
objects already at names a pass would create, and the wait for the next change (a watch that
keeps the last LIST current). It writes nothing: carrying out a pass's actions is
`executor.ClusterExecutor`'s job. Under it, the API client (`kube.client`: where and who,
requests, answers as errors), reached through that package's face only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Self

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api import naming
from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client import (BY_KIND, DISAGGREGATED_SET, EVENT, JSON_PATCH, LWS, ROLE_SCALER, ROLLOUT_STATE,
                                        SERVICE, Gone, Impersonation, NotFound, Resource, connect, with_kind)
from kubectl_disagg.core.controller.snapshot import LiveLWS, Snapshot, lws_from_object, scaler_replicas, service_from_object
from kubectl_disagg.manifests.source import JsonObject

NAMESPACE = Resource("Namespace", "", "v1", "namespaces")  # a cluster's kind: listed with namespace ""
# GETs of the names a pass would create, sent side by side in batches of this many.
OCCUPANT_READS_AT_ONCE = 8
# Above this many names, one LIST per kind of the whole namespace answers instead: a rollout's
# start over 100 slices × 10 roles would otherwise send 2,000 GETs (a second of a ten-second
# step, BENCHMARKS.md), where two LISTs of the namespace cost about what the step's own LISTs do.
OCCUPANT_GETS_MOST = 32


def side_by_side(*calls: Callable[[], Any] | None) -> list[Any]:
    """Each call's result, in order (None for a None call), the calls run at once in threads
    of their own (a single one runs here). Every call ends before this returns; the first
    failed call's error, in call order, is then raised here, as Future.result() would."""
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        try:
            results[index] = call()
        except BaseException as error:  # raised below, in the caller's thread
            errors[index] = error

    asked = [(index, call) for index, call in enumerate(calls) if call is not None]
    if len(asked) == 1:
        run(*asked[0])
    else:
        threads = [threading.Thread(target=run, args=pair) for pair in asked]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results


class WatchedLWS:
    """A set's LWS as last listed, brought up to date by watch events: objects by name, and the
    resourceVersion they stand at. Parsed views are kept per object version, so a change to one
    LWS of two thousand re-parses one."""

    def __init__(self, items: dict[str, JsonObject], resource_version: str):
        self.items, self.resource_version = items, resource_version
        self._parsed: dict[str, tuple[str, LiveLWS]] = {}

    @classmethod
    def listed(cls, answer: JsonObject) -> WatchedLWS:
        items = {item["metadata"]["name"]: with_kind(item, LWS) for item in answer.get("items") or []}
        return cls(items, (answer.get("metadata") or {}).get("resourceVersion", ""))

    def apply(self, event: JsonObject) -> bool:
        """Take one watch event in; False when it is not one this view understands (read again)."""
        obj = event.get("object") or {}
        metadata = obj.get("metadata") or {}
        name, version = metadata.get("name"), metadata.get("resourceVersion")
        if not name or not version or event.get("type") not in ("ADDED", "MODIFIED", "DELETED"):
            return False
        if event["type"] == "DELETED":
            self.items.pop(name, None)
        else:
            self.items[name] = with_kind(obj, LWS)
        self.resource_version = version
        return True

    def live(self) -> tuple[LiveLWS, ...]:
        views = []
        for name, obj in sorted(self.items.items()):  # a LIST's order: by name
            version = obj["metadata"].get("resourceVersion", "")
            cached = self._parsed.get(name)
            if cached is None or cached[0] != version:
                cached = self._parsed[name] = (version, lws_from_object(obj))
            views.append(cached[1])
        for name in set(self._parsed) - set(self.items):
            del self._parsed[name]
        return tuple(views)



class _Background:
    """A watch run in a thread of its own (`Session._either`): whether it is `done`, and whether
    it saw a change (both set by its thread, `changed` first)."""

    def __init__(self, key: tuple[str, str, str]):
        self.key, self.changed, self.done, self.failed = key, False, False, False


class Session:
    """A session with one API server, reached like kubectl reaches it (see `kubeconfig`).

    Use it as a context manager: it closes its connections on exit.
    """

    def __init__(self, kubeconfig: str | None = None, context: str | None = None,
                 impersonation: Impersonation | None = None, clock: Clock = SYSTEM_CLOCK):
        self.client, self.default_namespace = connect(kubeconfig, context, impersonation, clock)
        self.clock = clock  # the time of its deadlines and its Lease
        self.server: str = self.client.server
        self._watched: dict[tuple[str, str], WatchedLWS] = {}  # (namespace, set) → its LWS, kept current
        self._serves_rollout_states: bool | None = None  # asked once per session
        self._background: dict[tuple[str, str, str], _Background] = {}  # (kind, namespace, set) → its watch
        self._woken = threading.Event()  # a background watch ended (a change, or its time up)

    @property
    def transport(self) -> Any:
        """What every request of this session goes through (see `RestClient.transport`)."""
        return self.client.transport

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    def snapshot(self, set_name: str, namespace: str, services: bool = True, scalers: bool = False) -> Snapshot:
        """Every LWS and Service labelled with the set's name: one LIST each (LWS only without
        `services`); with `scalers` (a set with External roles), the namespace's RoleScalers too,
        so a set without External roles is read in two LISTs.

        The selector does not require managed-by: objects that merely carry the set's name must
        be seen, so reconcile can leave them alone and refuse to create over them. The LISTs go
        out at once (each is a consistent read of its own; they never were one read together).
        """
        selector = f"{naming.NAME_LABEL}={set_name}"
        watched = self._watched.get((namespace, set_name))
        # Side by side: the reads cost one round trip, not two or three. Their errors come in
        # the order they used to be asked in: the same failure is reported first.
        lws_list, service_list, scaler_list = side_by_side(
            (lambda: self.client.list(LWS, namespace, selector)) if watched is None else None,
            (lambda: self.client.list(SERVICE, namespace, selector)) if services else None,
            (lambda: self._scalers(namespace)) if services and scalers else None)
        if watched is None:
            watched = WatchedLWS.listed(lws_list)
            self._watched[(namespace, set_name)] = watched
        service_list = service_list or {}
        scaler_replicas_by_name, scalers_served = scaler_list or ({}, False)
        service_items = [with_kind(item, SERVICE) for item in service_list.get("items") or []]
        return Snapshot(
            namespace=namespace,
            lws=watched.live(),
            services=tuple(service_from_object(item) for item in service_items),
            lws_resource_version=watched.resource_version,
            services_resource_version=(service_list.get("metadata") or {}).get("resourceVersion", ""),
            scalers=scaler_replicas_by_name,
            scalers_served=scalers_served,
            objects={(o["kind"], o["metadata"]["name"]): o for o in (*watched.items.values(), *service_items)},
        )

    def _scalers(self, namespace: str) -> tuple[dict[str, int], bool]:
        """RoleScaler name → spec.replicas, and whether the kind is served (its CRD installed).

        Scalers are named `<set>-<role>` and may lack our labels (the controller's): all of the
        namespace's, a handful at most.
        """
        try:
            listed = self.client.list(ROLE_SCALER, namespace, "")
        except NotFound:
            return {}, False
        return dict(scaler_replicas(item) for item in listed.get("items") or []), True

    def rollout_state(self, set_name: str, namespace: str) -> JsonObject | None:
        """The set's RolloutState object as Argo CD applied it (docs/gitops.md), or None where
        the cluster does not serve the kind (asked once, by discovery) or holds none for the set.
        A user who may not get it where the kind is served is refused (deploy/rbac.yaml)."""
        if self._serves_rollout_states is None:
            self._serves_rollout_states = self.client.serves(ROLLOUT_STATE)
        if not self._serves_rollout_states:
            return None
        try:
            return self.client.get(ROLLOUT_STATE, namespace, set_name)
        except NotFound:
            return None

    def get_set(self, name: str, namespace: str) -> JsonObject:
        """The DisaggregatedSet object stored in the cluster (its CRD installed, no controller)."""
        try:
            return self.client.get(DISAGGREGATED_SET, namespace, name)
        except NotFound:
            raise UserError(f"disaggregatedset/{name} not found in namespace {namespace}") from None

    def patch_set(self, name: str, namespace: str, operations: list[JsonObject], *, dry_run: bool = False) -> None:
        """A JSON patch of the stored DisaggregatedSet (`set image`, `rollout restart`): guarded by
        its `test` operations, so a set changed since it was read is refused (409), not overwritten."""
        self.client.patch(DISAGGREGATED_SET, namespace, name, operations, JSON_PATCH, dry_run=dry_run)
    def record_event(self, event: JsonObject) -> None:
        """Create one Event (see `events.event_object`): a step's, or a completion `rollout status`
        records (rollout/progressive.py `record_complete`)."""
        self.client.create(EVENT, event["metadata"]["namespace"], event)

    def stored_set(self, name: str, namespace: str) -> JsonObject | None:
        """The DisaggregatedSet object stored under `name`, or None: none stored, or the kind not
        served (its CRD not installed)."""
        try:
            return self.client.get(DISAGGREGATED_SET, namespace, name)
        except NotFound:
            return None

    def set_names(self, namespace: str) -> list[str]:
        """The sets of the namespace: the DisaggregatedSet objects stored there and the names the
        LeaderWorkerSets' labels carry (a set deployed with -f has no object). Two LISTs, at once."""
        def stored() -> list[str]:
            try:
                return [(item.get("metadata") or {}).get("name", "")
                        for item in self.client.list(DISAGGREGATED_SET, namespace, "").get("items") or []]
            except NotFound:  # the CRD is not installed
                return []

        stored_names, lws = side_by_side(stored, lambda: self.client.list(LWS, namespace, naming.NAME_LABEL))
        labelled = [((item.get("metadata") or {}).get("labels") or {}).get(naming.NAME_LABEL, "")
                    for item in lws.get("items") or []]
        return sorted({name for name in (*stored_names, *labelled) if name})

    def namespace_names(self) -> list[str]:
        """The cluster's namespaces (what `-n` completes to): one LIST."""
        return sorted((item.get("metadata") or {}).get("name", "")
                      for item in self.client.list(NAMESPACE, "", "").get("items") or [])

    def wait_for_change(self, set_name: str, namespace: str, resource_version: str, timeout: float,
                        kind: str = naming.LWS_KIND, state_version: str | None = None) -> bool:
        """Block until an LWS of the set changes after `resource_version`: True, or False on timeout.
        With `kind` Service, until one of its Services does (`resource_version`: the snapshot's
        `services_resource_version`), a plain watch. With `state_version` (the resourceVersion
        of the set's RolloutState as last read, "" for none), until either changes (`_either`).

        When `resource_version` is where this session's view of the set's LWS stands, the change
        is applied to that view, and the next `snapshot` reads it from there instead of listing
        every LWS again: a list at one version plus every change after it is the state at the
        last change, exactly what a new LIST would return then (an informer's reasoning). This
        is what lets `--until-complete` react to a ready LWS in a fleet without a 3 MB read.
        """
        key, selector = (namespace, set_name), f"{naming.NAME_LABEL}={set_name}"
        if state_version is not None:
            self._watched.pop(key, None)  # watched in a thread of its own: the next snapshot LISTs
            return self._either(namespace, set_name, ((BY_KIND[kind], selector, None, resource_version),
                                                      (ROLLOUT_STATE, "", f"metadata.name={set_name}", state_version)),
                                timeout)
        if kind != naming.LWS_KIND:
            return self.client.watch(BY_KIND[kind], namespace, selector, resource_version, timeout)
        watched = self._watched.get(key)
        if watched is None or watched.resource_version != resource_version:
            self._watched.pop(key, None)
            return self.client.watch(LWS, namespace, selector, resource_version, timeout)
        try:
            events = self.client.next_events(LWS, namespace, selector, resource_version, timeout)
        except Gone:
            self._watched.pop(key, None)  # history compacted: read everything again
            return True
        if not events:
            return False
        if not all(watched.apply(event) for event in events):
            self._watched.pop(key, None)
        return True

    def _either(self, namespace: str, set_name: str, watches: Sequence[tuple[Resource, str, str | None, str]],
                timeout: float) -> bool:
        """Block until one of `watches` (resource, label and field selectors, resourceVersion) sees
        a change: True, or False once `timeout` passes. Each runs in a daemon thread of its own
        (it never keeps the process alive), one per kind and set at a time: a watch still
        running from an earlier wait saw nothing since it started, so it is waited on again,
        not doubled (a quiet one ends within its time, `WATCH_SLICE_SECONDS` at most). An error
        (history compacted, a connection cut) counts as a change: the next look reads again."""
        deadline = self.clock.monotonic() + timeout
        while True:
            left = deadline - self.clock.monotonic()
            running = [self._background_watch(namespace, set_name, watch, left) for watch in watches]
            changed = [watch for watch in running if watch.changed]
            if changed or left <= 0:
                for watch in changed:  # a change is seen once (a failed watch stays, never started again)
                    watch.changed = False
                    if not watch.failed:
                        self._background.pop(watch.key, None)
                return bool(changed)
            self._woken.wait(left)
            self._woken.clear()

    def _background_watch(self, namespace: str, set_name: str, watch: tuple[Resource, str, str | None, str],
                          seconds: float) -> _Background:
        resource, selector, fields, version = watch
        key = (resource.kind, namespace, set_name)
        running = self._background.get(key)
        if running is not None and (running.changed or not running.done or running.failed) or seconds <= 0:
            return running or _Background(key)
        background = _Background(key)

        def run() -> None:
            try:
                background.changed = self.client.watch(resource, namespace, selector, version, seconds, fields)
            except Exception:  # noqa: BLE001 (whatever it was, the next look reads again and says it)
                # a change once (the look says what is wrong), then never again this session: a
                # watch refused (RBAC) must not turn into a loop of looks; the other kind is watched on
                background.changed = background.failed = True
            background.done = True
            self._woken.set()

        self._background[key] = background
        threading.Thread(target=run, daemon=True, name=f"watch {resource.plural}/{set_name}").start()
        return background

    def occupants(self, names: Sequence[tuple[str, str]], namespace: str) -> dict[tuple[str, str], JsonObject]:
        """The objects already at these (kind, name)s: one GET each, a few at a time side by
        side (see `stepper.read_and_reconcile`). A pass creates a handful; a rollout's start
        over many slices, a few per slice."""
        names = list(names)
        if len(names) > OCCUPANT_GETS_MOST:
            return self._occupants_listed(names, namespace)
        found: dict[tuple[str, str], JsonObject] = {}

        def get(kind: str, name: str) -> JsonObject | None:
            try:
                return self.client.get(BY_KIND[kind], namespace, name)
            except NotFound:
                return None

        for start in range(0, len(names), OCCUPANT_READS_AT_ONCE):
            batch = names[start:start + OCCUPANT_READS_AT_ONCE]
            for key, obj in zip(batch, side_by_side(*(lambda key=key: get(*key) for key in batch))):
                if obj is not None:
                    found[key] = obj
        return found

    def _occupants_listed(self, names: list[tuple[str, str]], namespace: str) -> dict[tuple[str, str], JsonObject]:
        """`occupants` by one LIST per kind of the namespace, every label (an occupant need not
        carry ours), the kinds side by side."""
        kinds = sorted({kind for kind, _ in names})
        wanted = set(names)
        found: dict[tuple[str, str], JsonObject] = {}
        answers = side_by_side(*(lambda kind=kind: self.client.list(BY_KIND[kind], namespace, "") for kind in kinds))
        for kind, answer in zip(kinds, answers):
            for item in answer.get("items") or []:
                key = (kind, (item.get("metadata") or {}).get("name"))
                if key in wanted:
                    found[key] = with_kind(item, BY_KIND[kind])
        return found

    def forget_watched(self) -> None:
        """Drop every LWS view the watch kept current: the next `snapshot` LISTs again (after
        this session's own writes, which are read back, never assumed)."""
        self._watched.clear()
