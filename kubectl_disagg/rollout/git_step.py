"""Rollouts through git: the next rollout state from the committed one and the live LWS.

`gitops_step` is `rollout step` for git: the same `reconcile` over the live LWS, with a
`StateExecutor` landing the actions in the state instead of the cluster (one decision, two
executors). It refuses to move unless the cluster shows exactly what the state renders to.
Pure, but for `looks`: it reads the cluster it is given and, with `--wait`, watches the LWS
between looks in the one wait loop every command waits in (`until_settled`).

`SetStep` is one set's step as the git store (rollout/git_run.py) keeps it for its report.

A step decides once: the committed state rendered (and checked, design §8) once, one reconcile
pass over the live LWS, the state it writes checked against that pass, and what its views
read (`step_view`) computed with it. What is git's alone (the first state, the renders the
cluster may run, "synced?") is gitops/step.py's, below the rollout (design §9.8).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import partial
import datetime
from typing import Any

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.api.naming import SERVICE_KIND as SERVICE
from kubectl_disagg.core.controller.planner import role_config
from kubectl_disagg.core.controller.snapshot import LiveService, Snapshot
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.errors import Problem
from kubectl_disagg.exits import StepExit
from kubectl_disagg.gitops.executor import StateExecutor
from kubectl_disagg.gitops.history import WrittenBack
from kubectl_disagg.gitops.render import handing_back
from kubectl_disagg.gitops.rules import set_stepped_for, state_problems, upgraded
from kubectl_disagg.gitops.served import served_differences
from kubectl_disagg.gitops.state import Point, RolloutState, SteppedSet
from kubectl_disagg.gitops.step import (adopt_state, autoscaled, external_as_set, initial_state, lws_objects,
                                        recorded_live, synced_differences, synced_renders)
from kubectl_disagg.gitops.step_view import StepView, step_view
from kubectl_disagg.gitops.waves import RENDER_NOW, gained_at_stable, scaled_down_in_flight, state_progress, with_position
from kubectl_disagg.kube.seam import ClusterReads
from kubectl_disagg.rollout.outcome import STEP_EXIT
from kubectl_disagg.rollout.pacer import Analyze, Paced
from kubectl_disagg.rollout.stepper import Look, Pass, pass_outcome, run_pass
from kubectl_disagg.wait import NEVER, Deadline, until_settled


@dataclass(frozen=True)
class GitopsStep:
    outcome: Outcome
    state: RolloutState | None  # the state to write (ADVANCED), else the one read
    reasons: tuple[str, ...] = ()  # why it waits or refuses, or what the new state does
    passed: Pass | None = None  # reconcile's pass, when one ran
    before: RolloutState | None = None
    snapshot: Snapshot | None = None  # the live LWS it was decided on (set by `looks`)
    view: StepView = StepView()  # what its views read (the pull request), computed with it


@dataclass(frozen=True)
class SetStep:
    """One set's step through git (the git store's `looks`, its last): where its state is kept,
    the step, and whether --wait gave up (the last look unsettled)."""

    ds: DisaggregatedSet
    namespace: str
    path: str
    step: GitopsStep
    timed_out: bool = False
    read: bytes | None = None  # what the state file held when the step read it (None: no file)
    returning: WrittenBack | None = None  # who wrote the set's revision back (`history.going_back`): a rollback

    @property
    def outcome(self) -> Outcome:
        """The step's outcome, or TIMEOUT where --wait gave up."""
        return Outcome.TIMEOUT if self.timed_out else self.step.outcome

    @property
    def code(self) -> StepExit:
        return STEP_EXIT[self.outcome]


def looks(cluster: ClusterReads, ds: DisaggregatedSet, state: RolloutState | None, namespace: str, *,
          wait: bool = False, deadline: Deadline = NEVER, analyze: Analyze | None = None,
          clock: Clock = SYSTEM_CLOCK) -> Iterator[Look[GitopsStep]]:
    """The looks of a git-driven step at the live LWS (and RolloutState object) of `cluster`,
    each the step it decides (`kept`) and its outcome: one, or with `wait` until one does not
    wait, watching the LWS between looks until `deadline` (a look still waiting then is
    unsettled: the wait ran out, as it has where the deadline had passed before the first look).
    Nothing lands in the cluster, so no Lease is held: a state to commit is as far as git goes
    until it is merged. `analyze` measures an analysis gate the step reaches (see
    `gitops_step`); each look is judged at `clock`'s time (a gate's soak)."""
    served_version: list[str | None] = [None]  # the RolloutState's resourceVersion the latest look read

    def look() -> GitopsStep:
        live = cluster.snapshot(ds.name, namespace, services=False)
        served = cluster.rollout_state(ds.name, namespace) if state is not None else None
        if state is not None:
            served_version[0] = str(((served or {}).get("metadata") or {}).get("resourceVersion") or "")
        return replace(gitops_step(ds, state, live, served, now=clock.now(), analyze=analyze), snapshot=live)

    def watch(seen: GitopsStep, seconds: float) -> bool:
        # The RolloutState too: a sync may write it last, after every LWS (a committed state's look
        # compares it), and a watch of the LWS alone would sleep through that until the deadline.
        assert seen.snapshot is not None  # every look carries the snapshot it was decided on
        return cluster.wait_for_change(ds.name, namespace, seen.snapshot.lws_resource_version, seconds,
                                       state_version=served_version[0])

    def settled(seen: GitopsStep) -> bool:
        return not wait or seen.outcome != Outcome.WAITING

    def as_look(seen: GitopsStep, settles: bool) -> Look[GitopsStep]:
        return Look(seen.outcome, settled=settles, event=seen.passed, kept=seen)

    if wait and deadline.expired():  # the deadline had passed before the first look
        yield as_look(look(), False)
        return
    for seen in until_settled(look, settled, watch, deadline, rewatch=True):
        yield as_look(seen, settled(seen))


def gitops_step(ds: DisaggregatedSet, state: RolloutState | None, live: Snapshot,
                served: Mapping[str, Any] | None = None, now: datetime.datetime | None = None,
                analyze: Analyze | None = None, *,
                committed_render: list[dict[str, Any]] | None = None) -> GitopsStep:
    """The next state of a git-driven rollout, given the state committed, the live LWS and the
    live RolloutState object (`served`; None where the cluster does not serve the kind or holds
    none): it must be the committed document, and the LWS what that renders to (for a set that
    gained slices, what the cluster may run instead: `synced_renders`). A format 1 state is
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


def _decided(ds: DisaggregatedSet, state: RolloutState | None, live: Snapshot, served: Mapping[str, Any] | None,
             now: datetime.datetime | None, analyze: Analyze | None,
             committed_render: list[dict[str, Any]] | None) -> GitopsStep:
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
                  else synced_renders(ds, committed, live))
    synced, state, objects = next((c for c in candidates if not synced_differences(lws_objects(c[2]), ours)), candidates[0])
    expected = lws_objects(objects)
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
    recorded = recorded_live(ds, state, live, autoscaled(expected))
    executor = StateExecutor(ds, recorded, replace(live, services=services))
    paced = None if ds.policy is None else Paced(state.position, now or RENDER_NOW, analyze=analyze,
                                                 proven=partial(state_progress, ds, state))
    passed = run_pass(executor, ds, namespace, admit=None if paced is None else paced.admit)
    verdict = pass_outcome(passed)  # what the pass alone comes to, as in the cluster; git's state refines it
    if verdict == Outcome.REFUSED:
        return GitopsStep(Outcome.REFUSED, state, passed.refusal, passed, before=state)
    after = executor.state()
    # What the next render checks the step against (design §8): the set it was decided for, and
    # the point each slice stood at before it.
    # (after an abort the step rolled toward the stable revision: that is the set it was decided for)
    toward = ds if paced is None or paced.passage is None else paced.passage.reconciled or ds
    after = replace(after, stepped_for=SteppedSet.of(toward), position=_keeping(ds, state, paced),
                    previous={s: Point(recorded.replicas.get(s, {}), recorded.initial.get(s, {}))
                              for s in after.replicas})

    # Each commit toward one revision is counted, so pull requests number the whole rollout
    # (a rollout toward another revision, or a rollback, starts again at 1).
    same = state.stepped_for is not None and state.stepped_for.revision == toward.revision
    commits = state.commits + 1 if same else 1

    def checked(outcome: GitopsStep) -> GitopsStep:
        assert outcome.state is not None  # a step that advances writes a state
        written = replace(outcome.state, commits=commits)
        return _checked(ds, replace(outcome, state=written), _ran(ds, toward, written, passed))

    if verdict == Outcome.HELD:
        if paced is not None and paced.moved():  # a wave completed, a gate reached: recorded (a soak is timed from it)
            return checked(GitopsStep(Outcome.ADVANCED, with_position(ds, state, _keeping(ds, state, paced)),
                                      ("records where the rollout stands: " + "; ".join(passed.stopped),),
                                      passed, before=state))
        return GitopsStep(Outcome.HELD, state, passed.stopped, passed, before=state)
    if verdict == Outcome.ADVANCED:
        return checked(GitopsStep(Outcome.ADVANCED, after, tuple(a.describe() for a in passed.done), passed,
                                  before=state))
    if verdict == Outcome.WAITING:
        waiting = tuple(f"slice {r.slice}: {reason}" for r in passed.reconciliation.slices for reason in r.waiting_for)
        return GitopsStep(Outcome.WAITING, state, waiting or ("nothing to do yet",), passed, before=state)
    # Nothing left to roll (COMPLETE), but the state may still have something to record.
    if _deployed(after) != _deployed(state):  # a direct scale or slice change is live: record it
        return checked(GitopsStep(Outcome.ADVANCED, after, ("records the replicas and slices now running",),
                                  passed, before=state))
    handed = [s for s, d in state.replicas.items() if list(d) == [ds.revision] and handing_back(ds, state, s)]
    if handed:  # the state sized an External role until now: hand it back (its record says External)
        back = replace(after, revisions={**after.revisions, ds.revision: external_as_set(
            after.revisions[ds.revision], ds)}, previous={**(after.previous or {}), **{
            s: Point(after.replicas.get(s, {}), after.initial.get(s, {})) for s in handed}})
        return checked(GitopsStep(Outcome.ADVANCED, back, (
            "hands the size of the External roles back to their autoscaler",), passed, before=state))
    if read is not committed:  # nothing left to roll, but render refuses format 1: write format 2
        return checked(GitopsStep(Outcome.ADVANCED, after, ("rewrites the rollout state in format 2",),
                                  passed, before=state))
    return GitopsStep(Outcome.COMPLETE, state, (), passed, before=state)


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


def _deployed(state: RolloutState) -> tuple[object, ...]:
    return state.revisions, state.replicas, state.initial


def _checked(ds: DisaggregatedSet, step: GitopsStep, ran: Mapping[int, Point] | None = None) -> GitopsStep:
    """The step, unless the state it would write breaks a rule of design §8 (then nothing is
    written: render would refuse it, so a bot never commits a state that cannot sync). `ran`:
    the pass's own outcome where it stands for rule 4's replay (`_ran`)."""
    assert step.state is not None  # checked: a step that writes a state
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
        identity = o.identity
        if identity.slice is not None and identity.revision is not None and identity.role is not None:  # complete
            key = (identity.revision, identity.role)
            seen = live.setdefault(identity.slice, {})
            seen[key] = (-1, -1) if key in seen or not o.managed_by_us(ds.name) else \
                (o.replicas, o.initial_replicas if o.initial_replicas is not None else o.replicas)
    ran = {}
    for slice_index, before in (state.previous or {}).items():
        point = {(rev, role): (n, before.initial.get(rev, {}).get(role, n))
                 for rev, counts in before.replicas.items() for role, n in counts.items()}
        if live.get(slice_index, {}) == point and len(set(before.replicas) - {then.revision}) <= 1:
            ran[slice_index] = Point(state.replicas.get(slice_index, {}), state.initial.get(slice_index, {}))
    return ran


def _decides(ds: DisaggregatedSet) -> tuple[object, ...]:
    """What reconcile's decision reads of a set, but for the LWS it reads."""
    return ds.name, ds.revision, ds.slices, tuple((r.name, r.replicas, r.external, role_config(r)) for r in ds.roles)


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
