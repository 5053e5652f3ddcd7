"""What a pass did, as Kubernetes Events with the controller's reasons; and `record_events`,
the one recorder of them (every step's and every verb's Events go through it).

`rollout step` records them after each pass that changed something, so `kubectl events` (and
`kubectl describe`) tell a set's history whoever stepped it. They regard the stored
DisaggregatedSet when the set was stepped by NAME, else (a file: no set object exists) the
LeaderWorkerSet each one is about. events.k8s.io/v1 Events, as client-go's recorder writes them.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Mapping

from kubectl_disagg.clock import Clock
from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.reconcile import Create, Delete, Phase, Scale
from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.lease import default_holder
from kubectl_disagg.kube.seam import EventRecorder
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.rollout.stepper import Pass

ROLLING_UPDATE_STARTED = "RollingUpdateStarted"
ROLLING_UPDATE_COMPLETED = "RollingUpdateCompleted"
SCALING_UP = "ScalingUp"
SCALING_DOWN = "ScalingDown"
LWS_DELETED = "LWSDeleted"
_ACTIONS = {ROLLING_UPDATE_STARTED: "RollingUpdate", ROLLING_UPDATE_COMPLETED: "RollingUpdate",
            SCALING_UP: "Scale", SCALING_DOWN: "Scale", LWS_DELETED: "Delete",
            # a RolloutPolicy's position (core/delivery/waves.py, rollout/progressive.py)
            **{reason: "Rollout" for reason in ("WaveStarted", "WaveCompleted", "GatePassed", "RolloutAborted",
                                                "RolloutPaused", "RolloutResumed", "RolloutPromoted",
                                                "RolloutRetried")}}


@dataclass(frozen=True)
class StepEvent:
    reason: str
    message: str
    regarding: Mapping[str, str]  # an ObjectReference: apiVersion, kind, name, namespace (uid when known)
    type: str = "Normal"

    @property
    def action(self) -> str:
        """What was done (the Event's `action`): the reason without its outcome."""
        return _ACTIONS[self.reason]


def lws_reference(name: str, namespace: str, uid: str = "") -> dict[str, str]:
    reference = {"apiVersion": naming.LWS_API_VERSION, "kind": naming.LWS_KIND, "name": name, "namespace": namespace}
    return {**reference, "uid": uid} if uid else reference


def set_reference(stored: Mapping[str, Any]) -> dict[str, str]:
    metadata = stored.get("metadata") or {}
    return {"apiVersion": stored.get("apiVersion", ""), "kind": stored.get("kind", naming.SET_KIND),
            "name": metadata.get("name", ""), "namespace": metadata.get("namespace", ""),
            "uid": metadata.get("uid", "")}


def events_for(step: Pass, regarding: Mapping[str, str] | None = None) -> list[StepEvent]:
    """The events of what `step` carried out: the rollout's start and end per pass, a scale or
    a deletion per LeaderWorkerSet. `regarding`: the stored set, or None for each LWS."""
    if step.dry_run or not step.done:
        return []
    ds, namespace = step.ds, step.namespace
    uids = {obj.name: obj.uid for obj in step.snapshot.lws}

    def about(lws_name: str) -> Mapping[str, str]:
        return regarding or lws_reference(lws_name, namespace, uids.get(lws_name, ""))

    done_slices = {action.slice for action in step.done}
    events = []
    for phase, reason, verb in ((Phase.ROLLOUT_STARTED, ROLLING_UPDATE_STARTED, "started"),
                                (Phase.COMPLETE, ROLLING_UPDATE_COMPLETED, "completed")):
        slices = [r.slice for r in step.reconciliation.slices if r.phase == phase and r.slice in done_slices]
        if slices:
            first_lws = naming.lws_name(ds.name, slices[0], ds.revision, ds.role_names[0])
            events.append(StepEvent(reason, f"Rolling update to revision {ds.revision} {verb} on "
                                            f"{naming.slices_words(slices)}", about(first_lws)))
    for action in step.done:
        if isinstance(action, Scale):
            reason = SCALING_UP if action.to_replicas > action.from_replicas else SCALING_DOWN
            events.append(StepEvent(reason, f"Scaled leaderworkerset/{action.name} from {action.from_replicas} "
                                            f"to {action.to_replicas}", about(action.name)))
        elif isinstance(action, Create) and action.kind == naming.LWS_KIND and action.object["spec"].get("replicas", 1):
            replicas = action.object["spec"].get("replicas", 1)
            events.append(StepEvent(SCALING_UP, f"Created leaderworkerset/{action.name} with {replicas} "
                                                f"replica{'' if replicas == 1 else 's'}", about(action.name)))
        elif isinstance(action, Delete) and action.kind == naming.LWS_KIND:
            events.append(StepEvent(LWS_DELETED, f"Deleted leaderworkerset/{action.name}", about(action.name)))
    return events


def event_object(event: StepEvent, micro_now: str, unique: str, instance: str) -> JsonObject:
    """The events.k8s.io/v1 Event to create, as client-go's events recorder writes it: named
    `<object>.<unique>`; `micro_now` RFC 3339 with microseconds, `instance` who recorded it."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{event.regarding['name']}.{unique}", "namespace": event.regarding["namespace"],
                     "labels": {naming.MANAGED_BY_LABEL: naming.MANAGER}},
        "eventTime": micro_now,
        "reportingController": naming.MANAGER,
        "reportingInstance": instance[:128],
        "action": event.action,
        "reason": event.reason,
        "note": event.message[:1024],
        "type": event.type,
        "regarding": dict(event.regarding),
    }


def record_events(cluster: EventRecorder, events: Iterable[StepEvent], clock: Clock,
                  warn: Callable[[str], None]) -> None:
    """Create each Event (a history aid: a failure only warns, once, and the rest are skipped),
    stamped with `clock`'s time and recorded by this process (`default_holder`)."""
    now = clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    holder = default_holder()
    for event in events:
        try:
            cluster.record_event(event_object(event, now, secrets.token_hex(8), holder))
        except UserError as err:
            warn(f"could not record event {event.reason}: {err}")
            return
