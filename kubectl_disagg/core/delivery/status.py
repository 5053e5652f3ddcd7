"""Status derived from the live LWS (design §7), never stored: a pure function of a snapshot.

The shape and words are the DisaggregatedSet controller's (`updateStatus` in its
disaggregatedset_controller.go), so tools that read the controller's status read ours:
roleStatuses with zero counts left out, a `Progressing` condition, and beside it an `Available`
one once the set has been available, both with the controller's reason and message, and the
set's generation as `observedGeneration` where it is known (a stored set). The per-slice detail
sits beside it under its own keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet, Role
from kubectl_disagg.core.controller.planner import format_position
from kubectl_disagg.core.controller.reconcile import Reconciliation, SliceReport, with_scalers
from kubectl_disagg.core.controller.snapshot import LiveLWS, Snapshot
from kubectl_disagg.manifests.source import JsonObject

if TYPE_CHECKING:  # a set with a RolloutPolicy only: a plain set's status does not load the waves
    from kubectl_disagg.core.delivery.rollout_status import RolloutStatus

AVAILABLE = "Available"
PROGRESSING = "Progressing"
REASON_READY = "AllRolesReady"
REASON_ROLLING = "RolloutInProgress"
REASON_ABORTED = "RolloutAborted"  # a RolloutPolicy's abort: the fleet is judged at the stable revision
MESSAGE_READY = "All roles have reached their desired replica count, ready and updated to the current revision"
MESSAGE_ROLLING = "Not all roles have reached their desired replica count, ready and updated to the current revision"
MESSAGE_ROLLED_BACK = ("The rollout to revision {revision} was aborted: all roles have reached their desired replica "
                       "count, ready and updated to the stable revision {stable}")
MESSAGE_ROLLING_BACK = ("The rollout to revision {revision} was aborted: not all roles have reached their desired "
                        "replica count, ready and updated to the stable revision {stable}")


class Until(StrEnum):
    """What `rollout status` is asked to see (`--for`, as kubectl wait's): `available`, every role
    ready at the set's revision (the controller's Available; after a RolloutPolicy's abort, at the
    stable revision the fleet is rolled back to, which it then serves); `complete`, that and the
    rollout's last step taken: no LeaderWorkerSet of another revision left in any slice (a drained
    one too, at 0 replicas), nothing held, waiting or stale, so a pass has nothing left to do. An
    aborted rollout is never complete: once its rollback is, the abort holds it (`rollout status
    -w --for=complete` ends held, as `rollout step --until-complete` does) until a person retries
    it or sets the template back."""

    AVAILABLE = "available"
    COMPLETE = "complete"


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


class NextAction(StrEnum):
    """Through git, what happens next (`Sync.next_action`): the one a git step would meet (a step
    to write, the sync or readiness to wait for, nothing left, a person to look, a hold only a
    verb's commit passes). views/status.py words each. The cluster's store has none."""

    STEP = "step"
    SYNC = "sync"
    READY = "ready"
    COMPLETE = "complete"
    REFUSED = "refused"
    HELD = "held"


@dataclass(frozen=True)
class CommittedSlice:
    """The committed point of one slice: `revisions` revision → role → replicas (deployment
    order), `position` (step i, of N) on the plan of its rollout, or None when it is at rest
    (one revision) or off the plan."""

    slice: int
    revisions: Mapping[str, Mapping[str, int]]
    position: tuple[int, int] | None


@dataclass(frozen=True)
class Sync:
    """The part of a status only the git store fills: where the committed state stands against
    the cluster. `state_file`: where it is kept (None: no file for it); `slices`: each slice's
    committed point; `synced`: every LWS the state renders is live with its committed replicas
    and annotation (and the live RolloutState, where there is one, is the committed document);
    `pruned`: no LWS the state no longer renders is left; `ready`: the set's revision's LWS are
    all ready, and every status is current (observedGeneration); `next_action` and `reasons`:
    what happens next, and why it waits or refuses (one line each)."""

    has_state: bool
    slices: tuple[CommittedSlice, ...]
    synced: bool
    pruned: bool
    ready: bool
    next_action: NextAction
    reasons: tuple[str, ...]
    state_file: str | None = None


@dataclass(frozen=True)
class SetStatus:
    """`roles`: RoleStatus per role; `slices`: a SliceReport per slice; `stale`: the LWS whose
    status lags their spec; `problems`, `warnings`: tuples of sentences; `generation`: the stored
    set's metadata.generation (None for a file); `been_available`: every role has an LWS that
    has been available (the LWS controller's own record), so the set has been too; `rollout`:
    with a RolloutPolicy, where the rollout stands and what holds it (rollout/progressive.py);
    `settled`: a reconcile pass has nothing left to do (every slice steady); `leftover`: the
    revisions other than the set's that still have LeaderWorkerSets, each with its slices;
    `paced`: with a RolloutPolicy, where its rollout stands as data (core/delivery/rollout_status.py);
    `serving`: the revision the fleet is judged at, the set's own, or after an abort the stable
    one its slices go back to (roles' `updated` and `leftover` count against it); `sync`: through
    git, the committed state against the cluster (None in the cluster's store)."""

    name: str
    namespace: str
    revision: str
    roles: tuple[RoleStatus, ...]
    slices: tuple[SliceReport, ...]
    stale: tuple[str, ...]
    problems: tuple[str, ...]
    warnings: tuple[str, ...]
    generation: int | None = None
    been_available: bool = False
    rollout: tuple[str, ...] = ()
    settled: bool = False
    leftover: tuple[tuple[str, tuple[int, ...]], ...] = ()
    paced: RolloutStatus | None = None
    serving: str = ""
    sync: Sync | None = None

    @property
    def aborted(self) -> bool:
        """A RolloutPolicy's abort: the fleet goes back to (or serves) the stable revision `serving`."""
        return self.paced is not None and self.paced.aborted is not None

    @property
    def available(self) -> bool:
        return not self.problems and all(role.available for role in self.roles)

    @property
    def complete(self) -> bool:
        """Available, and the rollout's last step taken (`Until.COMPLETE`); through git, the last
        step committed and live (the sync's next action: nothing left to roll)."""
        if self.sync is not None:
            return self.sync.next_action == NextAction.COMPLETE
        return self.available and self.settled and not self.stale and not self.leftover

    @property
    def waits_on_services(self) -> bool:
        """Available, every LWS at the set's revision and none stale, yet the rollout not complete:
        what is left is to its Services (a rollout's last pass removes the old revision's after
        its LWS), so a watch of the LWS would not see it happen."""
        return self.available and not self.leftover and not self.stale and not self.settled

    def reached(self, until: Until) -> bool:
        return self.complete if until == Until.COMPLETE else self.available

    def waiting_for(self) -> list[str]:
        return [f"slice {r.slice}: {reason}" for r in self.slices for reason in (*r.waiting_for, *r.blocked)]


# What a quiet look watches: the set's name and namespace, the resourceVersion its objects were
# listed at, and their kind (its LeaderWorkerSets, or its Services when only they are left to change);
# with a RolloutPolicy in the cluster, the resourceVersion of its RolloutState as read ("" for none).
Watched = tuple[str, str, str, str, "str | None"]


@dataclass(frozen=True)
class StatusLook:
    """One set's look, whatever store keeps its position: its status, what a watch of it
    watches between looks (`watched`), and `still`: nothing moves it without a person (held by
    its RolloutPolicy where `rollout step` would be, or at an analysis gate that no running step
    measures), so `rollout status -w` ends there (exit 7)."""

    report: SetStatus
    watched: Watched
    still: bool = False


def derive_status(ds: DisaggregatedSet, snapshot: Snapshot, reconciliation: Reconciliation) -> SetStatus:
    """Role sums over every slice and revision of our LWS; updated counts the target revision only:
    the one the reconciliation goes toward (the set's, or after a policy's abort the stable one)."""
    ours = [o for o in snapshot.lws if o.belongs_to(ds.name)]
    serving = reconciliation.revision or ds.revision
    left: dict[str, set[int]] = {}
    for o in ours:
        placed = o.identity.placed
        if placed is not None and (placed.revision != serving or placed.slice >= ds.slices):
            left.setdefault(placed.revision, set()).add(placed.slice)
    return SetStatus(
        name=ds.name,
        namespace=snapshot.namespace,
        revision=ds.revision,
        roles=role_statuses(ds, snapshot, serving),
        slices=reconciliation.slices,
        stale=tuple(sorted(o.name for o in ours if o.stale)),
        problems=reconciliation.problems,
        warnings=reconciliation.warnings,
        generation=_generation(ds),
        been_available=all(any(o.been_available for o in ours if o.identity.role == role.name) for role in ds.roles),
        settled=reconciliation.complete,
        leftover=tuple((rev, tuple(sorted(slices))) for rev, slices in sorted(left.items())),
        serving=serving,
    )


def role_statuses(ds: DisaggregatedSet, snapshot: Snapshot, serving: str = "") -> tuple[RoleStatus, ...]:
    """Each role's sums over every slice and revision of the set's LWS (`RoleStatus`), updated
    toward `serving` (default: the set's revision)."""
    ours = [o for o in snapshot.lws if o.belongs_to(ds.name)]
    ds = with_scalers(ds, snapshot)
    serving = serving or ds.revision
    return tuple(_role_status(ds, role.name, _desired(ds, role, ours, serving), ours, serving) for role in ds.roles)


def _generation(ds: DisaggregatedSet) -> int | None:
    value = (ds.source.data.get("metadata") or {}).get("generation")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _desired(ds: DisaggregatedSet, role: Role, lws: list[LiveLWS], serving: str) -> int:
    """Replicas per slice × slices (an External role's from its RoleScaler); an External role
    without one wants what its autoscaler last set on the LWS."""
    if role.scaled or not role.external:
        return role.replicas * ds.slices
    current = [o.replicas for o in lws if o.identity.role == role.name and o.identity.revision == serving]
    return sum(current) if current else 1


def _role_status(ds: DisaggregatedSet, role: str, desired: int, lws: list[LiveLWS], serving: str) -> RoleStatus:
    mine = [o for o in lws if o.identity.role == role]
    return RoleStatus(
        name=role,
        desired=desired,
        replicas=sum(o.status_replicas for o in mine),
        ready=sum(o.ready for o in mine),
        updated=sum(o.updated for o in mine if o.identity.revision == serving),
    )


def conditions(status: SetStatus, now: str) -> list[JsonObject]:
    """metav1.Conditions as the controller keeps them; `now` is passed in so this stays pure.

    `Progressing` is always there; `Available` joins it once the set has been available (the
    controller adds a condition when it first becomes true and only flips it afterwards). Both
    carry the reason and message of the state the set is in; after a RolloutPolicy's abort,
    `RolloutAborted` (as Argo Rollouts says it) and the revision the fleet went back to.
    """
    available = status.available
    reason, message = (REASON_READY, MESSAGE_READY) if available else (REASON_ROLLING, MESSAGE_ROLLING)
    if status.aborted and status.paced is not None:
        reason = REASON_ABORTED
        message = (MESSAGE_ROLLED_BACK if available else MESSAGE_ROLLING_BACK).format(
            revision=status.paced.revision, stable=status.serving)
    found = [_condition(PROGRESSING, not available, reason, message, status.generation, now)]
    if available or status.been_available:
        found.append(_condition(AVAILABLE, available, reason, message, status.generation, now))
    return found


def _condition(kind: str, value: bool, reason: str, message: str, generation: int | None, now: str) -> JsonObject:
    condition: JsonObject = {"type": kind, "status": "True" if value else "False"}
    if generation is not None:
        condition["observedGeneration"] = generation
    return condition | {"lastTransitionTime": now, "reason": reason, "message": message}


def _role_document(role: RoleStatus) -> JsonObject:
    """A RoleStatus as the controller writes it: counts of zero left out (omitempty)."""
    counts = {"replicas": role.replicas, "readyReplicas": role.ready, "updatedReplicas": role.updated}
    return {"name": role.name} | {key: value for key, value in counts.items() if value}


def to_document(status: SetStatus, now: str) -> JsonObject:
    """The `-o yaml|json` shape: DisaggregatedSetStatus under `status`, our detail under `slices`."""
    return {
        "apiVersion": naming.SET_API_VERSION,
        "kind": naming.SET_KIND,
        "metadata": {"name": status.name, "namespace": status.namespace},
        "status": _status_document(status, now),
        "slices": [_slice_document(report) for report in status.slices],
        "revision": status.revision,
        "complete": status.complete,
        "staleLeaderWorkerSets": list(status.stale),
        "problems": list(status.problems),
    } | ({} if status.paced is None else {"rollout": _rollout_document(status.paced)})


def _rollout_document(paced: RolloutStatus) -> JsonObject:
    from kubectl_disagg.core.delivery.rollout_status import rollout_document

    return rollout_document(paced)


def _status_document(status: SetStatus, now: str) -> JsonObject:
    document: JsonObject = {"roleStatuses": [_role_document(r) for r in status.roles],
                            "conditions": conditions(status, now)}
    if status.generation is not None:
        document["observedGeneration"] = status.generation
    return document


def _slice_document(report: SliceReport) -> JsonObject:
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
