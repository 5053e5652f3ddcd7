"""Rollouts through git: the next rollout state from the committed one and the live LWS.

About 520 lines on purpose: the one decision of a git step, from the committed state to the
state it writes and what its views read, kept together so that it is computed once (issue 30).

`gitops_step` is `rollout step` for git: the same `reconcile` over the live LWS, with a
`StateExecutor` landing the actions in the state instead of the cluster (one decision, two
executors). It refuses to move unless the cluster shows exactly what the state renders to.
Pure, but for `next_step`: it reads the cluster it is given and, with `--wait`, watches the LWS
between looks in the one wait loop every command waits in (`until_settled`).

A step decides once: the committed state rendered (and checked, design §8) once, one reconcile
pass over the live LWS, the state it writes checked against that pass, and what its views
read (`step_view`) computed with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api import naming
from kubectl_disagg.errors import UserError
from kubectl_disagg.core.api.model import DisaggregatedSet, Placement
from kubectl_disagg.core.delivery.position import Position, for_revision
from kubectl_disagg.core.api.naming import LWS_KIND as LWS, SERVICE_KIND as SERVICE
from kubectl_disagg.core.controller.planner import role_config
from kubectl_disagg.core.controller.reconcile import EXTERNAL_SEED_REPLICAS
from kubectl_disagg.core.controller.render import deep_copy
from kubectl_disagg.errors import Problem
from kubectl_disagg.gitops.executor import StateExecutor
from kubectl_disagg.gitops.rules import set_stepped_for, state_problems, upgraded
from kubectl_disagg.core.api.rollout_config import resolve_config
from kubectl_disagg.gitops.state import (Point, RevisionRecord, RoleRecord, SteppedRole, RolloutState, SteppedSet,
                                         record_from_set, record_revision)
from kubectl_disagg.core.controller.snapshot import LiveLWS, LiveService, Snapshot
from kubectl_disagg.gitops.render import handing_back, render_with_state, rendered
from kubectl_disagg.gitops.served import served_differences
from kubectl_disagg.gitops.step_view import StepView, step_view
from kubectl_disagg.gitops.waves import (RENDER_NOW, gained_at_stable, scaled_down_in_flight, state_progress,
                                         with_position)
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.wait import NEVER, Deadline, until_settled
from kubectl_disagg.rollout.pacer import Analyze, Paced
from kubectl_disagg.rollout.stepper import Pass, run_pass


# --- the state a first step writes ------------------------------------------------------------


def initial_state(ds: DisaggregatedSet, namespace: str) -> RolloutState:
    """Nothing deployed yet: the set at its revision and replicas in every slice. Under a
    RolloutPolicy, with the position the cluster's RolloutState records for a first deploy once
    it runs: the rollout to the set's revision, stable at that revision (nothing to roll back to)."""
    counts = {role.name: EXTERNAL_SEED_REPLICAS if role.external else role.replicas for role in ds.roles}
    return RolloutState(ds.name, namespace, {ds.revision: record_from_set(ds)},
                        {s: {ds.revision: dict(counts)} for s in range(ds.slices)}, {},
                        SteppedSet.of(ds), {s: Point({}, {}) for s in range(ds.slices)},
                        position=None if ds.policy is None else for_revision(None, ds.revision, ds.revision))


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
    for deployed in replicas.values():  # roles in their record's order
        for revision, counts in deployed.items():
            deployed[revision] = {r: counts[r] for r in records[revision].role_names if r in counts}
    # How the live objects got here is not known: the state starts from them (its point is checked).
    previous = {s: Point({rev: dict(c) for rev, c in d.items()}, {rev: dict(c) for rev, c in initial.get(s, {}).items()})
                for s, d in replicas.items()}
    return RolloutState(ds.name, namespace, records, replicas, initial, _adopted_stepped_for(ds, records, replicas, ours),
                        previous)


def _adopted_stepped_for(ds: DisaggregatedSet, records: Mapping[str, RevisionRecord], replicas: Mapping[int, Mapping],
                    ours: list[LiveLWS]) -> SteppedSet:
    """The set as the step that left the live objects saw it: the set itself when its revision
    runs; else (its template changed in git since) the newest live revision, in the slices that
    run, sized as the set sizes its roles (a role it no longer has: as most of it runs). The
    state records what runs, and the step after it starts the rollout to the set's revision."""
    if ds.revision in records or not ours:
        return SteppedSet.of(ds)
    newest = ours[-1].identity.revision  # the revision the live objects were last rolled to
    of_set = {role.name: role for role in SteppedSet.of(ds).roles}
    roles = []
    for role in records[newest].roles:
        if role.name in of_set:
            roles.append(of_set[role.name])
            continue
        most = max(sum(counts.get(role.name, 0) for counts in deployed.values()) for deployed in replicas.values())
        config = resolve_config(None, most)
        roles.append(SteppedRole(role.name, most, config.surge, config.unavailable))
    return SteppedSet(newest, max(replicas) + 1, tuple(roles))


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
        # What render injects, and what the sync stamps (Argo CD's tracking, the plugin's
        # source revision), is not the role's own metadata: recording it would make noise.
        system = {*naming.lws_labels(ds.name, 0, revision, role_name), naming.ARGOCD_TRACKING_LABEL}
        labels = {k: v for k, v in (metadata.get("labels") or {}).items()
                  if k not in system and not k.startswith(naming.ARGOCD_PREFIX)}
        annotations = {k: v for k, v in (metadata.get("annotations") or {}).items()
                       if k not in (naming.INITIAL_REPLICAS_ANNOTATION, naming.SOURCE_REVISION_ANNOTATION)
                       and not k.startswith(("kubectl.kubernetes.io/", naming.ARGOCD_PREFIX))}
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


# --- one step ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GitopsStep:
    outcome: Outcome
    state: RolloutState | None  # the state to write (ADVANCED), else the one read
    reasons: tuple[str, ...] = ()  # why it waits or refuses, or what the new state does
    passed: Pass | None = None  # reconcile's pass, when one ran
    before: RolloutState | None = None
    snapshot: Snapshot | None = None  # the live LWS it was decided on (set by `next_step`)
    view: StepView = StepView()  # what its views read (the pull request), computed with it


def next_step(cluster: Any, ds: DisaggregatedSet, state: RolloutState | None, namespace: str, *, wait: bool = False,
              deadline: Deadline = NEVER, analyze: Analyze | None = None,
              clock: Clock = SYSTEM_CLOCK) -> tuple[GitopsStep, bool]:
    """The next step of a git-driven rollout from the live LWS (and RolloutState object) of
    `cluster`; with `wait`, the first that does not wait, watching the LWS between looks until
    `deadline`; and whether the deadline came first. Nothing lands in the
    cluster, so no Lease is held: a state to commit is as far as git goes until it is merged.
    `analyze` measures an analysis gate the step reaches (see `gitops_step`); each look is
    judged at `clock`'s time (a gate's soak)."""
    def look() -> GitopsStep:
        live = cluster.snapshot(ds.name, namespace, services=False)
        served = cluster.rollout_state(ds.name, namespace) if state is not None else None
        return replace(gitops_step(ds, state, live, served, now=clock.now(), analyze=analyze), snapshot=live)

    def watch(seen: GitopsStep, seconds: float) -> bool:
        return cluster.wait_for_change(ds.name, namespace, seen.snapshot.lws_resource_version, seconds)

    if wait and deadline.expired():  # the deadline had passed before the first look
        return look(), True
    step = None
    for step in until_settled(look, lambda seen: not wait or seen.outcome != Outcome.WAITING, watch, deadline,  # noqa: B007 (read after the loop)
                              rewatch=True):
        pass
    return step, wait and step.outcome == Outcome.WAITING


def gitops_step(ds: DisaggregatedSet, state: RolloutState | None, live: Snapshot,
                served: Mapping | None = None, now=None, analyze=None, *,
                committed_render: list[dict] | None = None) -> GitopsStep:
    """The next state of a git-driven rollout, given the state committed, the live LWS and the
    live RolloutState object (`served`; None where the cluster does not serve the kind or holds
    none): it must be the committed document, and the LWS what that renders to (for a set that
    gained slices, what the cluster may run instead: `_synced_renders`). A format 1 state is
    read as its own previous point, which the live LWS must show; its next step writes format 2.
    With a RolloutPolicy, `now` (a datetime) is what its gates are judged at (gitops/waves.py), and
    `analyze` (rollout/analysis.py's GateAnalysis) measures an analysis gate without a verdict
    before the state is decided: the state written carries the verdict, and opens the next wave
    or records the abort (or the pause) the verdict calls for. `committed_render`: what
    `render_with_state(ds, state)` returned, where the caller has it (`rollout status --gitops`).

    One pass, decided once: the committed state rendered (and so checked, design §8) once, one
    reconcile over the live LWS, and the state it writes checked against that pass (`_ran`);
    the state writer, the views (`view`) and `rollout status --gitops` all read this result."""
    step = _decided(ds, state, live, served, now, analyze, committed_render)
    return replace(step, view=step_view(ds, step.before, step.state, step.passed))


def _decided(ds: DisaggregatedSet, state: RolloutState | None, live: Snapshot, served: Mapping | None,
             now, analyze, committed_render: list[dict] | None) -> GitopsStep:
    namespace = live.namespace
    ours = [o for o in live.lws if o.managed_by_us(ds.name)]
    if state is None:
        if not ours:
            return _checked(ds, GitopsStep(Outcome.ADVANCED, initial_state(ds, namespace),
                                           ("created the rollout state: the set deploys at its revision and replicas",)))
        return _checked(ds, GitopsStep(Outcome.ADVANCED, adopt_state(ds, namespace, live),
                                       ("adopted the live LeaderWorkerSets into a new rollout state",)))
    read, committed = state, upgraded(ds, state)  # a format 1 state: checked against the live LWS here
    candidates = ([(ds, committed, committed_render)] if committed_render is not None and read is committed
                  else _synced_renders(ds, committed, live))
    synced, state, objects = next((c for c in candidates if not synced_differences(_lws(c[2]), ours)), candidates[0])
    expected = _lws(objects)
    # (a state never synced before a commit render refuses: its object is not live either)
    differences = (served_differences(read, served) if state is committed else []) + \
        synced_differences(expected, ours)
    if differences:
        return GitopsStep(Outcome.WAITING, state, tuple(differences), before=state)
    stale = [f"leaderworkerset/{o.name}: status is stale (observedGeneration {o.observed_generation} < "
             f"generation {o.generation})" for o in ours if o.stale]
    if stale:
        return GitopsStep(Outcome.WAITING, state, tuple(stale), before=state)

    # Services are not read (the step reads LWS only): the state's are those it renders.
    services = tuple(LiveService(SERVICE, o["metadata"]["name"], "", "", o["metadata"]["labels"], {}, "")
                     for o in objects if o["kind"] == SERVICE)
    recorded = _recorded_live(ds, state, live, autoscaled(expected))
    executor = StateExecutor(ds, recorded, replace(live, services=services))
    paced = None if ds.policy is None else Paced(state.position, now or RENDER_NOW, analyze=analyze,
                                                 proven=partial(state_progress, ds, state))
    passed = run_pass(executor, ds, namespace, **({} if paced is None else {"admit": paced.admit}))
    if passed.refusal:
        return GitopsStep(Outcome.REFUSED, state, passed.refusal, passed, before=state)
    after = executor.state()
    # What the next render checks the step against (design §8): the set it was decided for, and
    # the point each slice stood at before it.
    # (after an abort the step rolled toward the stable revision: that is the set it was decided for)
    toward = ds if paced is None or paced.passage is None else paced.passage.reconciled
    after = replace(after, stepped_for=SteppedSet.of(toward), position=_keeping(ds, state, paced),
                    previous={s: Point(recorded.replicas.get(s, {}), recorded.initial.get(s, {}))
                              for s in after.replicas})

    # Each commit toward one revision is counted, so pull requests number the whole rollout
    # (a rollout toward another revision, or a rollback, starts again at 1).
    same = state.stepped_for is not None and state.stepped_for.revision == toward.revision
    commits = state.commits + 1 if same else 1

    def checked(outcome: GitopsStep) -> GitopsStep:
        outcome = replace(outcome, state=replace(outcome.state, commits=commits))
        return _checked(ds, outcome, _ran(ds, toward, outcome.state, passed))

    if paced is not None and passed.stopped and not passed.done:
        if paced.moved():  # a wave completed, a gate reached: recorded (a soak is timed from it)
            return checked(GitopsStep(Outcome.ADVANCED, with_position(ds, state, _keeping(ds, state, paced)),
                                      ("records where the rollout stands: " + "; ".join(passed.stopped),),
                                      passed, before=state))
        return GitopsStep(Outcome.HELD, state, passed.stopped, passed, before=state)
    if passed.done:
        return checked(GitopsStep(Outcome.ADVANCED, after, tuple(a.describe() for a in passed.done), passed,
                                  before=state))
    if not passed.complete:
        waiting = tuple(f"slice {r.slice}: {reason}" for r in passed.reconciliation.slices for reason in r.waiting_for)
        return GitopsStep(Outcome.WAITING, state, waiting or ("nothing to do yet",), passed, before=state)
    if _deployed(after) != _deployed(state):  # a direct scale or slice change is live: record it
        return checked(GitopsStep(Outcome.ADVANCED, after, ("records the replicas and slices now running",),
                                  passed, before=state))
    handed = [s for s, d in state.replicas.items() if list(d) == [ds.revision] and handing_back(ds, state, s)]
    if handed:  # the state sized an External role until now: hand it back (its record says External)
        back = replace(after, revisions={**after.revisions, ds.revision: _external_as_set(
            after.revisions[ds.revision], ds)}, previous={**after.previous, **{
            s: Point(after.replicas.get(s, {}), after.initial.get(s, {})) for s in handed}})
        return checked(GitopsStep(Outcome.ADVANCED, back, (
            "hands the size of the External roles back to their autoscaler",), passed, before=state))
    if read is not committed:  # nothing left to roll, but render refuses format 1: write format 2
        return checked(GitopsStep(Outcome.ADVANCED, after, ("rewrites the rollout state in format 2",),
                                  passed, before=state))
    return GitopsStep(Outcome.COMPLETE, state, (), passed, before=state)


def _synced_renders(ds: DisaggregatedSet, state: RolloutState, live: Snapshot) -> list[tuple]:
    """[(set, state, its objects)] whose render the cluster may run: `ds` and the committed state.
    For a set that gained slices or changed its targets mid-rollout, which render refuses until
    a step records them (design §8), the sync of that commit never comes: the set on the slices
    the state records, or the set its last step saw, each with the committed state or, when
    that was not synced before the refused commit, the points its last step started from (a
    revision it removed read back from its live LWS, checked as adoption checks it)."""
    try:
        return [(ds, state, render_with_state(ds, state))]
    except UserError as refused:
        error = refused
    then, _ = set_stepped_for(ds, state, state.stepped_for)
    sets = [replace(ds, slices=min(ds.slices, state.stepped_for.slices))] + ([then] if then is not None else [])
    candidates = []
    for synced in sets:
        try:
            candidates.append((synced, state, render_with_state(synced, state)))
        except UserError:
            continue
    if not candidates:
        raise error
    ours = sorted((o for o in live.lws if o.managed_by_us(ds.name) and o.identity.complete),
                  key=lambda o: (o.created, o.name))
    try:
        records = {**state.revisions, **{rev: _record_from_live(ds, rev, ours, live)
                                         for p in state.previous.values() for rev in p.replicas
                                         if rev not in state.revisions}}
    except UserError:
        return candidates  # a revision not live as recorded: not what runs
    before = replace(state, revisions=records, replicas={s: p.replicas for s, p in state.previous.items()},
                     initial={s: p.initial for s, p in state.previous.items() if p.initial})
    # (compared with the live LWS, which are the check)
    return candidates + [(synced, before, rendered(synced, before)) for synced in sets]


def _lws(objects: list[dict]) -> list[dict]:
    return [o for o in objects if o["kind"] == LWS]


def _external_as_set(record: RevisionRecord, ds: DisaggregatedSet) -> RevisionRecord:
    """The record with each role's External mark as the set has it now (the mark is no part of
    the revision: a role can become External at rest)."""
    external = {role.name: role.external for role in ds.roles}
    return replace(record, roles=tuple(replace(role, external=external.get(role.name, role.external))
                                       for role in record.roles))


def directory_steps(steps: list[tuple[DisaggregatedSet, GitopsStep]]) -> list[GitopsStep]:
    """The steps of a directory's sets as they are written: together or not at all.

    One pull request carries a directory's step, so while some set waits (or is refused) no
    set's step is written, and a set whose step was ready waits for it, saying so: exit codes
    and what is written agree for every mix of outcomes (docs/gitops.md).
    """
    holding = [ds.name for ds, step in steps if step.outcome in (Outcome.WAITING, Outcome.REFUSED)]
    if not holding:
        return [step for _, step in steps]
    names = ", ".join(f"disaggregatedset/{name}" for name in holding)
    return [replace(step, outcome=Outcome.WAITING, state=step.before if step.before is not None else step.state,
                    reasons=(f"its next step is ready, but {names} cannot step yet: the sets of a directory step "
                             "together (one pull request), so nothing is written",))
            if step.outcome == Outcome.ADVANCED else step for _, step in steps]


def _deployed(state: RolloutState) -> tuple:
    return state.revisions, state.replicas, state.initial


def _checked(ds: DisaggregatedSet, step: GitopsStep, ran: Mapping[int, Point] | None = None) -> GitopsStep:
    """The step, unless the state it would write breaks a rule of design §8 (then nothing is
    written: render would refuse it, so a bot never commits a state that cannot sync). `ran`:
    the pass's own outcome where it stands for rule 4's replay (`_ran`)."""
    problems: list[Problem] = state_problems(ds, step.state, ran, gained_at_stable(ds, step.state)[1])
    if not problems:
        return step
    return GitopsStep(Outcome.REFUSED, step.before, tuple(f"the next state would break a rule of design §8: "
                                                          f"{p.path}: {p.message}" for p in problems),
                      step.passed, before=step.before)


def _ran(ds: DisaggregatedSet, toward: DisaggregatedSet, state: RolloutState, passed: Pass) -> dict[int, Point]:
    """Slice → the point the pass made of it, for the slices where the pass read exactly what
    rule 4's replay of `state` reads (design §8), so the check takes the pass for the replay: the
    set the state's target names decides as the set the pass reconciled (`toward`: revision,
    slices, each role's replicas, External mark and budgets), no RoleScaler sizes a role, and
    the slice's live LWS are its previous point (replicas, initial-replicas) with one old
    revision at most (reconcile drains several newest first, by creation, which the replay
    reads from the state's order). Reconcile reads readiness only to wait: a slice it moved
    was settled, as the replay takes every slice. Any other slice is replayed by the check."""
    then, _ = set_stepped_for(ds, state, state.stepped_for) if state.stepped_for is not None else (None, "")
    if then is None or _decides(then) != _decides(toward) or passed.snapshot.scalers:
        return {}
    live: dict[int, dict[tuple[str, str], tuple[int, int]]] = {}
    for o in passed.snapshot.lws:
        if o.identity.complete:
            key = (o.identity.revision, o.identity.role)
            seen = live.setdefault(o.identity.slice, {})
            seen[key] = (-1, -1) if key in seen or not o.managed_by_us(ds.name) else \
                (o.replicas, o.initial_replicas if o.initial_replicas is not None else o.replicas)
    ran = {}
    for slice_index, before in (state.previous or {}).items():
        point = {(rev, role): (n, before.initial.get(rev, {}).get(role, n))
                 for rev, counts in before.replicas.items() for role, n in counts.items()}
        if live.get(slice_index, {}) == point and len(set(before.replicas) - {then.revision}) <= 1:
            ran[slice_index] = Point(state.replicas.get(slice_index, {}), state.initial.get(slice_index, {}))
    return ran


def _decides(ds: DisaggregatedSet) -> tuple:
    """What reconcile's decision reads of a set, but for the LWS it reads."""
    return ds.name, ds.revision, ds.slices, tuple((r.name, r.replicas, r.external, role_config(r)) for r in ds.roles)


def autoscaled(objects: list[dict]) -> set[str]:
    """The LWS whose size the autoscaler owns in this render (not the state's to compare).
    A `handing-back` LWS is not among them: Argo CD still applies the state's count to it."""
    return {o["metadata"]["name"] for o in objects
            if (o["metadata"].get("annotations") or {}).get(naming.REPLICAS_OWNER_ANNOTATION)
            == naming.REPLICAS_OWNER_AUTOSCALER}


def _recorded_live(ds: DisaggregatedSet, state: RolloutState, live: Snapshot,
                   sized_by_autoscaler: set[str] = frozenset()) -> RolloutState:
    """What the state rendered implicitly, made explicit from the (synced) live LWS.

    Slices at rest record the replicas they run (the set scales directly), so a rollout
    starting later keeps them; a rollout render started records the set's revision at 0; old
    revisions record the initial-replicas they were given. This is the point the step starts
    from, recorded as the state's `previous`.
    """
    replicas = {s: {rev: dict(c) for rev, c in d.items()} for s, d in state.replicas.items() if s < ds.slices}
    # Old revisions start from what reconcile reads live: their annotation, else their replicas.
    initial: dict[int, dict[str, dict[str, int]]] = {}
    records = dict(state.revisions)
    known = {s: set(d) for s, d in replicas.items()}
    for obj in live.lws:
        identity = obj.identity
        if not obj.managed_by_us(ds.name) or not identity.complete or identity.slice >= ds.slices:
            continue
        deployed = replicas.setdefault(identity.slice, {})
        recorded = known.get(identity.slice, set())
        at_rest = recorded <= {ds.revision}
        if obj.name in sized_by_autoscaler:
            # An autoscaled size: recorded when a rollout starts from it; at rest it stays the
            # autoscaler's (no commit just because the autoscaler moved).
            if not at_rest or ds.revision not in deployed or identity.role not in deployed[ds.revision]:
                records.setdefault(identity.revision, record_from_set(ds))
                deployed.setdefault(identity.revision, {})[identity.role] = obj.replicas
            continue
        # At rest, or a rollout render started (the set's revision at 0 beside the recorded ones).
        if identity.revision == ds.revision and (at_rest or ds.revision not in recorded):
            records.setdefault(ds.revision, record_from_set(ds))
            deployed.setdefault(ds.revision, {})[identity.role] = obj.replicas
            continue
        # A slice at one other revision alone (render sizes a held one from the set: design §10.1),
        # or one the state does not record (a slice gained while held: at the stable revision).
        if recorded <= {identity.revision} and identity.revision in records:
            deployed.setdefault(identity.revision, {})[identity.role] = obj.replicas
        if obj.initial_replicas is not None:
            initial.setdefault(identity.slice, {}).setdefault(identity.revision, {})[identity.role] = \
                obj.initial_replicas
    for slice_index, deployed in initial.items():
        for revision, counts in deployed.items():
            # A role without the annotation (an autoscaled size at the start) starts from what runs (design §4).
            for role, n in replicas.get(slice_index, {}).get(revision, {}).items():
                counts.setdefault(role, n)
    # (old revisions: the set's own revision never has initial-replicas)
    initial = {s: {rev: c for rev, c in d.items() if rev != ds.revision} for s, d in initial.items()}
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
        if name in autoscaled([obj]):
            want = None  # the autoscaler's: any size is synced
        owner = (obj["metadata"].get("annotations") or {}).get(naming.REPLICAS_OWNER_ANNOTATION)
        if owner is not None and have.annotations.get(naming.REPLICAS_OWNER_ANNOTATION) != owner:
            # `handing-back` must be live before a state says `autoscaler` (docs/gitops.md).
            out.append(f"leaderworkerset/{name}: {naming.REPLICAS_OWNER_ANNOTATION} annotation not synced yet")
        if want is not None and have.replicas != want:
            out.append(f"leaderworkerset/{name}: live replicas {have.replicas}, committed {want} (not synced)")
        want_initial = (obj["metadata"].get("annotations") or {}).get(naming.INITIAL_REPLICAS_ANNOTATION)
        if want_initial is not None and have.annotations.get(naming.INITIAL_REPLICAS_ANNOTATION) != want_initial:
            out.append(f"leaderworkerset/{name}: initial-replicas annotation not synced yet")
    out.extend(f"leaderworkerset/{name} is live but no longer committed (not pruned yet)" for name in sorted(by_name))
    return out


def _keeping(ds: DisaggregatedSet, state: RolloutState, paced: Paced | None) -> Position | None:
    """The position the step writes: the pacer's, with the slices a scale-down left in flight
    outside the waves listed in `found` (design §10.2)."""
    if paced is None:
        return state.position
    kept = scaled_down_in_flight(ds, state)
    position = paced.position
    if not kept or position is None:
        return position
    return replace(position, found=tuple(sorted({*position.found, *kept})))
