"""A session with one API server: what `rollout step`, `status` and `plan` read and write.

`Cluster` is the one object every cluster command opens (with `with`) and closes. It reads a
set's live objects into a `Snapshot` (carrying the objects themselves, for dry-run diffs),
executes the actions `reconcile` returns with the preconditions that make them safe to race,
watches for the next change and hands out the set's Lease: the stepper's executor for the
cluster. The modules under it: `kubeconfig` (where and who), `rest` (requests), `api_errors`
(answers as errors), `lease`. Everything else in kubectl-disagg is pure and never imports them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kubectl_disagg.core import naming
from kubectl_disagg.kube.api_errors import Gone, NotFound, PatchRejected
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.kube.kubeconfig import load_configuration, redact_url
from kubectl_disagg.kube.lease import DEFAULT_LEASE_SECONDS, Lease, default_holder
from kubectl_disagg.core.reconcile import Action, Annotate, Create, Delete, Scale
from kubectl_disagg.kube.rest import (BY_KIND, DISAGGREGATED_SET, EVENT, JSON_PATCH, LEASE, LWS, ROLE_SCALER,
                                      ROLLOUT_STATE, SERVICE, Resource, RestClient, with_kind)
from kubectl_disagg.core.snapshot import Snapshot, lws_from_object, scaler_replicas, service_from_object

# A granted permission is trusted for one lease term.
PERMISSION_TERM_SECONDS = DEFAULT_LEASE_SECONDS
# GETs of the names a pass would create, sent side by side in batches of this many.
OCCUPANT_READS_AT_ONCE = 8

def scale_patch(action: Scale) -> list[dict]:
    """RFC 6902: replicas from what was read to the new count, refused if they moved meanwhile."""
    return [{"op": "test", "path": "/spec/replicas", "value": action.from_replicas},
            {"op": "replace", "path": "/spec/replicas", "value": action.to_replicas}]


def annotate_patch(action: Annotate) -> list[dict]:
    """RFC 6902: add the annotations, pinned to the replicas they were computed from.

    `initial-replicas` records the replicas at the rollout's start, so it must not land on an
    LWS someone scaled after the read. A missing annotations map is added whole: JSON patch
    cannot add a key to a map that is not there.
    """
    operations: list[dict] = [{"op": "test", "path": "/spec/replicas", "value": action.replicas}]
    if action.has_annotations:
        operations += [{"op": "add", "path": "/metadata/annotations/" + _pointer_token(key), "value": value}
                       for key, value in sorted(action.annotations.items())]
    else:
        operations.append({"op": "add", "path": "/metadata/annotations", "value": dict(action.annotations)})
    return operations


def _pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _tested(operations: list[dict]) -> str:
    path = next((op["path"] for op in operations if op["op"] == "test"), "/")
    return ".".join(part for part in path.split("/") if part)


def permissions_needed(actions: Sequence[Action]) -> list[tuple[str, Resource]]:
    """Every (verb, resource) a pass of `actions` uses, in a stable order: its writes, and the
    Lease's renewal and release. Server-side apply of a new object is a patch that creates."""
    if not actions:
        return []
    needed: dict[tuple[str, str], tuple[str, Resource]] = {}

    def need(verb: str, resource: Resource) -> None:
        needed.setdefault((verb, resource.plural), (verb, resource))

    for action in actions:
        resource = BY_KIND[action.kind]
        if isinstance(action, Create):
            need("create", resource)
            need("patch", resource)
        elif isinstance(action, Delete):
            need("delete", resource)
        else:
            need("patch", resource)
    need("update", LEASE)
    need("delete", LEASE)
    return list(needed.values())


def side_by_side(*calls: Callable[[], Any] | None) -> list:
    """Each call's result, in order (None for a None call), the calls run at once in threads
    of their own (a single one runs here). Every call ends before this returns; the first
    failed call's error, in call order, is then raised here, as Future.result() would."""
    results: list = [None] * len(calls)
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


class Forbidden(UserError):
    """The user lacks permissions a pass needs: named on one line, before anything is written."""

    def __init__(self, missing: list[tuple[str, Resource]], namespace: str):
        wanted = ", ".join(f"{verb} {resource.plural}" + (f".{resource.group}" if resource.group else "")
                           for verb, resource in missing)
        super().__init__(f"forbidden: this pass needs permission to {wanted} in namespace {namespace}, "
                         "which this user lacks; nothing was changed (see deploy/rbac.yaml)")


class GrantedPermissions:
    """The (verb, resource, namespace) a session was granted, each remembered for `term` seconds.

    A stepper asks before each pass's first write; within one lease term it asks again only
    about what it was not granted yet (a refusal is never remembered). A grant revoked within
    the term shows as a 403 on a write instead, which stops the pass like any failed write
    (its unit taken back), so the cache trades a whole-pass refusal for a cut-short one only
    in that window.
    """

    def __init__(self, term: float, clock: Callable[[], float] = time.monotonic):
        self.term, self._clock = term, clock
        self._granted: dict[tuple[str, str, str, str], float] = {}  # → clock() of the answer

    def unknown(self, wanted: Sequence[tuple[str, Resource]], namespace: str) -> list[tuple[str, Resource]]:
        """Those of `wanted` not granted within the term: what must be asked."""
        now = self._clock()
        return [(verb, resource) for verb, resource in wanted
                if now - self._granted.get(_permission_key(verb, resource, namespace), -self.term) >= self.term]

    def grant(self, verb: str, resource: Resource, namespace: str, answered_at: float) -> None:
        self._granted[_permission_key(verb, resource, namespace)] = answered_at

    def now(self) -> float:
        return self._clock()


def _permission_key(verb: str, resource: Resource, namespace: str) -> tuple[str, str, str, str]:
    return verb, resource.group, resource.plural, namespace


# --- the session ------------------------------------------------------------------------------


class WatchedLWS:
    """A set's LWS as last listed, brought up to date by watch events: objects by name, and the
    resourceVersion they stand at. Parsed views are kept per object version, so a change to one
    LWS of two thousand re-parses one."""

    def __init__(self, items: dict[str, dict], resource_version: str):
        self.items, self.resource_version = items, resource_version
        self._parsed: dict[str, tuple[str, Any]] = {}

    @classmethod
    def listed(cls, answer: dict) -> WatchedLWS:
        items = {item["metadata"]["name"]: with_kind(item, LWS) for item in answer.get("items") or []}
        return cls(items, (answer.get("metadata") or {}).get("resourceVersion", ""))

    def apply(self, event: dict) -> bool:
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

    def live(self) -> tuple:
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



class Cluster:
    """A session with one API server, reached like kubectl reaches it (see `kubeconfig`).

    Use it as a context manager: it closes its connections on exit.
    """

    def __init__(self, kubeconfig: str | None = None, context: str | None = None):
        connection, self.default_namespace = load_configuration(kubeconfig, context)
        self.server: str = redact_url(connection.server)
        self.client = RestClient(connection, self.server)
        # Granted permissions hold for a lease term: what a stepper holds the set for at a time.
        self.permissions = GrantedPermissions(PERMISSION_TERM_SECONDS)
        self._watched: dict[tuple[str, str], WatchedLWS] = {}  # (namespace, set) → its LWS, kept current
        self._serves_rollout_states: bool | None = None  # asked once per session

    @property
    def transport(self) -> Any:
        """What every request of this session goes through (see `RestClient.transport`)."""
        return self.client.transport

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    # -- reading -----------------------------------------------------------------------------

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
        if lws_list is not None:
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

    def rollout_state(self, set_name: str, namespace: str) -> dict | None:
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

    def get_set(self, name: str, namespace: str) -> dict:
        """The DisaggregatedSet object stored in the cluster (its CRD installed, no controller)."""
        try:
            return self.client.get(DISAGGREGATED_SET, namespace, name)
        except NotFound:
            raise UserError(f"disaggregatedset/{name} not found in namespace {namespace}") from None

    def wait_for_change(self, set_name: str, namespace: str, resource_version: str, timeout: float) -> bool:
        """Block until an LWS of the set changes after `resource_version`: True, or False on timeout.

        When `resource_version` is where this session's view of the set's LWS stands, the change
        is applied to that view, and the next `snapshot` reads it from there instead of listing
        every LWS again: a list at one version plus every change after it is the state at the
        last change, exactly what a new LIST would return then (an informer's reasoning). This
        is what lets `--until-complete` react to a ready LWS in a fleet without a 3 MB read.
        """
        key, selector = (namespace, set_name), f"{naming.NAME_LABEL}={set_name}"
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

    # -- writing -----------------------------------------------------------------------------

    def execute(self, action: Action, namespace: str, *, dry_run: bool = False) -> None:
        """Carry out one reconcile action in `namespace`, with the preconditions that make it safe to race.

        Create: server-side apply, never forced. Scale and Annotate: JSON patches that test the
        replicas that were read (see `_change`). Delete: preconditions on uid and resourceVersion.
        A change to an object deleted since it was read is a `Conflict`: read again.

        With `dry_run`, the same request goes with dryRun=All (and strict field validation): the
        server judges it against the live objects and stores nothing; a refusal raises as usual.
        A created RoleScaler's status is not sent then: its object does not exist to write it to.
        """
        if not dry_run:
            self._watched.clear()  # our own writes are read back by a LIST, never assumed
        if isinstance(action, Create):
            self.client.apply(BY_KIND[action.kind], namespace, action.object, dry_run=dry_run)
            if "status" in action.object and not dry_run:  # a RoleScaler's: apply leaves status alone
                self.client.patch_status(BY_KIND[action.kind], namespace, action.name, action.object["status"])
            return
        try:
            self._change(action, namespace, dry_run)
        except NotFound:
            raise Conflict(f"{action.kind.lower()}/{action.name} was deleted since it was read "
                           "(404 NotFound)") from None

    def _change(self, action: Action, namespace: str, dry_run: bool = False) -> None:
        """Scale, Annotate, Delete: each conditional on what the decision read.

        A scale or an annotation is a JSON patch whose `test` pins `spec.replicas` to the value
        reconcile saw: the LWS controller writes status all the time, and a status write must
        not void a replica change (a resourceVersion precondition would). A delete keeps uid and
        resourceVersion preconditions: it only ever removes objects at 0 replicas.
        """
        if isinstance(action, Scale):
            self._json_patch(LWS, namespace, action.name, scale_patch(action), dry_run)
        elif isinstance(action, Annotate):
            self._json_patch(LWS, namespace, action.name, annotate_patch(action), dry_run)
        elif isinstance(action, Delete):
            self.client.delete(BY_KIND[action.kind], namespace, action.name, action.uid, action.resource_version,
                               dry_run=dry_run)
        else:  # pragma: no cover - reconcile returns nothing else
            raise TypeError(f"unknown action {action!r}")

    def _json_patch(self, resource: Resource, namespace: str, name: str, operations: list,
                    dry_run: bool = False) -> None:
        try:
            self.client.patch(resource, namespace, name, operations, JSON_PATCH, dry_run=dry_run)
        except PatchRejected:
            raise Conflict(f"{resource.subject(name)} changed since it was read "
                           f"({_tested(operations)} is no longer what this step read)") from None

    def patch_object(self, kind: str, namespace: str, name: str, operations: list) -> None:
        """An RFC 6902 patch whose `test` ops pin what was read: a `Conflict` when it moved."""
        self._watched.clear()
        self._json_patch(BY_KIND[kind], namespace, name, operations)

    def clear_set_status(self, name: str, namespace: str) -> None:
        """Remove what the controller wrote in a stored set's status (see `handover`)."""
        self.client.patch_status(DISAGGREGATED_SET, namespace, name,
                                 {"observedGeneration": None, "conditions": None, "roleStatuses": None})

    def record_event(self, event: dict) -> None:
        """Create one Event (see `events.event_object`)."""
        self.client.create(EVENT, event["metadata"]["namespace"], event)

    def lease(self, set_name: str, namespace: str, holder: str | None = None,
              duration: int | None = None, wait_until: float | None = None):
        """The set's Lease, acquired on `with` entry and released on exit (see `Lease`); with
        `wait_until` (a time.monotonic() value, math.inf for no limit) a held one is queued for."""
        return Lease(self.client, set_name, namespace, holder or default_holder(), duration or DEFAULT_LEASE_SECONDS,
                     wait_until)

    def occupants(self, names: Sequence[tuple[str, str]], namespace: str) -> dict[tuple[str, str], dict]:
        """The objects already at these (kind, name)s: one GET each, a few at a time side by
        side (see `stepper.read_and_reconcile`). A pass creates a handful; a rollout's start
        over many slices, a few per slice."""
        found: dict[tuple[str, str], dict] = {}

        def get(kind: str, name: str) -> dict | None:
            try:
                return self.client.get(BY_KIND[kind], namespace, name)
            except NotFound:
                return None

        names = list(names)
        for start in range(0, len(names), OCCUPANT_READS_AT_ONCE):
            batch = names[start:start + OCCUPANT_READS_AT_ONCE]
            for key, obj in zip(batch, side_by_side(*(lambda key=key: get(*key) for key in batch))):
                if obj is not None:
                    found[key] = obj
        return found

    def authorize(self, actions: Sequence[Action], namespace: str) -> None:
        """Refuse a pass its user may not carry out whole, before its first write: one
        SelfSubjectAccessReview per verb and resource it needs (see `permissions_needed`) and
        was not granted within the last lease term (see `GrantedPermissions`), sent at once."""
        asked = self.permissions.unknown(permissions_needed(actions), namespace)
        if not asked:
            return
        answered_at = self.permissions.now()  # a grant counts from before it was asked
        # Each review is a round trip: send them side by side, not one after another.
        answers = side_by_side(*(lambda wanted=wanted: self.client.allowed(*wanted, namespace) for wanted in asked))
        for (verb, resource), allowed in zip(asked, answers):
            if allowed:
                self.permissions.grant(verb, resource, namespace, answered_at)
        missing = [wanted for wanted, allowed in zip(asked, answers) if not allowed]
        if missing:
            raise Forbidden(missing, namespace)
