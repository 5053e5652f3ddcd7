"""Rollouts through git: the next rollout state from the committed one and the live LWS.

`gitops_step` is `rollout step` for git: the same `reconcile` over the live LWS, with a
`StateExecutor` landing the actions in the state instead of the cluster (one decision, two
executors). It refuses to move unless the cluster shows exactly what the state renders to.
Pure, but for `next_step`: `stepper.drive` over a `StateExecutor` reading the cluster it is
given, so `--wait` watches between looks as `rollout step --until-complete` does.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from kubectl_disagg.core import naming
from kubectl_disagg.errors import UserError
from kubectl_disagg.core.model import DisaggregatedSet, Placement
from kubectl_disagg.core.reconcile import EXTERNAL_SEED_REPLICAS, LWS, SERVICE, Action, Annotate, Create, Delete, Scale
from kubectl_disagg.core.render import deep_copy
from kubectl_disagg.gitops.state import RevisionRecord, RoleRecord, RolloutState, record_from_set, record_revision
from kubectl_disagg.core.snapshot import LiveLWS, LiveService, Snapshot
from kubectl_disagg.gitops.render import render_with_state
from kubectl_disagg.gitops.served import served_differences
from kubectl_disagg.rollout.stepper import Pass, drive, run_pass


# --- the state a first step writes ------------------------------------------------------------


def initial_state(ds: DisaggregatedSet, namespace: str) -> RolloutState:
    """Nothing deployed yet: the set at its revision and replicas in every slice."""
    counts = {role.name: EXTERNAL_SEED_REPLICAS if role.external else role.replicas for role in ds.roles}
    return RolloutState(ds.name, namespace, {ds.revision: record_from_set(ds)},
                        {s: {ds.revision: dict(counts)} for s in range(ds.slices)}, {})


def adopt_state(ds: DisaggregatedSet, namespace: str, snapshot: Snapshot) -> RolloutState:
    """The state of a set already live (deployed by `rollout step`, say), read from its LWS."""
    ours = sorted((o for o in snapshot.lws if o.managed_by_us(ds.name) and o.identity.complete),
                  key=lambda o: (o.created, o.name))
    records: dict[str, RevisionRecord] = {}
    replicas: dict[int, dict[str, dict[str, int]]] = {}
    initial: dict[int, dict[str, dict[str, int]]] = {}
    for obj in ours:
        identity = obj.identity
        if identity.revision not in records:
            records[identity.revision] = (record_from_set(ds) if identity.revision == ds.revision
                                          else _record_from_live(ds, identity.revision, ours, snapshot))
        replicas.setdefault(identity.slice, {}).setdefault(identity.revision, {})[identity.role] = obj.replicas
        if identity.revision != ds.revision and obj.initial_replicas is not None:
            initial.setdefault(identity.slice, {}).setdefault(identity.revision, {})[identity.role] = \
                obj.initial_replicas
    for slice_index, deployed in replicas.items():  # roles in their record's order
        for revision, counts in deployed.items():
            deployed[revision] = {r: counts[r] for r in records[revision].role_names if r in counts}
    return RolloutState(ds.name, namespace, records, replicas, initial)


def _record_from_live(ds: DisaggregatedSet, revision: str, ours: list[LiveLWS], snapshot: Snapshot) -> RevisionRecord:
    """An old revision's record, recovered from its live LWS (the injected parts taken out).

    Checked by rendering it back: a revision whose LWS were edited by hand cannot be adopted.
    """
    by_role: dict[str, LiveLWS] = {}
    for obj in sorted(ours, key=lambda o: o.identity.slice):
        if obj.identity.revision == revision:
            by_role.setdefault(obj.identity.role, obj)
    roles, placement = [], None
    order = {name: index for index, name in enumerate(ds.role_names)}
    for role_name in sorted(by_role, key=lambda r: (order.get(r, len(order)), r)):
        live = snapshot.objects[(LWS, by_role[role_name].name)]
        spec = deep_copy({k: v for k, v in (live.get("spec") or {}).items() if k != "replicas"})
        found = _strip_injected(spec, ds.name)
        placement = placement or found
        metadata = live.get("metadata") or {}
        system = set(naming.lws_labels(ds.name, 0, revision, role_name))
        labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k not in system}
        annotations = {k: v for k, v in (metadata.get("annotations") or {}).items()
                       if k != naming.INITIAL_REPLICAS_ANNOTATION and not k.startswith("kubectl.kubernetes.io/")}
        external = "replicas" not in (live.get("spec") or {})
        roles.append(RoleRecord(role_name, spec, labels, annotations, external))
    record = RevisionRecord(revision, placement or Placement(), tuple(roles))
    if record_revision(record) != revision:
        raise UserError([f"cannot adopt revision {revision} of disaggregatedset/{ds.name}: its live "
                         f"LeaderWorkerSets' templates hash to {record_revision(record)} (edited by hand?); "
                         "finish its rollout with `kubectl disagg rollout step` first"])
    return record


def _strip_injected(spec: dict, set_name: str):
    """Take the labels and placement affinity render injects out of a live spec; the placement found."""
    placement = None
    template = spec.get("leaderWorkerTemplate") or {}
    for key in ("workerTemplate", "leaderTemplate"):
        pod = template.get(key)
        if not isinstance(pod, dict):
            continue
        metadata = pod.get("metadata") or {}
        labels = {k: v for k, v in (metadata.get("labels") or {}).items()
                  if not k.startswith(naming.LABEL_PREFIX) and k != naming.APP_LABEL}
        if labels:
            metadata["labels"] = labels
        else:
            metadata.pop("labels", None)
        if metadata:
            pod["metadata"] = metadata
        else:
            pod.pop("metadata", None)
        affinity = (pod.get("spec") or {}).get("affinity") or {}
        for kind in ("podAffinity", "podAntiAffinity"):
            section = affinity.get(kind) or {}
            terms = section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
            ours = [t for t in terms if _is_placement_term(t, set_name)]
            if not ours:
                continue
            if kind == "podAntiAffinity":
                kind_name = "ExclusiveTopology" if len(ours) == 2 else "ExclusiveSlice"
                placement = Placement(kind_name, ours[0].get("topologyKey"))
            rest = [t for t in terms if t not in ours]
            if rest:
                section["requiredDuringSchedulingIgnoredDuringExecution"] = rest
            else:
                section.pop("requiredDuringSchedulingIgnoredDuringExecution")
            if not section:
                affinity.pop(kind)
        if "affinity" in (pod.get("spec") or {}) and not affinity:
            pod["spec"].pop("affinity")
    return placement


def _is_placement_term(term: Mapping, set_name: str) -> bool:
    expressions = ((term.get("labelSelector") or {}).get("matchExpressions") or [])
    return any(e.get("key") == naming.NAME_LABEL for e in expressions) and any(
        e.get("key") == naming.SLICE_LABEL for e in expressions)


# --- the second executor ----------------------------------------------------------------------


class _NoLease:
    """Git serialises writers (one pull request per step): no Lease to hold, none to renew."""

    duration = math.inf

    def renew_if_due(self) -> None:
        pass


class StateExecutor:
    """`stepper.Executor` over a rollout state: reconcile's actions land in the document.

    `snapshot` hands out the live state: the snapshot the step was decided on, or read afresh
    from `live` when that is a cluster (something with `snapshot` and `wait_for_change`, whose
    watch `wait_for_change` is then); each action rewrites the state as the cluster executor
    would rewrite the cluster. Services follow their revision's LWS in the render, so their
    creates and deletes need no record. No lease and no permission check: git review is both.
    """

    def __init__(self, ds: DisaggregatedSet, state: RolloutState | None, live):
        self._ds, self.committed = ds, state
        self._cluster = None if isinstance(live, Snapshot) else live
        self._snapshot = live if isinstance(live, Snapshot) else None
        self._name = state.name if state else ds.name
        self._namespace = state.namespace if state else None
        self.records = dict(state.revisions) if state else {}
        self.replicas = {s: {rev: dict(c) for rev, c in d.items()} for s, d in state.replicas.items()} if state else {}
        self.initial = {s: {rev: dict(c) for rev, c in d.items()} for s, d in state.initial.items()} if state else {}
        self._identities = {o.name: o.identity for o in live.lws} if self._snapshot else {}
        self.served = None  # the live RolloutState object, read with each snapshot of a cluster

    def snapshot(self, set_name: str, namespace: str, *, scalers: bool = False) -> Snapshot:
        if self._cluster is not None:
            self._snapshot = self._cluster.snapshot(set_name, namespace, services=False)
            self._identities = {o.name: o.identity for o in self._snapshot.lws}
            self.served = self._cluster.rollout_state(set_name, namespace) if self.committed else None
        return self._snapshot

    def authorize(self, actions: Sequence[Action], namespace: str) -> None:
        pass  # a state file is written by whoever may commit it

    def lease(self, set_name: str, namespace: str,
              wait_until: float | None = None) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext(_NoLease())

    def wait_for_change(self, set_name: str, namespace: str, resource_version: str, timeout: float) -> bool:
        if self._cluster is None:
            return False  # a state decided on one snapshot: nothing to watch
        return self._cluster.wait_for_change(set_name, namespace, resource_version, timeout)

    def occupants(self, names: Sequence[tuple[str, str]], namespace: str) -> dict:
        return {}  # a state writes no cluster object: Argo CD applies the render, as its owner

    def execute(self, action: Action, namespace: str, *, dry_run: bool = False) -> None:
        if action.kind == SERVICE:
            return
        if isinstance(action, Create):
            if dry_run:
                return
            labels = action.object["metadata"]["labels"]
            slice_index, revision, role = (int(labels[naming.SLICE_LABEL]), labels[naming.REVISION_LABEL],
                                           labels[naming.ROLE_LABEL])
            replicas = action.object["spec"].get("replicas", EXTERNAL_SEED_REPLICAS)
            self._set(self.replicas, slice_index, revision, role, replicas)
            return
        identity = self._identities.get(action.name)
        if identity is None:
            raise UserError(f"leaderworkerset/{action.name} is not part of the rollout state")
        if dry_run:
            return  # judged (it is part of the state), not landed
        slice_index, revision, role = identity.slice, identity.revision, identity.role
        if isinstance(action, Scale):
            self._set(self.replicas, slice_index, revision, role, action.to_replicas)
        elif isinstance(action, Annotate):
            raw = action.annotations.get(naming.INITIAL_REPLICAS_ANNOTATION)
            if raw is not None:
                self._set(self.initial, slice_index, revision, role, int(raw))
        elif isinstance(action, Delete):
            for table in (self.replicas, self.initial):
                group = table.get(slice_index, {}).get(revision)
                if group is not None:
                    group.pop(role, None)
                    if not group:
                        del table[slice_index][revision]

    def _set(self, table: dict, slice_index: int, revision: str, role: str, value: int) -> None:
        if revision == self._ds.revision:
            self.records.setdefault(revision, record_from_set(self._ds))
        counts = table.setdefault(slice_index, {}).setdefault(revision, {})
        counts[role] = value
        record = self.records.get(revision)
        if record is not None:  # keep the record's role order, so the document reads the same each time
            table[slice_index][revision] = {r: counts[r] for r in record.role_names if r in counts}

    def state(self) -> RolloutState:
        replicas = {s: d for s, d in sorted(self.replicas.items()) if d and s < self._ds.slices}
        initial = {s: {rev: c for rev, c in d.items() if c and rev in replicas.get(s, {})}
                   for s, d in self.initial.items()}
        used = {rev for d in replicas.values() for rev in d}
        return RolloutState(self._name, self._namespace, {r: rec for r, rec in self.records.items() if r in used},
                            replicas, {s: d for s, d in initial.items() if d})


# --- one step ---------------------------------------------------------------------------------


class Outcome(StrEnum):
    ADVANCED = "advanced"  # a new state to commit
    WAITING = "waiting"  # the cluster does not show the state's step yet (or it is not settled)
    COMPLETE = "complete"  # nothing left to roll
    REFUSED = "refused"  # the live objects cannot be explained; a person must look


@dataclass(frozen=True)
class GitopsStep:
    outcome: Outcome
    state: RolloutState | None  # the state to write (ADVANCED), else the one read
    reasons: tuple[str, ...] = ()  # why it waits or refuses, or what the new state does
    passed: Pass | None = None  # reconcile's pass, when one ran
    before: RolloutState | None = None
    snapshot: Snapshot | None = None  # the live LWS it was decided on (set by `next_state`)

    # What `stepper.drive` reads of a pass: a step that does not wait ends the drive (a state
    # to commit is as far as git goes until it is merged); a waiting one watches the LWS.
    @property
    def refusal(self) -> tuple[str, ...]:
        return self.reasons if self.outcome == Outcome.REFUSED else ()

    @property
    def complete(self) -> bool:
        return self.outcome in (Outcome.ADVANCED, Outcome.COMPLETE)

    @property
    def done(self) -> tuple[Action, ...]:
        return ()  # nothing lands in the cluster: only a commit changes what the next look sees


def next_state(executor: StateExecutor, ds: DisaggregatedSet, namespace: str, lease=None, *,
               max_in_flight: int = 1) -> GitopsStep:
    """One look of a git-driven step, as `stepper.drive` takes a pass: the live LWS read through
    `executor`, the next state decided from the committed one."""
    live = executor.snapshot(ds.name, namespace)
    return replace(gitops_step(ds, executor.committed, live, executor.served), snapshot=live)


def next_step(cluster, ds: DisaggregatedSet, state: RolloutState | None, namespace: str, *, wait: bool = False,
              deadline: float | None = None, clock: Callable[[], float] = time.monotonic) -> tuple[GitopsStep, bool]:
    """The next step of a git-driven rollout; with `wait`, the first that does not wait (watching
    the LWS in between, by `stepper.drive`) until `deadline` (a `clock` value); and whether the
    deadline came first."""
    executor = StateExecutor(ds, state, cluster)
    step = None
    for step in drive(executor, ds, namespace, until_complete=wait, deadline=deadline, clock=clock,
                      take_pass=next_state):
        pass
    if step is None:  # the deadline had passed before the first look
        return next_state(executor, ds, namespace), True
    return step, wait and step.outcome == Outcome.WAITING


def gitops_step(ds: DisaggregatedSet, state: RolloutState | None, live: Snapshot,
                served: Mapping | None = None) -> GitopsStep:
    """The next state of a git-driven rollout, given the state committed, the live LWS and the
    live RolloutState object (`served`; None where the cluster does not serve the kind or holds
    none): it must be the committed document, and the LWS what that renders to."""
    namespace = live.namespace
    ours = [o for o in live.lws if o.managed_by_us(ds.name)]
    if state is None:
        if not ours:
            return GitopsStep(Outcome.ADVANCED, initial_state(ds, namespace),
                              ("created the rollout state: the set deploys at its revision and replicas",))
        return GitopsStep(Outcome.ADVANCED, adopt_state(ds, namespace, live),
                          ("adopted the live LeaderWorkerSets into a new rollout state",))
    expected = [o for o in render_with_state(ds, state) if o["kind"] == LWS]
    differences = served_differences(state, served) + synced_differences(expected, ours)
    if differences:
        return GitopsStep(Outcome.WAITING, state, tuple(differences), before=state)
    stale = [f"leaderworkerset/{o.name}: status is stale (observedGeneration {o.observed_generation} < "
             f"generation {o.generation})" for o in ours if o.stale]
    if stale:
        return GitopsStep(Outcome.WAITING, state, tuple(stale), before=state)

    # Services are not read (the step reads LWS only): the state's are those it renders.
    services = tuple(LiveService(SERVICE, o["metadata"]["name"], "", "", o["metadata"]["labels"], {}, "")
                     for o in render_with_state(ds, state) if o["kind"] == SERVICE)
    executor = StateExecutor(ds, _recorded_live(ds, state, live), replace(live, services=services))
    passed = run_pass(executor, ds, namespace)
    if passed.refusal:
        return GitopsStep(Outcome.REFUSED, state, passed.refusal, passed, before=state)
    after = executor.state()
    if passed.done:
        return GitopsStep(Outcome.ADVANCED, after, tuple(a.describe() for a in passed.done), passed, before=state)
    if not passed.complete:
        waiting = tuple(f"slice {r.slice}: {reason}" for r in passed.reconciliation.slices for reason in r.waiting_for)
        return GitopsStep(Outcome.WAITING, state, waiting or ("nothing to do yet",), passed, before=state)
    if after != state:  # a direct scale or slice change is live: record it
        return GitopsStep(Outcome.ADVANCED, after, ("records the replicas and slices now running",), passed,
                          before=state)
    return GitopsStep(Outcome.COMPLETE, state, (), passed, before=state)


def _recorded_live(ds: DisaggregatedSet, state: RolloutState, live: Snapshot) -> RolloutState:
    """What the state rendered implicitly, made explicit from the (synced) live LWS.

    Slices at rest record the replicas they run (the set scales directly), so a rollout
    starting later keeps them; old revisions record the initial-replicas they were given.
    """
    replicas = {s: {rev: dict(c) for rev, c in d.items()} for s, d in state.replicas.items() if s < ds.slices}
    initial = {s: {rev: dict(c) for rev, c in d.items()} for s, d in state.initial.items() if s < ds.slices}
    records = dict(state.revisions)
    for obj in live.lws:
        identity = obj.identity
        if not obj.managed_by_us(ds.name) or not identity.complete or identity.slice >= ds.slices:
            continue
        deployed = replicas.setdefault(identity.slice, {})
        if identity.revision == ds.revision and set(deployed) <= {ds.revision}:
            records.setdefault(ds.revision, record_from_set(ds))
            deployed.setdefault(ds.revision, {})[identity.role] = obj.replicas
        elif identity.revision != ds.revision and obj.initial_replicas is not None:
            initial.setdefault(identity.slice, {}).setdefault(identity.revision, {})[identity.role] = \
                obj.initial_replicas
    for table in (replicas, initial):
        for deployed in table.values():
            for revision, counts in deployed.items():
                deployed[revision] = {r: counts[r] for r in records[revision].role_names if r in counts}
    return RolloutState(state.name, state.namespace, records, replicas, initial)


def synced_differences(expected: list[dict], live: list[LiveLWS]) -> list[str]:
    """Where the live LWS differ from what the state renders to (Argo CD has not synced yet)."""
    by_name = {o.name: o for o in live}
    out = []
    for obj in expected:
        name = obj["metadata"]["name"]
        have = by_name.pop(name, None)
        if have is None:
            out.append(f"leaderworkerset/{name} is committed but not live yet (not synced)")
            continue
        want = obj["spec"].get("replicas")
        if want is not None and have.replicas != want:
            out.append(f"leaderworkerset/{name}: live replicas {have.replicas}, committed {want} (not synced)")
        want_initial = (obj["metadata"].get("annotations") or {}).get(naming.INITIAL_REPLICAS_ANNOTATION)
        if want_initial is not None and have.annotations.get(naming.INITIAL_REPLICAS_ANNOTATION) != want_initial:
            out.append(f"leaderworkerset/{name}: initial-replicas annotation not synced yet")
    out.extend(f"leaderworkerset/{name} is live but no longer committed (not pruned yet)" for name in sorted(by_name))
    return out
