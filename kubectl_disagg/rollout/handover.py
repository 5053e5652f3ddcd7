"""Handing a running set between kubectl-disagg and the upstream controller.

`plan_handover` is pure; `prepare` reads what it needs from the cluster and `carry_out` writes
the plan.

Both name and label a set's objects alike (the controller's revision, byte for byte), so a
hand-over changes only who may act on them, never a pod template: nothing restarts.

- to the controller: each LWS and Service gets the ownerReference the controller stamps on what
  it creates (the stored DisaggregatedSet as controller, its UID); our managed-by label stays
  (the controller filters by ownership and labels it does not look at are inert), and `rollout
  step` refuses the set from then on.
- to kubectl-disagg, with the controller running: the DisaggregatedSet controller lives in the
  LWS manager, whose LWS webhooks refuse every LWS write while it is stopped, so it cannot be
  stopped for this. Each object gets the managed-by label, then the stored set is deleted with
  `propagationPolicy: Orphan` (pinned to its uid and resourceVersion): the garbage collector
  removes the set's ownerReference from every dependent before the set goes, so the controller
  never sees a stored set whose objects it does not own (it would write a status and refuse, in
  a loop, to adopt them). The set then lives in its files (`rollout step -f`): stored again, the
  controller would take it back. Refused mid-rollout: while the collector orphans the objects
  one by one, the controller still acts on those it owns, and a rollout step taken on half of
  a revision group would not be the one either side plans.

Every object must be adoptable, or nothing is changed: an object carrying the set's name label
that neither side manages, one whose name does not match its labels, or one another controller
owns refuses the whole hand-over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.snapshot import LiveObject, controller_set_name, lws_from_object, service_from_object
from kubectl_disagg.kube.seam import HandoverWrites, StoredSets
from kubectl_disagg.manifests.source import JsonObject

TO_CONTROLLER = "to-controller"
TO_PLUGIN = "to-plugin"


@dataclass(frozen=True)
class Change:
    kind: str
    name: str
    patch: tuple[JsonObject, ...]  # RFC 6902, pinned to the resourceVersion read
    summary: str


@dataclass(frozen=True)
class Handover:
    """`orphan`: to the plugin, the stored set's orphaning delete (what it says), else None."""

    direction: str
    set_name: str
    changes: tuple[Change, ...]
    unchanged: tuple[str, ...]  # kind/name already on the receiving side
    refusal: tuple[str, ...]
    orphan: str | None = None


def owner_reference(stored: Mapping[str, Any]) -> JsonObject:
    """The ownerReference the controller stamps on the set's LWS and Services (its
    lws_manager.go and service_manager.go: controller, no blockOwnerDeletion)."""
    metadata = stored.get("metadata") or {}
    return {"apiVersion": stored.get("apiVersion", f"{naming.SET_GROUP}/v1"), "kind": naming.SET_KIND,
            "name": metadata.get("name", ""), "uid": metadata.get("uid", ""), "controller": True}


def plan_handover(direction: str, stored: Mapping[str, Any], objects: list[Mapping[str, Any]]) -> Handover:
    """What handing the stored set's `objects` (LWS and Services as read) over changes."""
    set_name = (stored.get("metadata") or {}).get("name", "")
    uid = (stored.get("metadata") or {}).get("uid", "")
    changes: list[Change] = []
    unchanged: list[str] = []
    refusal: list[str] = []
    for obj in objects:
        live = (lws_from_object if obj.get("kind") == naming.LWS_KIND else service_from_object)(obj)
        subject = f"{live.kind.lower()}/{live.name}"
        owners = list((obj.get("metadata") or {}).get("ownerReferences") or [])
        other = [o for o in owners if o.get("controller") is True and o.get("uid") != uid]
        ours, theirs = live.managed_by_us(set_name), bool(controller_set_name(obj)) and not other
        expected = _expected_name(set_name, live)
        if other:
            refusal.append(f"{subject} is controlled by {other[0].get('kind', '?').lower()}/{other[0].get('name')}")
        elif not (ours or theirs):
            refusal.append(f"{subject} carries the set's name label but neither kubectl-disagg nor the controller "
                           "manages it")
        elif expected != live.name:
            refusal.append(f"{subject}: its labels say it should be named {expected}; the receiving side would "
                           "not recognise it")
        elif direction == TO_CONTROLLER and theirs:
            unchanged.append(subject)
        elif direction == TO_CONTROLLER:
            changes.append(Change(live.kind, live.name, _pinned(obj, _add_owner(owners, stored)),
                                  f"{subject}: add ownerReference disaggregatedset/{set_name} (controller, uid {uid})"))
        elif ours:
            unchanged.append(subject)
        else:
            changes.append(Change(live.kind, live.name, _pinned(obj, [_add_label(obj)]),
                                  f"{subject}: label {naming.MANAGED_BY_LABEL}={naming.MANAGER}"))
    if not uid:
        refusal.append(f"disaggregatedset/{set_name} has no uid to own objects with")
    orphan = None
    if direction == TO_PLUGIN:
        refusal.extend(_mid_rollout(set_name, objects))
        orphan = (f"disaggregatedset/{set_name}: delete it with propagationPolicy=Orphan (uid {uid}); the garbage "
                  "collector removes its ownerReference from every LWS, Service and RoleScaler, which stay")
    return Handover(direction, set_name, tuple(changes), tuple(unchanged), tuple(refusal), orphan)


def _mid_rollout(set_name: str, objects: list[Mapping[str, Any]]) -> list[str]:
    """An LWS whose labels do not place it is left out: `plan_handover` refuses it by its name."""
    revisions: dict[int, set[str]] = {}
    for obj in objects:
        if obj.get("kind") == naming.LWS_KIND:
            placed = lws_from_object(obj).identity.placed
            if placed is not None:
                revisions.setdefault(placed.slice, set()).add(placed.revision)
    return [f"disaggregatedset/{set_name} is mid-rollout (slice {slice_index} has revisions "
            f"{', '.join(sorted(found))}): the controller acts on what it still owns while its objects are "
            "orphaned one by one; hand it over once the rollout is complete"
            for slice_index, found in sorted(revisions.items()) if len(found) > 1]


def prepare(cluster: StoredSets, direction: str, name: str, namespace: str) -> tuple[JsonObject, Handover]:
    """The stored set and its hand-over, read from the cluster."""
    stored = cluster.get_set(name, namespace)
    return stored, plan_handover(direction, stored, list(cluster.snapshot(name, namespace).objects.values()))


def carry_out(cluster: HandoverWrites, stored: JsonObject, plan: Handover, namespace: str,
              timeout: float | None) -> None:
    """Write the plan's patches, one object at a time, then (to the plugin) delete the stored
    set orphaning its objects and wait, up to `timeout` seconds, until the garbage collector has
    let it go. Cut short, running the hand-over again finishes the rest (the objects already
    handed over are unchanged then)."""
    for change in plan.changes:
        cluster.patch_object(change.kind, namespace, change.name, list(change.patch))
    if plan.orphan:
        cluster.orphan_set(stored, timeout)


def _expected_name(set_name: str, live: LiveObject) -> str:
    placed = live.identity.placed
    if placed is None:
        return "(a complete slice, revision and role label)"
    name = naming.lws_name(set_name, placed.slice, placed.revision, placed.role)
    return name if live.kind == naming.LWS_KIND else name + naming.SERVICE_SUFFIX


def _add_owner(owners: list[JsonObject], stored: Mapping[str, Any]) -> list[JsonObject]:
    reference = owner_reference(stored)
    if owners:
        return [{"op": "add", "path": "/metadata/ownerReferences/-", "value": reference}]
    return [{"op": "add", "path": "/metadata/ownerReferences", "value": [reference]}]


def _add_label(obj: Mapping[str, Any]) -> JsonObject:
    if (obj.get("metadata") or {}).get("labels"):
        return {"op": "add", "path": "/metadata/labels/" + naming.MANAGED_BY_LABEL.replace("/", "~1"),
                "value": naming.MANAGER}
    return {"op": "add", "path": "/metadata/labels", "value": {naming.MANAGED_BY_LABEL: naming.MANAGER}}


def _pinned(obj: Mapping[str, Any], operations: list[JsonObject]) -> tuple[JsonObject, ...]:
    """The patch, refused by the server if the object changed since it was read."""
    version = (obj.get("metadata") or {}).get("resourceVersion", "")
    return ({"op": "test", "path": "/metadata/resourceVersion", "value": version}, *operations)
