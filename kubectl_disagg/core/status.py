"""Status derived from the live LWS (spec §7), never stored: a pure function of a snapshot.

The shape follows DisaggregatedSetStatus (roleStatuses, conditions) so tools that read the
controller's status read ours; the per-slice detail sits beside it under its own key.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_disagg.core.model import API_VERSION, KIND, DisaggregatedSet
from kubectl_disagg.core.planner import format_position
from kubectl_disagg.core.reconcile import Reconciliation, SliceReport, with_scalers
from kubectl_disagg.core.snapshot import LiveLWS, Snapshot

AVAILABLE = "Available"
PROGRESSING = "Progressing"
REASON_READY = "AllRolesReady"
REASON_ROLLING = "RolloutInProgress"


@dataclass(frozen=True)
class RoleStatus:
    """`desired`: replicas per slice × slices."""

    name: str
    desired: int
    replicas: int
    ready: int
    updated: int

    @property
    def available(self) -> bool:
        return self.replicas == self.ready == self.updated == self.desired


@dataclass(frozen=True)
class SetStatus:
    """`roles`: RoleStatus per role; `slices`: a SliceReport per slice; `stale`: the LWS whose
    status lags their spec; `problems`, `warnings`: tuples of sentences; `rollout`: with a
    RolloutPolicy, where the rollout stands and what holds it (rollout/progressive.py)."""

    name: str
    namespace: str
    revision: str
    roles: tuple[RoleStatus, ...]
    slices: tuple[SliceReport, ...]
    stale: tuple[str, ...]
    problems: tuple[str, ...]
    warnings: tuple[str, ...]
    rollout: tuple[str, ...] = ()

    @property
    def available(self) -> bool:
        return not self.problems and all(role.available for role in self.roles)

    def waiting_for(self) -> list[str]:
        return [f"slice {r.slice}: {reason}" for r in self.slices for reason in (*r.waiting_for, *r.blocked)]


def derive_status(ds: DisaggregatedSet, snapshot: Snapshot, reconciliation: Reconciliation) -> SetStatus:
    """Role sums over every slice and revision of our LWS; updated counts the target revision only."""
    ours = [o for o in snapshot.lws if o.belongs_to(ds.name)]
    ds = with_scalers(ds, snapshot)
    roles = tuple(_role_status(ds, role.name, _desired(ds, role, ours), ours) for role in ds.roles)
    return SetStatus(
        name=ds.name,
        namespace=snapshot.namespace,
        revision=ds.revision,
        roles=roles,
        slices=reconciliation.slices,
        stale=tuple(sorted(o.name for o in ours if o.stale)),
        problems=reconciliation.problems,
        warnings=reconciliation.warnings,
    )


def _desired(ds: DisaggregatedSet, role, lws: list[LiveLWS]) -> int:
    """Replicas per slice × slices (an External role's from its RoleScaler); an External role
    without one wants what its autoscaler last set on the LWS."""
    if role.scaled or not role.external:
        return role.replicas * ds.slices
    current = [o.replicas for o in lws if o.identity.role == role.name and o.identity.revision == ds.revision]
    return sum(current) if current else 1


def _role_status(ds: DisaggregatedSet, role: str, desired: int, lws: list[LiveLWS]) -> RoleStatus:
    mine = [o for o in lws if o.identity.role == role]
    return RoleStatus(
        name=role,
        desired=desired,
        replicas=sum(o.status_replicas for o in mine),
        ready=sum(o.ready for o in mine),
        updated=sum(o.updated for o in mine if o.identity.revision == ds.revision),
    )


def conditions(status: SetStatus, now: str) -> list[dict]:
    """metav1.Conditions; `now` is passed in so this stays a pure function."""
    if status.available:
        reason, message = REASON_READY, "every role has all replicas ready at the current revision"
    else:
        reason = REASON_ROLLING
        # Per role, not per slice: a condition message stays one readable line at 100 slices.
        message = "; ".join(status.problems) or "; ".join(
            f"{r.name}: {r.ready}/{r.desired} ready, {r.updated}/{r.desired} updated"
            for r in status.roles if not r.available) or "rolling out"
    return [
        _condition(AVAILABLE, status.available, reason, message, now),
        _condition(PROGRESSING, not status.available, reason, message, now),
    ]


def _condition(kind: str, value: bool, reason: str, message: str, now: str) -> dict:
    return {"type": kind, "status": "True" if value else "False", "reason": reason,
            "message": message, "lastTransitionTime": now}


def to_document(status: SetStatus, now: str) -> dict:
    """The `-o yaml|json` shape: DisaggregatedSetStatus under `status`, our detail under `slices`."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": status.name, "namespace": status.namespace},
        "status": {
            "roleStatuses": [
                {"name": r.name, "replicas": r.replicas, "readyReplicas": r.ready, "updatedReplicas": r.updated}
                for r in status.roles
            ],
            "conditions": conditions(status, now),
        },
        "slices": [_slice_document(report) for report in status.slices],
        "revision": status.revision,
        "staleLeaderWorkerSets": list(status.stale),
        "problems": list(status.problems),
    }


def _slice_document(report: SliceReport) -> dict:
    doc = {
        "slice": report.slice,
        "phase": report.phase,
        "revisions": [{"revision": rev, "replicas": dict(roles)} for rev, roles in report.revisions.items()],
        "waitingFor": [*report.waiting_for, *report.blocked],
        "nextActions": [action.describe() for action in report.actions],
    }
    if report.roles:
        doc["rollout"] = {
            "roles": list(report.roles),
            "old": list(report.old),
            "new": list(report.new),
            "position": format_position(report.position),
        }
    return doc
