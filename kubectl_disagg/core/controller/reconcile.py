"""One reconcile pass as data (design §4): snapshot in, list of actions out. Pure.

`rollout step` is: read a snapshot, `reconcile` it, print or execute the actions. Nothing
here talks to the cluster, reads the clock or the environment.

About 500 lines on purpose: the actions (and the units they must land in), the result types
(Phase, SliceReport) and design §4's pass are read together, top to bottom, as the spec reads;
split, each part would explain itself only through the others.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, TypedDict

from kubectl_disagg.core.api import naming

from kubectl_disagg.core.controller import planner
from kubectl_disagg.core.api.model import DisaggregatedSet, Role
from kubectl_disagg.core.controller.planner import PlanInputs, role_config
from kubectl_disagg.core.controller.render import leader_worker_set, service
from kubectl_disagg.core.api.rollout_config import RolloutConfig
from kubectl_disagg.core.controller.snapshot import LiveLWS, LiveObject, LiveService, Placed, Snapshot, holder_of
from kubectl_disagg.manifests.source import JsonObject

EXTERNAL_SEED_REPLICAS = planner.EXTERNAL_SEED_REPLICAS


# --- actions ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Create:
    """`object`: the manifest to create (a Mapping)."""

    object: Mapping[str, Any]
    slice: int

    @property
    def kind(self) -> str:
        kind: str = self.object["kind"]
        return kind

    @property
    def name(self) -> str:
        name: str = self.object["metadata"]["name"]
        return name

    def describe(self) -> str:
        replicas = self.object.get("spec", {}).get("replicas")
        suffix = f" with {replicas} replica{'' if replicas == 1 else 's'}" if self.kind == naming.LWS_KIND else ""
        return f"create {self.kind.lower()}/{self.name}{suffix}"


@dataclass(frozen=True, slots=True)
class Scale:
    """`from_replicas`: what the decision read, the write is refused if it moved meanwhile;
    `revision`: the revision group it belongs to (see `write_units`)."""

    name: str
    from_replicas: int
    to_replicas: int
    resource_version: str
    slice: int
    kind: str = naming.LWS_KIND
    revision: str = ""

    def describe(self) -> str:
        return f"scale leaderworkerset/{self.name} {self.from_replicas} → {self.to_replicas}"


@dataclass(frozen=True, slots=True)
class Annotate:
    """`replicas`: what the annotations were computed from, the write is refused if it moved;
    `has_annotations`: whether the LWS had an annotations map when read."""

    name: str
    annotations: Mapping[str, str]
    resource_version: str
    slice: int
    replicas: int
    has_annotations: bool
    kind: str = naming.LWS_KIND

    def describe(self) -> str:
        pairs = ", ".join(f"{k}={v}" for k, v in sorted(self.annotations.items()))
        return f"annotate leaderworkerset/{self.name} {pairs}"


@dataclass(frozen=True, slots=True)
class Delete:
    kind: str
    name: str
    uid: str
    resource_version: str
    slice: int

    def describe(self) -> str:
        return f"delete {self.kind.lower()}/{self.name}"


Action = Create | Scale | Annotate | Delete


# --- results ----------------------------------------------------------------------------------

class Phase(StrEnum):
    """Where a slice stands, named by what this pass does with it. Only reconcile decides it.

    Each phase carries its words, defined here only: its `label` (where the slice stands, as
    `rollout status` lists it: a rollout this pass would start is still pending there), and
    `says`, the phase in a sentence (what a pass did, or in a plan what the next one does).
    """

    # value, label, what a pass did (a step report), what the next pass does (a plan)
    STEADY = ("steady", "steady", "steady", "steady")  # at the target revision and spec, settled: nothing to do
    CONVERGING = ("converging", "converging", "converging to spec",
                  "converging")  # no rollout: creating or scaling towards the spec
    ROLLOUT_STARTED = ("rollout started", "rollout pending", "rollout to revision {revision} started",
                       "the next step starts the rollout to revision {revision}")  # annotations, new LWS at 0
    ROLLING = ("rolling", "rolling", "rolling", "rolling to revision {revision}")  # the planner's next step
    WAITING = ("waiting", "waiting", "waiting: {reasons}",
               "rolling to revision {revision}, waiting: {reasons}")  # the stability gate holds the next step back
    COMPLETE = ("complete", "complete", "rollout to revision {revision} complete",
                "rollout to revision {revision} complete")  # the rollout ended: the drained old revision goes
    STALLED = ("stalled", "stalled", "stalled: {reasons}",
               "rollout to revision {revision} stalled: {reasons}")  # old replicas remain, the planner has no move
    BLOCKED = ("blocked", "blocked", "blocked: {reasons}",
               "blocked")  # an object we do not manage holds a name we would create (see `blocked`)
    HELD = ("held", "held", "held: {reasons}",
            "held: {reasons}")  # a RolloutPolicy keeps the slice where it is this pass (core/delivery/waves.py)

    label: str
    _sentences: tuple[str, str]

    def __new__(cls, value: str, label: str, did: str, planned: str) -> Phase:
        member = str.__new__(cls, value)
        member._value_ = value
        member.label = label
        member._sentences = (did, planned)
        return member

    def says(self, revision: str, reasons: Sequence[str] = (), *, planned: bool = False) -> str:
        """The phase in a sentence: what a pass did with the slice, or with `planned` what the next
        pass would do (a plan); `reasons` are what it waits for or why it is blocked."""
        return self._sentences[planned].format(revision=revision, reasons="; ".join(reasons))


@dataclass(frozen=True)
class SliceReport:
    """What one slice looks like and what this pass does with it.

    `revisions`: revision → role → replicas, as observed. `position`: (step i, of N) on the
    planner trajectory, or None. `plan` (PlanInputs, or None), `old` and `new`: the
    planner's view of a rollout (per role considered: spec roles, then removed roles), where
    the live state stands in it. `blocked`: why this slice (and so the whole set) may not be
    stepped. `warnings`: e.g. an old revision group that lost a role.
    """

    slice: int
    phase: Phase
    revisions: Mapping[str, Mapping[str, int]]
    actions: tuple[Action, ...] = ()
    waiting_for: tuple[str, ...] = ()
    position: tuple[int, int] | None = None
    step_kind: str | None = None
    plan: PlanInputs | None = None
    old: tuple[int, ...] = ()
    new: tuple[int, ...] = ()
    blocked: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def roles(self) -> tuple[str, ...]:
        return self.plan.roles if self.plan is not None else ()


@dataclass(frozen=True)
class Reconciliation:
    """`problems`: an unexplainable live state, nothing may be done. `stopped`: why a
    RolloutPolicy holds the rollout still (a gate, a pause, an abort over): no pass moves it on.
    `revision`: the revision of the set reconciled (a policy's abort reconciles the stable set:
    then it is not the set's own, and views say rollback, core/delivery/fleet.py)."""

    actions: tuple[Action, ...]
    slices: tuple[SliceReport, ...]
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    stopped: tuple[str, ...] = ()
    revision: str = ""  # the revision the pass goes toward (after a policy's abort: the stable one)
    rollback: Rollback | None = None  # the admission's: the pass takes slices back
    returning: bool = False  # the admission's: the set's revision ran before (an undo), paced as any rollout

    @property
    def refusal(self) -> tuple[str, ...]:
        """Why no action of this pass may be taken: an unexplainable state or a blocked slice.

        A blocked slice stops the whole set, not just itself: the set's objects need someone to
        look at them, and half-stepping a set whose state is in question helps nobody.
        """
        return (*self.problems,
                *(f"slice {report.slice}: {reason}" for report in self.slices for reason in report.blocked))

    @property
    def may_proceed(self) -> bool:
        return not self.refusal

    @property
    def complete(self) -> bool:
        """Nothing left to do and nothing to wait for."""
        return not self.problems and not self.actions and all(
            report.phase in (Phase.STEADY, Phase.COMPLETE) for report in self.slices)


# --- the pass ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rollback:
    """A pass that takes slices back to `stable`: a RolloutPolicy's abort (`reason`: a failed
    verdict's values, or the verb's; `by`: who), or the template set back mid-rollout (`revert`).
    Carried through reconcile so every view words it as a rollback (core/delivery/fleet.py)."""

    stable: str
    reason: str = ""
    by: str = ""
    revert: bool = False


@dataclass(frozen=True)
class Admission:
    """What a RolloutPolicy lets a pass do (core/delivery/waves.py decides it): `held`, slice → why it
    does not roll (no target LWS, no initial-replicas annotation); `stopped`, why the rollout as
    a whole does not move on; `toward`, slice → the set it is reconciled toward instead of the
    pass's (a slice the set gained outside the admitted waves: the stable revision, design §10.2;
    a held slice: the one revision it runs, at the targets in force, design §10.1, and still
    reported held)."""

    held: Mapping[int, str]
    stopped: tuple[str, ...] = ()
    toward: Mapping[int, DisaggregatedSet] = field(default_factory=dict)
    rollback: Rollback | None = None  # the pass takes slices back (core/delivery/fleet.py `rollback_of`)
    # the set's revision is one it ran before (`rollout undo`, a revert after completion): a
    # rollout like any other, through the waves and gates, that views word as going back
    returning: bool = False


def reconcile(ds: DisaggregatedSet, snapshot: Snapshot, admission: Admission | None = None) -> Reconciliation:
    """The actions of one pass over every slice of `ds`, given what the cluster holds; with
    `admission`, only over the slices it does not hold."""
    lws, services, warnings = _claimable(ds.name, snapshot)
    problems = explain(ds.name, lws, services)
    blocked_names = _foreign_names(ds.name, snapshot)
    if problems:
        return Reconciliation((), (), tuple(problems), tuple(warnings))

    scalers = tuple(Create(scaler_object(ds, role, replicas, snapshot.namespace), 0)
                    for role, replicas in missing_scalers(ds, snapshot, lws).items())
    ds = with_scalers(ds, snapshot)
    removed = scalers + tuple(_delete(obj, _placed(obj).slice) for obj in (*lws, *services)
                              if _placed(obj).slice >= ds.slices)
    by_slice: dict[int, tuple[list[LiveLWS], list[LiveService]]] = defaultdict(lambda: ([], []))
    for live in lws:
        by_slice[_placed(live).slice][0].append(live)
    for service_obj in services:
        by_slice[_placed(service_obj).slice][1].append(service_obj)
    revision_roles = _revision_roles(lws, services)
    held = admission.held if admission is not None else {}
    toward = {s: with_scalers(other, snapshot) for s, other in (admission.toward if admission is not None
                                                                 else {}).items()}
    reports = [_held(ds, slice_index, by_slice[slice_index][0], held[slice_index])
               if slice_index in held and slice_index not in toward
               else _kept_held(reconcile_slice(toward.get(slice_index, ds), snapshot.namespace, slice_index,
                                               *by_slice[slice_index], blocked_names, revision_roles),
                               held.get(slice_index))
               for slice_index in range(ds.slices)]
    actions = removed + tuple(a for report in reports for a in report.actions)
    warnings += [w for report in reports for w in report.warnings]
    return Reconciliation(actions, tuple(reports), (), tuple(warnings),
                          admission.stopped if admission is not None else (), ds.revision,
                          admission.rollback if admission is not None else None,
                          admission.returning if admission is not None else False)


def _held(ds: DisaggregatedSet, slice_index: int, lws: list[LiveLWS], reason: str) -> SliceReport:
    """A slice the policy holds: reported as it stands, nothing done to it."""
    return SliceReport(slice_index, Phase.HELD, _observed(ds, _groups(lws)), (), (reason,))


def _kept_held(report: SliceReport, reason: str | None) -> SliceReport:
    """A slice the policy holds but reconciles toward the one revision it runs (a new target
    applied to it, design §10.1): its actions, reported held (a blocked name still blocks)."""
    if reason is None or report.phase == Phase.BLOCKED:
        return report
    return replace(report, phase=Phase.HELD, waiting_for=(reason,))


def _observed(ds: DisaggregatedSet, groups: Mapping[str, Mapping[str, LiveLWS]]) -> dict[str, dict[str, int]]:
    """revision → role → replicas, roles in spec order (removed ones after, by name)."""
    order = {name: index for index, name in enumerate(ds.role_names)}
    return {rev: {role: group[role].replicas for role in sorted(group, key=lambda r: (order.get(r, len(order)), r))}
            for rev, group in sorted(groups.items())}


# --- RoleScalers: an External role's target, where an autoscaler sets it ----------------------

def missing_scalers(ds: DisaggregatedSet, snapshot: Snapshot, lws: Iterable[LiveLWS] = ()) -> dict[str, int]:
    """External roles without their `<set>-<role>` RoleScaler, with the replicas to seed it with:
    as the controller does, the role's current replicas per slice (the target revision's, else
    the old revision's at the rollout's start), 1 for a role with none. Only where the kind is served."""
    if not snapshot.scalers_served:
        return {}
    seeds = {}
    for role in ds.roles:
        if not role.external or naming.scaler_name(ds.name, role.name) in snapshot.scalers:
            continue
        mine = [o for o in lws if o.identity.role == role.name]
        current = [o.replicas for o in mine if o.identity.revision == ds.revision]
        before = [o.initial_replicas if o.initial_replicas is not None else o.replicas for o in mine]
        seeds[role.name] = max(current or before or [EXTERNAL_SEED_REPLICAS])
    return seeds


def with_scalers(ds: DisaggregatedSet, snapshot: Snapshot) -> DisaggregatedSet:
    """`ds` with each External role that has a RoleScaler (or gets one this pass) sized by it:
    its spec.replicas is the role's target, and maxSurge/maxUnavailable percentages resolve
    against it."""
    if not any(role.external for role in ds.roles):
        return ds  # nothing to size: a set's every slice asks, and the fleet's LWS are many
    lws = [o for o in snapshot.lws if o.belongs_to(ds.name)]
    replicas = {**missing_scalers(ds, snapshot, lws),
                **{role.name: snapshot.scalers[naming.scaler_name(ds.name, role.name)] for role in ds.roles
                   if naming.scaler_name(ds.name, role.name) in snapshot.scalers}}
    roles = tuple(replace(role, replicas=replicas[role.name], scaled=True)
                  if role.external and role.name in replicas else role for role in ds.roles)
    return replace(ds, roles=roles)


def scaler_object(ds: DisaggregatedSet, role: str, replicas: int, namespace: str) -> JsonObject:
    """A role's RoleScaler as the controller names and seeds it (`/scale` is its subresource)."""
    return {
        "apiVersion": f"{naming.SET_GROUP}/v1",
        "kind": naming.SCALER_KIND,
        "metadata": {"name": naming.scaler_name(ds.name, role), "namespace": namespace,
                     "labels": {naming.NAME_LABEL: ds.name, naming.ROLE_LABEL: role,
                                naming.MANAGED_BY_LABEL: naming.MANAGER}},
        "spec": {"replicas": replicas},
        # What /scale reports: an HPA needs the selector (one leader pod per group, every revision).
        "status": {"replicas": replicas, "selector": f"{naming.NAME_LABEL}={ds.name},{naming.ROLE_LABEL}={role},"
                                                     f"{naming.WORKER_INDEX_LABEL}=0"},
    }


def _revision_roles(lws: Iterable[LiveLWS], services: Iterable[LiveService]) -> dict[str, set[str]]:
    """The roles each revision has anywhere in the set (any slice, LWS or Service): what a
    group of that revision should hold, so a role deleted by hand shows up as missing."""
    roles: dict[str, set[str]] = defaultdict(set)
    for obj in (*lws, *services):
        placed = obj.identity.placed
        if placed is not None:
            roles[placed.revision].add(placed.role)
    return dict(roles)


def _claimable(set_name: str, snapshot: Snapshot) -> tuple[list[LiveLWS], list[LiveService], list[str]]:
    """The set's objects (ours, or the controller's: see `controller`); anything else carrying
    the set's name label is reported and left alone."""
    warnings = []
    ours_lws: list[LiveLWS] = []
    ours_services: list[LiveService] = []
    objects: tuple[LiveLWS | LiveService, ...] = (*snapshot.lws, *snapshot.services)
    for obj in objects:
        if obj.belongs_to(set_name):
            if isinstance(obj, LiveLWS):
                ours_lws.append(obj)
            else:
                ours_services.append(obj)
        else:
            manager = obj.labels.get(naming.MANAGED_BY_LABEL, "nobody")
            warnings.append(f"{obj.kind.lower()}/{obj.name} carries this set's labels but is managed by "
                            f"{manager}, not {naming.MANAGER}: left untouched")
    return ours_lws, ours_services, warnings


def _foreign_names(set_name: str, snapshot: Snapshot) -> dict[tuple[str, str], str]:
    """Names held by objects that are not the set's, with who holds each: those carrying the
    set's labels, and those the stepper found at names this pass would create."""
    foreign = {(o.kind, o.name): holder_of(snapshot.objects.get((o.kind, o.name)) or {"metadata": {"labels": o.labels}})
               for o in (*snapshot.lws, *snapshot.services) if not o.belongs_to(set_name)}
    return {**foreign, **snapshot.occupied}


def explain(set_name: str, lws: Iterable[LiveLWS], services: Iterable[LiveService] = ()) -> list[str]:
    """Reasons the live state cannot be acted on safely; empty when it is explainable."""
    problems = [f"service/{s.name} lacks a valid slice, revision or role label"
                for s in services if not s.identity.complete]
    seen: dict[Placed, str] = {}
    for obj in lws:
        identity = obj.identity
        if not identity.complete:
            problems.append(f"leaderworkerset/{obj.name} lacks a valid slice, revision or role label")
            continue
        expected = naming.lws_name(set_name, *_placed(obj))
        if obj.name != expected:
            problems.append(f"leaderworkerset/{obj.name}: its labels (slice {identity.slice}, revision "
                            f"{identity.revision}, role {identity.role}) say it should be named {expected}")
        key = _placed(obj)
        if key in seen:
            problems.append(f"leaderworkerset/{obj.name} and leaderworkerset/{seen[key]} are both slice "
                            f"{identity.slice}, revision {identity.revision}, role {identity.role}")
        seen[key] = obj.name
    return problems


def reconcile_slice(ds: DisaggregatedSet, namespace: str, slice_index: int, lws: list[LiveLWS],
                    services: list[LiveService], blocked_names: Mapping[tuple[str, str], str] | None = None,
                    revision_roles: Mapping[str, set[str]] | None = None) -> SliceReport:
    """design §4 step 2 for one slice: drop drained groups, then roll or converge, then Services."""
    groups = _groups(lws)
    if revision_roles is None:
        revision_roles = _revision_roles(lws, services)
    warnings = tuple(broken_groups(slice_index, groups, revision_roles, ds.revision, ds.role_names))
    observed = _observed(ds, groups)
    actions: list[Action] = []

    # 2.1 Old groups drained to zero on every role are done with.
    drained: dict[str, int] = defaultdict(int)  # the capacity they started their rollout with
    for revision in [r for r, g in groups.items() if r != ds.revision and all(o.replicas == 0 for o in g.values())]:
        for obj in groups.pop(revision).values():
            actions.append(_delete(obj, slice_index))
            drained[_placed(obj).role] += obj.initial_replicas or 0

    old_groups = {r: g for r, g in groups.items() if r != ds.revision}
    # Every role counts, removed ones too: design §4 sums spec roles only, which would leave an old
    # revision whose roles were all renamed running forever beside the new one.
    old_total = sum(o.replicas for g in old_groups.values() for o in g.values())
    target_group = groups.get(ds.revision, {})

    if old_groups and old_total > 0:
        report = _rolling(ds, namespace, slice_index, old_groups, target_group, observed, actions, revision_roles)
    else:
        report = _steady(ds, namespace, slice_index, target_group, observed, actions,
                         rollout_ended=bool(actions), drained=drained)

    actions = list(report.actions) + _services(ds, namespace, slice_index, groups, report.actions, services)
    blocked_names = blocked_names or {}
    blocked = [a for a in actions if isinstance(a, Create) and (a.kind, a.name) in blocked_names]
    if blocked:
        # Creating over a name someone else's object holds would adopt it: stop this slice.
        reasons = tuple(f"{a.kind.lower()}/{a.name} exists and is not disaggregatedset/{ds.name}'s "
                        f"({blocked_names[(a.kind, a.name)]}); rename or delete it" for a in blocked)
        return replace(report, phase=Phase.BLOCKED, actions=(), waiting_for=(), blocked=reasons, warnings=warnings)
    return replace(report, actions=tuple(actions), warnings=warnings)


def _rolling(ds: DisaggregatedSet, namespace: str, slice_index: int, old_groups: Mapping[str, Mapping[str, LiveLWS]],
             target_group: Mapping[str, LiveLWS], observed: Mapping[str, Mapping[str, int]], actions: list[Action],
             revision_roles: Mapping[str, set[str]]) -> SliceReport:
    roles, initial_old, current_old, current_new, target, configs = _planner_inputs(ds, old_groups, target_group)
    view = _planner_view(roles, initial_old, current_old, current_new, target, configs)
    if not target_group:
        # The rollout starts: remember where every old LWS began, add the new revision at 0.
        for group in old_groups.values():
            for obj in group.values():
                actions.append(Annotate(obj.name, {naming.INITIAL_REPLICAS_ANNOTATION: str(obj.replicas)},
                                        obj.resource_version, slice_index, obj.replicas, bool(obj.annotations)))
        for role in ds.roles:
            actions.append(Create(leader_worker_set(ds, role, slice_index, namespace, replicas=0), slice_index))
        return SliceReport(slice_index, Phase.ROLLOUT_STARTED, observed, tuple(actions), position=None,
                           **_planner_view(roles, current_old, current_old, current_new, target, configs))

    position = _position(initial_old, current_old, current_new, target, configs)
    missing = [role for role in ds.roles if role.name not in target_group]
    if missing:
        # A rollout start that was cut short (a create failed after the annotations landed):
        # design §4 would wait for these forever; finish the start instead, at 0 like the others.
        actions.extend(Create(leader_worker_set(ds, role, slice_index, namespace, replicas=0), slice_index)
                       for role in missing)
        return SliceReport(slice_index, Phase.ROLLOUT_STARTED, observed, tuple(actions), (), position, **view)
    waiting = _stability_gate(ds, target_group)
    if waiting:
        return SliceReport(slice_index, Phase.WAITING, observed, tuple(actions), tuple(waiting), position, **view)

    step = planner.next_step(initial_old, current_old, current_new, target, configs)
    if step is None:
        # Old replicas remain (that is why this slice is rolling), yet design §5 has no move from
        # here, e.g. replicas lowered below the new revision's count mid-rollout: say so
        # rather than call a half-finished rollout complete.
        reason = ("the planner has no next step while old replicas remain "
                  f"(old {list(current_old)}, new {list(current_new)}, target {list(target)})")
        return SliceReport(slice_index, Phase.STALLED, observed, tuple(actions), (reason,), position, **view)

    # Drains first: a step that drains and scales up at once (design §5's force drain) exists because
    # scaling up first would pass target + maxSurge, and the pods a scale-up adds serve nothing
    # for a while anyway, so draining first costs no serving capacity (see `write_units`).
    budget = {role: cur - nxt for role, cur, nxt in zip(roles, current_old, step.old)}
    actions.extend(_drain_old_groups(old_groups, budget, slice_index, revision_roles))
    for role_name, new in zip(roles, step.new):
        live = target_group.get(role_name)
        if live is not None and new > live.replicas:
            actions.append(_scale(live, new, slice_index))
    return SliceReport(slice_index, Phase.ROLLING, observed, tuple(actions), (), position, str(step.kind), **view)


class _PlannerView(TypedDict):
    """A rollout's place in the planner, as SliceReport holds it (its `plan`, `old` and `new`)."""

    plan: PlanInputs
    old: tuple[int, ...]
    new: tuple[int, ...]


def _planner_view(roles: Sequence[str], initial_old: Sequence[int], current_old: Sequence[int],
                  current_new: Sequence[int], target: Sequence[int], configs: Sequence[RolloutConfig]) -> _PlannerView:
    return _PlannerView(plan=PlanInputs(tuple(roles), tuple(initial_old), tuple(target), tuple(configs)),
                old=tuple(current_old), new=tuple(current_new))


def _stability_gate(ds: DisaggregatedSet, target_group: Mapping[str, LiveLWS]) -> list[str]:
    """Why the next step must wait: every target LWS settled (status fresh, replicas == ready ==
    status.replicas: after a scale-down the LWS controller reports the groups it is still
    removing, ready, for a while after it observed the new spec)."""
    waiting = []
    for role in ds.roles:
        obj = target_group.get(role.name)
        if obj is None:
            waiting.append(f"{role.name}: no LeaderWorkerSet at revision {ds.revision}")
        elif obj.stale:
            waiting.append(f"{role.name}: status is stale (observedGeneration {obj.observed_generation} "
                           f"< generation {obj.generation})")
        elif obj.ready != obj.replicas:
            waiting.append(f"{role.name}: {obj.ready}/{obj.replicas} ready")
        elif obj.status_replicas > obj.replicas:
            waiting.append(f"{role.name}: {obj.status_replicas - obj.replicas} of {obj.status_replicas} groups "
                           "still being removed")
    return waiting


def _planner_inputs(ds: DisaggregatedSet, old_groups: Mapping[str, Mapping[str, LiveLWS]],
                    target_group: Mapping[str, LiveLWS]) -> tuple[list[str], list[int], list[int], list[int], list[int],
                                                                  list[RolloutConfig]]:
    """Per role considered (spec roles, then roles left only in old groups), the planner's vectors."""
    removed = sorted({role for g in old_groups.values() for role in g} - set(ds.role_names))
    roles = list(ds.role_names) + removed
    initial_old: list[int] = []
    current_old: list[int] = []
    current_new: list[int] = []
    target: list[int] = []
    configs: list[RolloutConfig] = []
    for name in roles:
        olds = [g[name] for g in old_groups.values() if name in g]
        initial_old.append(sum(o.initial_replicas if o.initial_replicas is not None else o.replicas for o in olds))
        current_old.append(sum(o.replicas for o in olds))
        current_new.append(target_group[name].replicas if name in target_group else 0)
        role: Role | None = next((r for r in ds.roles if r.name == name), None)
        target.append(planner.role_target(role, initial_old[-1], current_new[-1]))
        configs.append(role_config(role))
    return roles, initial_old, current_old, current_new, target, configs


def _position(initial_old: Sequence[int], current_old: Sequence[int], current_new: Sequence[int],
              target: Sequence[int], configs: Sequence[RolloutConfig]) -> tuple[int, int] | None:
    trajectory = _trajectory(tuple(initial_old), tuple(target), tuple(configs))
    index = planner.find_position(trajectory, current_old, current_new)
    return None if index is None else (index, len(trajectory) - 1)


@functools.lru_cache(maxsize=256)
def _trajectory(initial_old: tuple[int, ...], target: tuple[int, ...],
                configs: tuple[RolloutConfig, ...]) -> list[planner.Step]:
    """The whole plan, shared by every slice in the same place (100 slices, one computation)."""
    try:
        return planner.plan(initial_old, target, configs)
    except planner.PlanDidNotConverge:
        return []  # no position to report; next_step still decides the actual move


def _drain_old_groups(old_groups: Mapping[str, Mapping[str, LiveLWS]], budget: dict[str, int],
                      slice_index: int, revision_roles: Mapping[str, set[str]]) -> list[Action]:
    """Spend each role's drain budget on old groups, newest first, never orphaning a role.

    When draining would bring any role of a group to 0, the whole group goes to 0 together;
    the drain is then charged only to the roles that triggered it. A role already at 0, or
    missing from its group (deleted by hand), triggers too, as in the controller: a group
    that lost a role serves nothing useful.
    """
    actions: list[Action] = []
    newest_first = sorted(old_groups.items(), key=lambda item: max(o.created for o in item[1].values()), reverse=True)
    for revision, group in newest_first:
        drains = {role: min(max(budget.get(role, 0), 0), obj.replicas) for role, obj in group.items()}
        triggers = [role for role, obj in group.items() if obj.replicas - drains[role] == 0]
        missing = revision_roles.get(revision, set()) - set(group)
        for role, obj in group.items():
            to = 0 if triggers or missing else obj.replicas - drains[role]
            if to != obj.replicas:
                actions.append(_scale(obj, to, slice_index))
        for role in (triggers or ([] if missing else group)):
            budget[role] = budget.get(role, 0) - drains[role]
    return actions


def broken_groups(slice_index: int, groups: Mapping[str, Mapping[str, LiveLWS]],
                  revision_roles: Mapping[str, set[str]], target: str, order: Sequence[str] = ()) -> list[str]:
    """Old revision groups with some roles at 0 or missing while others still run: say so,
    roles in spec order (`order`; others after them by name)."""
    rank = {name: index for index, name in enumerate(order)}

    def in_order(names: Iterable[str]) -> list[str]:
        return sorted(names, key=lambda r: (rank.get(r, len(rank)), r))

    warnings = []
    for revision, group in sorted(groups.items()):
        if revision == target or all(o.replicas == 0 for o in group.values()):
            continue
        idle = in_order(role for role, o in group.items() if o.replicas == 0)
        missing = in_order(revision_roles.get(revision, set()) - set(group))
        if idle or missing:
            what = "; ".join(part for part in (
                f"no LeaderWorkerSet for {', '.join(missing)}" if missing else "",
                f"{', '.join(idle)} at 0 replicas" if idle else "") if part)
            warnings.append(f"slice {slice_index}: revision {revision} is broken ({what}) while its other roles "
                            "run; the next drain takes the whole group to 0")
    return warnings


def _steady(ds: DisaggregatedSet, namespace: str, slice_index: int, target_group: Mapping[str, LiveLWS],
            observed: Mapping[str, Mapping[str, int]], actions: list[Action], rollout_ended: bool,
            drained: Mapping[str, int] | None = None) -> SliceReport:
    """No rollout under way: converge the target revision to the spec.

    `rollout_ended`: this pass removes drained old groups; with nothing else to do and the
    target settled, that is the last pass of a rollout, reported as complete. `drained`: per
    role, what those groups started their rollout with.
    """
    removals = len(actions)
    for role in ds.roles:
        obj = target_group.get(role.name)
        if obj is None:
            seed = role.replicas if role.scaled else EXTERNAL_SEED_REPLICAS if role.external else None
            actions.append(Create(leader_worker_set(ds, role, slice_index, namespace, replicas=seed), slice_index))
        elif obj.replicas != role.replicas and (role.scaled or not role.external):
            # An autoscaler sizes External roles: through their RoleScaler, else on the LWS itself.
            actions.append(_scale(obj, role.replicas, slice_index))
        elif role.external and obj.replicas == 0 and rollout_ended:
            # A rollout that drained the old revision before the new one grew (maxUnavailable)
            # ended with the role at 0: give it back the capacity it had, never less than the seed.
            capacity = max((drained or {}).get(role.name, 0), EXTERNAL_SEED_REPLICAS)
            actions.append(_scale(obj, capacity, slice_index))
    gate = [] if len(actions) > removals else _stability_gate(ds, target_group)
    if len(actions) > removals or (rollout_ended and gate):
        phase = Phase.CONVERGING
    elif rollout_ended:
        phase = Phase.COMPLETE
    else:
        phase = Phase.WAITING if gate else Phase.STEADY
    waiting = () if actions else tuple(gate)
    return SliceReport(slice_index, phase, observed, tuple(actions), waiting)


def _services(ds: DisaggregatedSet, namespace: str, slice_index: int, groups: Mapping[str, Mapping[str, LiveLWS]],
              lws_actions: Iterable[Action], services: list[LiveService]) -> list[Action]:
    """design §4.4: a revision's Services live exactly as long as it has LWS in the slice.

    `groups` is what remains after this pass's deletes; the target's Services come with its
    first LWS (a headless Service lists only ready pods, so an early one is harmless), and a
    Service goes only once its revision has no LWS left, never while its pods may serve. A set
    without them (`revision_services` False, design §3) has none: ours are deleted, as a
    render without them and a prune would.
    """
    if not ds.revision_services:
        return [_delete(svc, slice_index) for svc in services if svc.managed_by_us(ds.name)]
    roles_by_revision = {revision: set(group) for revision, group in groups.items()}
    if any(isinstance(a, Create) and a.kind == naming.LWS_KIND for a in lws_actions):
        roles_by_revision.setdefault(ds.revision, set()).update(ds.role_names)
    existing = {(_placed(s).revision, _placed(s).role): s for s in services}
    actions: list[Action] = []
    order = {name: index for index, name in enumerate(ds.role_names)}
    for revision, roles in sorted(roles_by_revision.items()):
        for role in sorted(roles, key=lambda r: (order.get(r, len(order)), r)):
            if (revision, role) not in existing:
                actions.append(Create(service(ds.name, slice_index, revision, role, namespace), slice_index))
    for (revision, _role), svc in sorted(existing.items()):
        if revision not in roles_by_revision:
            actions.append(_delete(svc, slice_index))
    return actions


def _groups(lws: Iterable[LiveLWS]) -> dict[str, dict[str, LiveLWS]]:
    groups: dict[str, dict[str, LiveLWS]] = defaultdict(dict)
    for obj in lws:
        placed = _placed(obj)
        groups[placed.revision][placed.role] = obj
    return dict(groups)


def _scale(obj: LiveLWS, to: int, slice_index: int) -> Scale:
    return Scale(obj.name, obj.replicas, to, obj.resource_version, slice_index, revision=obj.identity.revision or "")


def write_units(actions: Iterable[Action]) -> list[tuple[Action, ...]]:
    """The pass's actions, in order, cut into the runs that must land together or not at all.

    Consecutive scales in one slice form a unit: one step of the slice (a rolling step's
    drains of old groups and scale-ups of the new one, or a convergence's scales). Half of a
    unit would leave a group split (a new group serving prefill without decode, an old group
    drained on one role only) or a role past target + maxSurge (scaled up, its drain not
    landed), so an executor that fails inside a unit undoes the unit's earlier writes. In a
    rolling step reconcile puts the drains before the scale-ups: every point the unit passes
    through holds each role at or below the larger of where it starts and where it ends.
    Every other action is a unit of its own.
    """
    units: list[list[Action]] = []
    for action in actions:
        previous = units[-1][-1] if units else None
        if isinstance(action, Scale) and isinstance(previous, Scale) and previous.slice == action.slice:
            units[-1].append(action)
        else:
            units.append([action])
    return [tuple(unit) for unit in units]


def undo(scale: Scale) -> Scale:
    """The scale that takes `scale` back, pinned to the count `scale` wrote."""
    return replace(scale, from_replicas=scale.to_replicas, to_replicas=scale.from_replicas)


def _placed(obj: LiveObject) -> Placed:
    """The slice, revision and role of an object `explain` accepted (its identity is complete)."""
    placed = obj.identity.placed
    assert placed is not None, obj.name
    return placed


def _delete(obj: LiveObject, slice_index: int) -> Delete:
    return Delete(obj.kind, obj.name, obj.uid, obj.resource_version, slice_index)


