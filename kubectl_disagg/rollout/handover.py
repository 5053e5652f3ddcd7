"""Handing a running set between kubectl-disagg and the upstream controller.

`plan_handover` is pure; `prepare` reads what it needs from the cluster and `carry_out` writes
the plan's patches.

Both name and label a set's objects alike (the controller's revision, byte for byte), so a
hand-over changes only who may act on them, never a pod template: nothing restarts.

- to the controller: each LWS and Service gets the ownerReference the controller requires
  (the stored DisaggregatedSet as controller, its UID); our managed-by label stays (the
  controller filters by ownership and labels it does not look at are inert), and `rollout
  step` refuses the set from then on.
- to kubectl-disagg (the controller stopped first): each object gets the managed-by label and
  loses the ownerReference naming the set as controller (kept, `rollout step` would refuse the
  set; other ownerReferences stay). The objects then outlive a deletion of the stored set, as
  every kubectl-disagg object does. The set's status, written by the controller, is cleared so
  `rollout step NAME` does not take it for a running controller (see `controller`).

Every object must be adoptable, or nothing is changed: an object carrying the set's name label
that neither side manages, one whose name does not match its labels, or one another controller
owns refuses the whole hand-over.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from kubectl_disagg.core import naming
from kubectl_disagg.core.snapshot import controller_set_name, lws_from_object, service_from_object

TO_CONTROLLER = "to-controller"
TO_PLUGIN = "to-plugin"


@dataclass(frozen=True)
class Change:
    kind: str
    name: str
    patch: tuple[dict, ...]  # RFC 6902, pinned to the resourceVersion read
    summary: str


@dataclass(frozen=True)
class Handover:
    direction: str
    set_name: str
    changes: tuple[Change, ...]
    unchanged: tuple[str, ...]  # kind/name already on the receiving side
    refusal: tuple[str, ...]


def owner_reference(stored: Mapping[str, Any]) -> dict:
    """The ownerReference the controller stamps on the set's LWS and Services."""
    metadata = stored.get("metadata") or {}
    return {"apiVersion": stored.get("apiVersion", f"{naming.SET_GROUP}/v1"), "kind": naming.SET_KIND,
            "name": metadata.get("name", ""), "uid": metadata.get("uid", ""),
            "controller": True, "blockOwnerDeletion": True}


def plan_handover(direction: str, stored: Mapping[str, Any], objects: list[Mapping[str, Any]]) -> Handover:
    """What handing the stored set's `objects` (LWS and Services as read) over changes."""
    set_name = (stored.get("metadata") or {}).get("name", "")
    uid = (stored.get("metadata") or {}).get("uid", "")
    changes, unchanged, refusal = [], [], []
    for obj in objects:
        live = (lws_from_object if obj.get("kind") == "LeaderWorkerSet" else service_from_object)(obj)
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
        elif ours and not theirs:
            unchanged.append(subject)
        else:
            patch = [] if ours else [_add_label(obj)]
            kept = [o for o in owners if not (o.get("controller") is True and o.get("uid") == uid)]
            patch.append({"op": "replace", "path": "/metadata/ownerReferences", "value": kept})
            changes.append(Change(live.kind, live.name, _pinned(obj, patch),
                                  f"{subject}: " + ("" if ours else f"label {naming.MANAGED_BY_LABEL}="
                                                    f"{naming.MANAGER}, ") + "remove the controller ownerReference"))
    if not uid:
        refusal.append(f"disaggregatedset/{set_name} has no uid to own objects with")
    return Handover(direction, set_name, tuple(changes), tuple(unchanged), tuple(refusal))


CONTROLLER_RUNNING = ("stop the DisaggregatedSet controller first (it runs inside the LWS controller from "
                      "LWS v0.9 on), then pass --controller-stopped")


def prepare(cluster, direction: str, name: str, namespace: str, *, controller_stopped: bool = False,
            dry_run: bool = False) -> tuple[dict, Handover]:
    """The stored set and its hand-over, read from the cluster; to the plugin, refused unless
    the controller was declared stopped (a dry run only shows what would change)."""
    stored = cluster.get_set(name, namespace)
    plan = plan_handover(direction, stored, list(cluster.snapshot(name, namespace).objects.values()))
    if direction == TO_PLUGIN and not controller_stopped and not dry_run:
        plan = dataclasses.replace(plan, refusal=(*plan.refusal, CONTROLLER_RUNNING))
    return stored, plan


def carry_out(cluster, stored: Mapping[str, Any], plan: Handover, namespace: str) -> None:
    """Write the plan's patches, one object at a time: cut short, running the hand-over again
    finishes the rest (the objects already handed over are unchanged then). To the plugin, the
    set's controller-written status is cleared last."""
    for change in plan.changes:
        cluster.patch_object(change.kind, namespace, change.name, list(change.patch))
    if plan.direction == TO_PLUGIN and (stored.get("status") or {}):
        cluster.clear_set_status(plan.set_name, namespace)


def _expected_name(set_name: str, live) -> str:
    identity = live.identity
    if not identity.complete:
        return "(a complete slice, revision and role label)"
    name = naming.lws_name(set_name, identity.slice, identity.revision, identity.role)
    return name if live.kind == "LeaderWorkerSet" else name + naming.SERVICE_SUFFIX


def _add_owner(owners: list, stored: Mapping[str, Any]) -> list[dict]:
    reference = owner_reference(stored)
    if owners:
        return [{"op": "add", "path": "/metadata/ownerReferences/-", "value": reference}]
    return [{"op": "add", "path": "/metadata/ownerReferences", "value": [reference]}]


def _add_label(obj: Mapping[str, Any]) -> dict:
    if (obj.get("metadata") or {}).get("labels"):
        return {"op": "add", "path": "/metadata/labels/" + naming.MANAGED_BY_LABEL.replace("/", "~1"),
                "value": naming.MANAGER}
    return {"op": "add", "path": "/metadata/labels", "value": {naming.MANAGED_BY_LABEL: naming.MANAGER}}


def _pinned(obj: Mapping[str, Any], operations: list[dict]) -> tuple[dict, ...]:
    """The patch, refused by the server if the object changed since it was read."""
    version = (obj.get("metadata") or {}).get("resourceVersion", "")
    return ({"op": "test", "path": "/metadata/resourceVersion", "value": version}, *operations)
