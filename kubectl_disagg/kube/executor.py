"""The cluster executor: carries out a pass's actions on the API server.

`ClusterExecutor` is the `executors.Executor` for a cluster (a rollout state's,
`gitops.executor.StateExecutor`, is only the `executors.PassExecutor` one pass uses): a
`Session` that also writes. It checks a pass's permissions before its first write, executes the actions `reconcile` returns with the preconditions that
make them safe to race (creates by server-side apply, JSON patches pinned to what was read,
deletes on uid and resourceVersion), writes the hand-over's patches and the stepper's Events,
and hands out the set's Lease (see `lease`). What it reads, it reads through its `Session`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api import naming
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.kube.lease import DEFAULT_LEASE_SECONDS, Lease, default_holder
from kubectl_disagg.core.controller.reconcile import Action, Annotate, Create, Delete, Scale
from kubectl_disagg.kube.client import (BY_KIND, DISAGGREGATED_SET, JSON_PATCH, LEASE, LWS, NotFound,
                                        Impersonation, PatchRejected, Resource)
from kubectl_disagg.kube.session import Session, side_by_side
from kubectl_disagg.wait import Deadline, until_settled
from kubectl_disagg.manifests.source import JsonObject

# A granted permission is trusted for one lease term.
PERMISSION_TERM_SECONDS = DEFAULT_LEASE_SECONDS
# A delete refused because a status write moved the object is sent again this often at most.
DELETE_ATTEMPTS = 5


def _still_drained(obj: JsonObject) -> bool:
    """What a reconcile Delete relies on: the object is still ours, and an LWS still at 0 replicas."""
    ours = ((obj.get("metadata") or {}).get("labels") or {}).get(naming.MANAGED_BY_LABEL) == naming.MANAGER
    return ours and (obj.get("kind") != naming.LWS_KIND or (obj.get("spec") or {}).get("replicas", 1) == 0)


def scale_patch(action: Scale) -> list[JsonObject]:
    """RFC 6902: replicas from what was read to the new count, refused if they moved meanwhile."""
    return [{"op": "test", "path": "/spec/replicas", "value": action.from_replicas},
            {"op": "replace", "path": "/spec/replicas", "value": action.to_replicas}]


def annotate_patch(action: Annotate) -> list[JsonObject]:
    """RFC 6902: add the annotations, pinned to the replicas they were computed from.

    `initial-replicas` records the replicas at the rollout's start, so it must not land on an
    LWS someone scaled after the read. A missing annotations map is added whole: JSON patch
    cannot add a key to a map that is not there.
    """
    operations: list[JsonObject] = [{"op": "test", "path": "/spec/replicas", "value": action.replicas}]
    if action.has_annotations:
        operations += [{"op": "add", "path": "/metadata/annotations/" + _pointer_token(key), "value": value}
                       for key, value in sorted(action.annotations.items())]
    else:
        operations.append({"op": "add", "path": "/metadata/annotations", "value": dict(action.annotations)})
    return operations


def _pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _tested(operations: list[JsonObject]) -> str:
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

    def __init__(self, term: float, clock: Clock = SYSTEM_CLOCK):
        self.term, self._clock = term, clock
        self._granted: dict[tuple[str, str, str, str], float] = {}  # → clock.monotonic() of the answer

    def unknown(self, wanted: Sequence[tuple[str, Resource]], namespace: str) -> list[tuple[str, Resource]]:
        """Those of `wanted` not granted within the term: what must be asked."""
        now = self._clock.monotonic()
        return [(verb, resource) for verb, resource in wanted
                if now - self._granted.get(_permission_key(verb, resource, namespace), -self.term) >= self.term]

    def grant(self, verb: str, resource: Resource, namespace: str, answered_at: float) -> None:
        self._granted[_permission_key(verb, resource, namespace)] = answered_at

    def now(self) -> float:
        return self._clock.monotonic()


def _permission_key(verb: str, resource: Resource, namespace: str) -> tuple[str, str, str, str]:
    return verb, resource.group, resource.plural, namespace


class ClusterExecutor(Session):
    """A session that carries out passes: `execute`, `authorize` and `lease` (the reads of
    `executors.Executor` are the `Session`'s).

    Use it as a context manager: it closes its connections on exit.
    """

    def __init__(self, kubeconfig: str | None = None, context: str | None = None,
                 impersonation: Impersonation | None = None, clock: Clock = SYSTEM_CLOCK):
        super().__init__(kubeconfig, context, impersonation, clock)
        # Granted permissions hold for a lease term: what a stepper holds the set for at a time.
        self.permissions = GrantedPermissions(PERMISSION_TERM_SECONDS, clock)

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
            self.forget_watched()  # our own writes are read back by a LIST, never assumed
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
            self._delete_pinned(BY_KIND[action.kind], namespace, action.name, action.uid, action.resource_version,
                                _still_drained, dry_run=dry_run)
        else:  # pragma: no cover - reconcile returns nothing else
            raise TypeError(f"unknown action {action!r}")

    def _delete_pinned(self, resource: Resource, namespace: str, name: str, uid: str, resource_version: str,
                       still_holds: Callable[[JsonObject], bool], *, dry_run: bool = False,
                       propagation: str = "Background") -> None:
        """A delete pinned to the uid and resourceVersion read. Refused (409) because the object
        moved since, it is read again: when it is the same object and `still_holds` for it
        (what the decision relied on; a controller's status write changes neither), the delete
        goes again pinned to the version just read; otherwise the Conflict stands."""
        for _ in range(DELETE_ATTEMPTS - 1):
            try:
                self.client.delete(resource, namespace, name, uid, resource_version, dry_run=dry_run,
                                   propagation=propagation)
                return
            except Conflict:
                current = self.client.get(resource, namespace, name)
                if current["metadata"].get("uid") != uid or not still_holds(current):
                    raise
                resource_version = current["metadata"]["resourceVersion"]
        self.client.delete(resource, namespace, name, uid, resource_version, dry_run=dry_run, propagation=propagation)

    def _json_patch(self, resource: Resource, namespace: str, name: str, operations: list[JsonObject],
                    dry_run: bool = False) -> None:
        try:
            self.client.patch(resource, namespace, name, operations, JSON_PATCH, dry_run=dry_run)
        except PatchRejected:
            raise Conflict(f"{resource.subject(name)} changed since it was read "
                           f"({_tested(operations)} is no longer what this step read)") from None

    def patch_object(self, kind: str, namespace: str, name: str, operations: list[JsonObject]) -> None:
        """An RFC 6902 patch whose `test` ops pin what was read: a `Conflict` when it moved."""
        self.forget_watched()
        self._json_patch(BY_KIND[kind], namespace, name, operations)

    def orphan_set(self, stored: JsonObject, timeout: float | None) -> None:
        """Delete the stored set as read (uid and resourceVersion pinned), orphaning its objects,
        and wait for the garbage collector to let it go (see `handover`): watched, not polled;
        a `UserError` after `timeout` seconds (None: no limit)."""
        metadata = stored["metadata"]
        name, namespace = metadata["name"], metadata["namespace"]
        generation = metadata.get("generation")
        try:
            self._delete_pinned(DISAGGREGATED_SET, namespace, name, metadata["uid"], metadata["resourceVersion"],
                                lambda now: now["metadata"].get("generation") == generation, propagation="Orphan")
        except NotFound:
            return

        def look() -> str | None:
            """The stored set's resourceVersion, None once it is gone."""
            try:
                version: str = self.client.get(DISAGGREGATED_SET, namespace, name)["metadata"]["resourceVersion"]
            except NotFound:
                return None
            return version

        def watch(version: str | None, seconds: float) -> bool:  # a look of None is settled: never watched
            return self.client.watch(DISAGGREGATED_SET, namespace, "", version or "", seconds,

                                     field_selector=f"metadata.name={name}")

        version: str | None = None
        for version in until_settled(look, lambda version: version is None, watch, Deadline.after(timeout)):  # noqa: B007 (read after the loop)
            pass
        if version is not None:
            raise UserError(f"disaggregatedset/{name} is deleted but still waits for the garbage collector to "
                            "orphan its objects (is kube-controller-manager running?); run the hand-over "
                            "again to wait for it")

    def lease(self, set_name: str, namespace: str, wait_until: Deadline | None = None, *,
              holder: str | None = None, duration: int | None = None) -> Lease:
        """The set's Lease, acquired on `with` entry and released on exit (see `Lease`); with
        `wait_until` (wait.NEVER: no limit) a held one is queued for."""
        # Kept: a long wait inside a pass (an analysis gate) renews it (rollout/analysis.py).
        self.current_lease = Lease(self.client, set_name, namespace, holder or default_holder(),
                                   duration or DEFAULT_LEASE_SECONDS, wait_until, self.clock)
        return self.current_lease

    def authorize(self, actions: Sequence[Action], namespace: str) -> None:
        """Refuse a pass its user may not carry out whole, before its first write: one
        SelfSubjectAccessReview per verb and resource it needs (see `permissions_needed`) and
        was not granted within the last lease term (see `GrantedPermissions`), sent at once."""
        asked = self.permissions.unknown(permissions_needed(actions), namespace)
        if not asked:
            return
        answered_at = self.permissions.now()  # a grant counts from before it was asked
        # Each review is a round trip: send them side by side, not one after another.
        answers = side_by_side(*(functools.partial(self.client.allowed, verb, resource, namespace)
                                 for verb, resource in asked))
        for (verb, resource), allowed in zip(asked, answers):
            if allowed:
                self.permissions.grant(verb, resource, namespace, answered_at)
        missing = [wanted for wanted, allowed in zip(asked, answers) if not allowed]
        if missing:
            raise Forbidden(missing, namespace)
