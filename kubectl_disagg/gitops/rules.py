"""Which rollout states may render (design §8): only those the planner could have written. Pure.

About 480 lines on purpose: the five rules below are one check of one state, each with its
message; rule 3's bounds read the targets as rule 1 admits them (a scale since the last step,
design §10.1) and widen only by rule 4's replay, so split they would explain themselves only
through each other.

A state in git is an input people edit and merge, so `render` and `cmp generate` check it whole
before rendering from it, and `rollout step --gitops` checks every state it writes the same way:

1. slices: the state records exactly the slices `0..target.slices-1`, each with the revision its
   last step rolled to (`target.revision`), and every slice the set has: a slice the set gained
   is recorded by a step before it renders (the state alone cannot tell it from a recorded
   slice deleted by hand, which would render at full size and replace what runs there);
   And mid-rollout the targets are the set's: `target.roles` equals them (External roles aside),
   so a change of the set's replicas or budgets is recorded by a step before it renders;
2. groups: a revision runs all its roles or none;
3. bounds: per role, old + new stays within max(target + max(maxSurge, 1), initial), and a role
   that started at or above its target keeps target − maxUnavailable (the planner's floor; with
   two old revisions or more, reconcile's coordinated drain takes a group whole, which may cut
   below it for a step, so there rule 4 alone holds the state to what the stepper does). Only
   a slice that rule 4 sees take a step widens them, to the point it came from (targets may
   have changed since; a target lowered mid-rollout leaves new above it, and the planner never
   shrinks new): a `previous` equal to the counts widens nothing;
4. one step: each slice's counts are its `previous` point, or what one reconcile pass makes of
   that point (one planner step, the start of a rollout, the removal of a drained revision, a
   scale or a slice change), replayed here with the planner for the recorded `target`;
5. the position: under a RolloutPolicy, every analysis verdict the position records is one a
   run wrote for that wave's gate (`core.delivery.analysis.recorded_verdict_problems`: the policy's
   checks, each measurement judged again from its values, plausible times), and its wave and
   gates are ones the planner could have written (`core.delivery.policy.position_problems`: every wave
   before the one reached completed and through its gates, each gate passed the way that gate
   passes), so no edit opens a wave.

The replay runs reconcile (core/controller/reconcile.py, the stepper's own decision) over the previous
point as if it were live and settled, and lands its actions with the `StateExecutor`, exactly
as `gitops_step` did when it wrote the state (which checks that state against the pass it ran,
`ran`, where that pass read exactly what the replay would: the pass is not computed twice).
Only the slices a state moved are replayed, and none when it moved none. A format 1 state has no `previous`, so rule 4
cannot hold it: it never renders, and the step (which reads its point from the live LWS,
`upgraded`) rewrites it in format 2.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import replace

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet, Role
from kubectl_disagg.core.controller.planner import START_CONFIG, role_target
from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.api.rollout_config import IntOrPercentError, RolloutConfig, resolve_config
from kubectl_disagg.core.controller.snapshot import LiveLWS, Snapshot
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.gitops.executor import StateExecutor
from kubectl_disagg.gitops.state import Point, SteppedRole, RolloutState, SteppedSet
from kubectl_disagg.manifests.source import FieldPath

DOCS = "docs/gitops.md"


def check_state(ds: DisaggregatedSet, state: RolloutState, derived: Collection[int] = ()) -> None:
    """Raise UserError, every problem at once, when `state` is not one the planner could have
    written for `ds` (its name and slices; the rest comes from the state's own `target`).
    `derived`: the slices the set gained that render derives (see `state_problems`)."""
    problems = state_problems(ds, state, derived=derived)
    if problems:
        raise UserError(problems)


def state_problems(ds: DisaggregatedSet, state: RolloutState, ran: Mapping[int, Point] | None = None,
                   derived: Collection[int] = ()) -> list[Problem]:
    """Every rule `state` breaks. `ran`: slice → the point a reconcile pass the caller ran made of
    the slice's previous point, over exactly what rule 4's replay would read (the step that
    wrote `state`, `gitops_step`); those slices are not replayed again. `derived`: slices the set
    gained, unrecorded, that render derives at the stable revision (gitops/waves.py
    `gained_at_stable`, design §10.2): rule 1 lets them be."""
    lines = _Lines(state)
    if state.stepped_for is None or state.previous is None:
        return [lines.problem(("formatVersion",), "formatVersion", FORMAT_1)]
    target = state.stepped_for
    problems: list[Problem] = verdict_problems(ds, state, lines)
    then, why = set_stepped_for(ds, state, target)
    if then is None:
        return [lines.problem(("target",), "target", why)]
    for slice_index in sorted(set(state.replicas) - set(range(target.slices))):
        problems.append(lines.problem(lines.slice_path(slice_index), f"slices[slice {slice_index}]",
                                      f"slice {slice_index} is recorded, but the state's last step was for "
                                      f"{target.slices} slice(s): a slice is added or removed by a step, not by hand "
                                      f"(rule: one document per slice of the set, {DOCS})"))
    # The slices come from the set too: a slice it has and the state does not record would
    # render at full size, replacing whatever runs there, so a step records it first.
    for slice_index in range(target.slices, ds.slices):
        if slice_index not in state.replicas and slice_index not in derived:
            problems.append(lines.problem(("slices",), "slices", GROWN.format(
                slice=slice_index, slices=ds.slices, target=target.slices, docs=DOCS)))
    # And the budgets: mid-rollout they are the set's, so a budget edited in the state widens
    # nothing, and a change of the set's budgets is recorded by a step before it renders. A change
    # of the set's replicas renders at once (design §10.1): the rolling slices keep the counts the
    # last step wrote (their bounds are that step's targets, and the set's floor below), the next
    # step rolls toward the new replicas.
    changed = _changed_stepped_for(target, ds, {role.name for role in ds.roles if role.external})
    if changed and any(len(deployed) > 1 for s, deployed in state.replicas.items() if s < ds.slices):
        problems.append(lines.problem(("target", "roles"), "target.roles", TARGETS.format(
            changed="; ".join(changed), docs=DOCS)))
    previous = {s: p for s, p in state.previous.items() if s < then.slices}
    at_stable = _added_at_stable(ds, state, then, target, previous)
    stepped = _stepped(then, state, previous, ran or {}, at_stable)
    for slice_index in range(target.slices):
        deployed = state.replicas.get(slice_index)
        if not deployed:
            problems.append(lines.problem(("slices",), "slices",
                                          f"slice {slice_index} has no counts: every slice of the set is recorded "
                                          f"(rule: a slice without counts would render its new revision at full "
                                          f"size, {DOCS})"))
            continue
        # The point a verified step came from may widen the bounds (its targets may have
        # changed since); a `previous` equal to the counts, or one they are not a step from,
        # widens nothing: the bounds hold for every point, whatever `previous` says.
        before = previous.get(slice_index)
        now = _now(state, slice_index)
        moved = before is not None and not _same(now, before) and _same(now, stepped.get(slice_index, Point({}, {})))
        problems.extend(_check_point(lines, then, state, slice_index, before if moved else None,
                                     added_at_stable=slice_index in at_stable, wanted=ds))
    return problems + _check_steps(lines, then, state, previous, stepped)


def position_problems(ds: DisaggregatedSet, state: RolloutState) -> list[Problem]:
    """Rule 5 alone, at the state's lines: what a verb checks before it changes the position."""
    return verdict_problems(ds, state, _Lines(state)) if state.position is not None else []


def verdict_problems(ds: DisaggregatedSet, state: RolloutState, lines: _Lines) -> list[Problem]:
    """Rule 5: the verdicts of the state's position that no analysis run could have written, and
    the wave and gates no step or verb could have."""
    if ds.policy is None:
        return []
    from kubectl_disagg.core.delivery.policy import position_problems  # a set with a policy has loaded it
    from kubectl_disagg.core.delivery.policy import verdict_problems as recorded

    found = [(path, message, RULE_5) for path, message in recorded(ds, state.position)]
    found += [(path, message, RULE_5_POSITION) for path, message in position_problems(ds, state.position)]
    return [lines.problem(("position",) + path, _dotted(("position",) + path), message + f" (rule: {rule})")
            for path, message, rule in found]


RULE_5 = f"a verdict is what its measurements say, {DOCS}"
RULE_5_POSITION = f"a position moves only through its gates, {DOCS}"
FORMAT_1 = ("a format 1 state records no previous point, so render cannot check that its counts are one step "
            f"from what runs (rule: one step at a time, {DOCS}): run `kubectl disagg rollout step --gitops -f DIR` "
            "once, which checks them against the live LeaderWorkerSets and rewrites the state in format 2")
GROWN = ("slice {slice} has no counts: the set has {slices} slices, the state's last step was for {target}, and "
         "a slice without counts would render at full size, replacing whatever runs there. Run `kubectl disagg "
         "rollout step --gitops -f DIR` to add it (rule: every slice of the set is recorded, {docs})")


TARGETS = ("the set's budgets are not the ones the state's last step was taken for ({changed}): mid-rollout "
           "the bounds come from the set, so run `kubectl disagg rollout step --gitops -f DIR` to record them "
           "(rule: the targets come from the set, {docs})")


def _changed_stepped_for(recorded: SteppedSet, ds: DisaggregatedSet, external: set[str]) -> list[str]:
    """How the set's role targets differ from the recorded ones in what a scaling commit cannot
    explain, as people read it: a role added or removed, or budgets other than the set's
    rollingUpdateConfiguration resolves to at the recorded replicas (a replicas change alone is a
    scale, design §10.1; External roles aside: their target is the capacity their rollout
    started with, not `replicas`)."""
    def text(role: SteppedRole | None) -> str:
        return "none" if role is None else \
            f"replicas {role.replicas}, maxSurge {role.surge}, maxUnavailable {role.unavailable}"
    wanted = SteppedSet.of(ds)
    old, new = {r.name: r for r in recorded.roles}, {r.name: r for r in wanted.roles}
    rolling = {role.name: role.rolling_update for role in ds.roles}

    def explained(name: str) -> bool:
        was, now = old.get(name), new.get(name)
        if was is None or now is None:
            return was == now
        try:
            config = resolve_config(rolling[name], was.replicas)
        except IntOrPercentError:
            return was == now  # validation of the set reports it
        return (was.surge, was.unavailable) == (config.surge, config.unavailable)
    return [f"{name}: {text(old.get(name))} in the state, {text(new.get(name))} in the set"
            for name in [*new, *(n for n in old if n not in new)]
            if name not in external and not explained(name)]


def upgraded(ds: DisaggregatedSet, state: RolloutState) -> RolloutState:
    """A format 1 state as format 2, for the step that reads it against the live LWS: its
    migrated target, and each slice's own point as `previous` (render refuses format 1)."""
    if state.stepped_for is not None and state.previous is not None:
        return state
    return replace(state, stepped_for=state.stepped_for or migrated_stepped_for(ds, state),
                   previous={s: _now(state, s) for s in state.replicas})


def _now(state: RolloutState, slice_index: int) -> Point:
    return Point(state.replicas.get(slice_index, {}), state.initial.get(slice_index, {}))


# --- the set the last step was taken for ------------------------------------------------------


def migrated_stepped_for(ds: DisaggregatedSet, state: RolloutState) -> SteppedSet:
    """A format 1 state's target: its newest revision (the set's, when recorded), the slices it
    records and the set's replicas and budgets."""
    recorded = {rev for deployed in state.replicas.values() for rev in deployed}
    newest = [rev for deployed in state.replicas.values() for rev in deployed
              if rev not in state.initial.get(next(iter(state.replicas), 0), {})]
    revision = ds.revision if ds.revision in recorded or not newest else newest[-1]
    keys = set(state.replicas)
    slices = len(keys) if keys == set(range(len(keys))) else ds.slices
    base = SteppedSet.of(ds)
    record = state.revisions.get(revision)
    if record is not None and revision != ds.revision:
        by_name = {r.name: r for r in base.roles}
        base = replace(base, roles=tuple(by_name.get(name, SteppedRole(name, 1, 1, 0)) for name in record.role_names))
    return SteppedSet(revision, slices, base.roles)


def set_stepped_for(ds: DisaggregatedSet, state: RolloutState, target: SteppedSet) -> tuple[DisaggregatedSet | None, str]:
    """The set as the last step saw it: its revision's roles at the recorded replicas and budgets."""
    record = state.revisions.get(target.revision)
    if record is not None:
        roles = [Role(r.name, 0, r.spec, r.labels, r.annotations, r.external) for r in record.roles]
        base = replace(ds, placement=record.placement)
    elif target.revision == ds.revision:
        roles, base = list(ds.roles), ds
    else:
        return None, (f"the last step rolled to revision {target.revision}, which the state does not record "
                      "under revisions (edited by hand?)")
    by_name = {r.name: r for r in target.roles}
    if set(by_name) != {r.name for r in roles}:
        return None, (f"target.roles name {', '.join(by_name)}, but revision {target.revision} has roles "
                      f"{', '.join(r.name for r in roles)} (edited by hand?)")
    sized = []
    for role in roles:
        wanted = by_name[role.name]
        strategy = {**(role.spec.get("rolloutStrategy") or {}), "rollingUpdateConfiguration": {
            "maxSurge": wanted.surge, "maxUnavailable": wanted.unavailable}}
        sized.append(replace(role, replicas=wanted.replicas, spec={**role.spec, "rolloutStrategy": strategy}))
    return replace(base, revision=target.revision, slices=target.slices, roles=tuple(sized)), ""


# --- rules 1 to 3: the point ------------------------------------------------------------------


def _check_point(lines: _Lines, then: DisaggregatedSet, state: RolloutState, slice_index: int,
                 before: Point | None, added_at_stable: bool = False,
                 wanted: DisaggregatedSet | None = None) -> list[Problem]:
    """Rules 2 and 3 for one slice. `wanted`: the set as committed now, whose replicas may differ
    from the ones the last step was taken for (a scaling commit since, design §10.1): a rolling
    slice then also keeps the set's floor, so a replica count lowered in the state's `target`
    cannot pass for a scale."""
    deployed = state.replicas[slice_index]
    initial = state.initial.get(slice_index, {})
    problems = []
    for revision, counts in deployed.items():
        values = list(counts.values())
        if any(v == 0 for v in values) and any(v > 0 for v in values):
            path = lines.entry(slice_index, revision) + ("replicas",)
            problems.append(lines.problem(path, _dotted(path), f"slice {slice_index} revision {revision} has some "
                                          f"roles at 0 and others running ({_counts(counts)}): a revision group "
                                          "runs all its roles or none (rule: groups move together)"))
    unmoved = _same(Point(deployed, initial), (state.previous or {}).get(slice_index, Point({}, {})))
    # (held by a RolloutPolicy, or added outside its admitted waves at the stable revision)
    if then.revision not in deployed and not (then.policy is not None and unmoved) and not added_at_stable:
        problems.append(lines.problem(lines.slice_path(slice_index) + ("revisions",),
                                      f"slices[slice {slice_index}].revisions",
                                      f"slice {slice_index} does not record revision {then.revision}, the one its "
                                      "last step rolled to (edited by hand?)"))
        return problems
    if len(deployed) == 1:
        return problems  # at rest: render sizes it from the set (scaling is direct)
    for role, total, start, goal, config, new in _role_totals(then, deployed, initial):
        # A step never takes a role further out of bounds than the point it came from was (the
        # targets or budgets may have changed since); a target lowered mid-rollout leaves new
        # above it, and the planner never shrinks new (nor grows it past its target). Only a
        # verified step's point widens the bounds (`before`; None: the point alone).
        was = None if before is None else sum(counts.get(role, 0) for counts in before.replicas.values())
        was_new = 0 if before is None else before.replicas.get(then.revision, {}).get(role, 0)
        ceiling = max(goal + max(config.surge, 1), start, was or 0) + max(0, min(new, was_new) - goal)
        path = lines.entry(slice_index, next(iter(deployed))) + ("replicas", role)
        if goal > 0 and total > ceiling:
            problems.append(lines.problem(path, _dotted(path), f"slice {slice_index} runs {total} replicas of {role} "
                                          f"across its revisions, more than its target {goal} plus surge "
                                          f"allows ({ceiling}) (rule: within target + maxSurge)"))
        floor = goal - config.unavailable if was is None else min(goal - config.unavailable, was)
        # With two old revisions or more (a template change mid-rollout) reconcile drains a
        # group whole (design §4), which may take a role below its floor for a step: rule 4 checks that.
        if start >= goal and total < floor and (len(deployed) == 2 or before is None):
            problems.append(lines.problem(path, _dotted(path), f"slice {slice_index} runs {total} replicas of {role} "
                                          f"across its revisions, below its target {goal} minus maxUnavailable "
                                          f"{config.unavailable} ({floor}) (rule: capacity never below the floor)"))
        scaled = _scaled(wanted, then, role)
        if scaled is not None and start >= scaled.replicas and (len(deployed) == 2 or before is None):
            wanted_floor = scaled.replicas - scaled.unavailable
            wanted_floor = wanted_floor if was is None else min(wanted_floor, was)
            if total < wanted_floor:
                problems.append(lines.problem(path, _dotted(path), (
                    f"slice {slice_index} runs {total} replicas of {role} across its revisions, below the set's "
                    f"replicas {scaled.replicas} minus maxUnavailable {scaled.unavailable} ({wanted_floor}): a "
                    f"scale mid-rollout renders within the set's floor too; run `kubectl disagg rollout step "
                    f"--gitops -f DIR` to record it (rule: capacity never below the floor)")))
    return problems


def _scaled(wanted: DisaggregatedSet | None, then: DisaggregatedSet, role: str) -> SteppedRole | None:
    """The set's target for `role` where a scaling commit changed it since the last step (the same
    revision, a static role, other replicas), else None."""
    if wanted is None or wanted.revision != then.revision:
        return None
    now = next((r for r in SteppedSet.of(wanted).roles if r.name == role), None)
    recorded = next((r for r in then.roles if r.name == role), None)
    external = any(r.external for r in wanted.roles if r.name == role)
    if now is None or recorded is None or external or now.replicas == recorded.replicas:
        return None
    return now


def _role_totals(then: DisaggregatedSet, deployed: Mapping[str, Mapping[str, int]],
                 initial: Mapping[str, Mapping[str, int]]) -> Iterator[tuple[str, int, int, int, RolloutConfig, int]]:
    """Per role considered (the target's, then roles only old revisions have), as reconcile's
    planner inputs: (role, old + new, initial old, target, budgets, new)."""
    old = {rev: counts for rev, counts in deployed.items() if rev != then.revision}
    new = deployed.get(then.revision, {})
    removed = sorted({role for counts in old.values() for role in counts} - set(then.role_names))
    for name in [*then.role_names, *removed]:
        start = sum(initial.get(rev, {}).get(name, counts[name]) for rev, counts in old.items() if name in counts)
        total = sum(counts.get(name, 0) for counts in old.values()) + new.get(name, 0)
        role = next((r for r in then.roles if r.name == name), None)
        goal = role_target(role, start, new.get(name, 0))
        if role is None:
            config = START_CONFIG
        else:
            rolling = role.rolling_update or {}
            config = RolloutConfig(rolling.get("maxSurge", START_CONFIG.surge),
                                   rolling.get("maxUnavailable", START_CONFIG.unavailable))
        yield name, total, start, goal, config, new.get(name, 0)


# --- rule 4: one step from the previous point -------------------------------------------------


def _check_steps(lines: _Lines, then: DisaggregatedSet, state: RolloutState, previous: Mapping[int, Point],
                 stepped: Mapping[int, Point]) -> list[Problem]:
    problems = []
    for slice_index in range(then.slices):
        before = previous.get(slice_index)
        now = _now(state, slice_index)
        if before is None or _same(now, before):
            continue
        after = stepped.get(slice_index, Point({}, {}))
        if _same(now, after):
            continue
        path = lines.slice_path(slice_index) + ("revisions",)
        dropped = [rev for rev, counts in before.replicas.items()
                   if rev not in now.replicas and any(counts.values())]
        if dropped:
            message = (f"revision {dropped[0]} left slice {slice_index} while it still ran "
                       f"{_counts(before.replicas[dropped[0]])}: a revision leaves only once drained "
                       "(rule: no revision removed early)")
        else:
            message = (f"slice {slice_index} is not one planner step from its previous point "
                       f"({_point(before)}): the next step from there is {_point(after)}, not "
                       f"{_point(now)} (rule: one step at a time, {DOCS})")
        problems.append(lines.problem(path, _dotted(path), message))
    return problems


def _stepped(then: DisaggregatedSet, state: RolloutState, previous: Mapping[int, Point],
             ran: Mapping[int, Point], at_stable: Mapping[int, DisaggregatedSet] | None = None) -> dict[int, Point]:
    """Rule 4's next point of each slice the state moved from its previous one: `ran`'s, else
    replayed (nothing is replayed when no slice needs it: a state at rest, or a step's own);
    `at_stable`, slice → the stable set a slice added outside the admitted waves is created at."""
    moved = [s for s, before in previous.items() if not _same(_now(state, s), before)]
    at_stable = at_stable or {}
    replayed = replay(then, state.namespace, previous) if any(s not in ran and s not in at_stable
                                                              for s in moved) else {}
    for s, stable in at_stable.items():
        if s in moved and s not in ran:
            replayed[s] = replay(stable, state.namespace, {s: previous[s]}).get(s, Point({}, {}))
    return {s: ran[s] if s in ran else replayed.get(s, Point({}, {})) for s in moved}


def _added_at_stable(ds: DisaggregatedSet, state: RolloutState, then: DisaggregatedSet, target: SteppedSet,
                     previous: Mapping[int, Point]) -> dict[int, DisaggregatedSet]:
    """Under a RolloutPolicy, slice → the set it was created at, for each slice the last step
    added (nothing deployed before) at the position's stable revision rather than the target's:
    a slice the set gained outside the admitted waves (design §10.2; gitops/waves.py's
    `wave_problems` holds it to the waves). The stable set is the revision's record at the
    recorded targets (`target`, the state's; a role only it has: the most any slice started it with)."""
    stable = state.position.stable if ds.policy is not None and state.position is not None else ""
    added = [s for s, before in previous.items() if not before.replicas and list(state.deployed(s)) == [stable]]
    if not stable or stable == then.revision or not added or stable not in state.revisions:
        return {}
    targets = {role.name: role for role in target.roles}
    roles = []
    for name in state.revisions[stable].role_names:
        most = max((state.initial.get(s, {}).get(stable, {}).get(name, counts.get(name, 0))
                    for s, deployed in state.replicas.items() for rev, counts in deployed.items() if rev == stable),
                   default=0)
        roles.append(targets.get(name) or SteppedRole(name, most, 1, 0))
    at, _ = set_stepped_for(ds, state, SteppedSet(stable, then.slices, tuple(roles)))
    return {} if at is None else {s: at for s in added}


def replay(then: DisaggregatedSet, namespace: str, points: Mapping[int, Point]) -> dict[int, Point]:
    """What one reconcile pass makes of `points`, as if they were live and every LWS ready."""
    snapshot = Snapshot(namespace, tuple(_live(then.name, points)))
    start = RolloutState(then.name, namespace, {}, {s: {r: dict(c) for r, c in p.replicas.items()}
                                                     for s, p in points.items()},
                         {s: {r: dict(c) for r, c in p.initial.items()} for s, p in points.items()})
    executor = StateExecutor(then, start, snapshot)
    result = reconcile(then, snapshot)
    if result.problems:
        return {}
    for action in result.actions:
        executor.execute(action, namespace)
    after = executor.state()
    return {s: Point(after.replicas.get(s, {}), after.initial.get(s, {})) for s in range(then.slices)}


def _live(set_name: str, points: Mapping[int, Point]) -> Iterator[LiveLWS]:
    """The LWS a point renders to, settled (ready == replicas), created in deployment order."""
    for slice_index, point in points.items():
        for order, (revision, counts) in enumerate(point.replicas.items()):
            for role, replicas in counts.items():
                started = point.initial.get(revision, {}).get(role)
                annotations = {} if started is None else {naming.INITIAL_REPLICAS_ANNOTATION: str(started)}
                yield LiveLWS(naming.LWS_KIND, naming.lws_name(set_name, slice_index, revision, role), "", "",
                              naming.lws_labels(set_name, slice_index, revision, role), annotations,
                              f"{order:08d}", "", replicas, 1, replicas, replicas, replicas, 1)


def _same(a: Point, b: Point) -> bool:
    """The same counts (and initial-replicas of the revisions still there)."""
    return a.replicas == b.replicas and {r: c for r, c in a.initial.items() if c and r in a.replicas} == \
        {r: c for r, c in b.initial.items() if c and r in b.replicas}


# --- where a problem is -----------------------------------------------------------------------


class _Lines:
    """FILE:LINE of a state's fields (the document it was read from; none for a state in memory)."""

    def __init__(self, state: RolloutState):
        self.document = state.source
        # (keyed as the document spells them: the lookups, by int and str, find only what is well-formed)
        self.entries: dict[tuple[object, object], FieldPath] = {}
        self.slices: dict[object, FieldPath] = {}
        data = self.document.data if self.document is not None else {}
        for index, entry in enumerate(data.get("slices") or []):
            if not isinstance(entry, dict):
                continue
            self.slices.setdefault(entry.get("slice"), ("slices", index))
            for rev_index, deployed in enumerate(entry.get("revisions") or []):
                if isinstance(deployed, dict):
                    self.entries[(entry.get("slice"), deployed.get("revision"))] = \
                        ("slices", index, "revisions", rev_index)

    def slice_path(self, slice_index: int) -> FieldPath:
        return self.slices.get(slice_index, ("slices",))

    def entry(self, slice_index: int, revision: str) -> FieldPath:
        return self.entries.get((slice_index, revision), self.slice_path(slice_index))

    def problem(self, path: FieldPath, dotted: str, message: str) -> Problem:
        if self.document is None:
            return Problem("rollout state", 0, dotted, message)
        return Problem(self.document.file, self.document.line(path), dotted, message)


def _dotted(path: FieldPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{role} {n}" for role, n in counts.items())


def _point(point: Point) -> str:
    if not point.replicas:
        return "nothing deployed"
    return "; ".join(f"{rev} {_counts(counts)}" for rev, counts in point.replicas.items())
