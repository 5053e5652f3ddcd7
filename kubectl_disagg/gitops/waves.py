"""A RolloutPolicy's rollout through git (design §9.6): the position in the state file. Pure.

The position lives in the set's rollout state (`position:`, core/delivery/position.py), so the same
decisions come from the same position as in the cluster (core/delivery/waves.py). Here:

- `state_decision`: the decision from the committed state alone (what the verbs and the
  served summary read; no clock at render: a soak passes only when a step records it);
- `wave_problems`: design §8 extended: a state that starts a slice outside the admitted waves,
  or moves one while the rollout is paused, or adds a slice at another revision than a step
  would (the stable one outside the admitted waves, design §10.2), is refused by `render` and
  `cmp generate`;
- `with_position`: the state a verb writes (nothing deployed changes: its last step moved nothing).

Decisions and problems only: the served summary's words are rollout/served.py's.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import replace

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.api.policy_types import ResolvedWave
from kubectl_disagg.core.controller.planner import EXTERNAL_SEED_REPLICAS
from kubectl_disagg.core.delivery.policy import resolve_waves
from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.core.delivery.waves import Hold, Progress, WaveDecision, decided, progress_among
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.gitops.state import Point, RolloutState
from kubectl_disagg.manifests.source import dotted

# A role of a slice render lays out as the state holds it: (role, replicas, initial-replicas or
# None, owner or None), render.py's `RoleLayout`.
HeldRole = tuple[str, int, int | None, str | None]

# Render has no clock: a soak is judged passed only once a step recorded it.
RENDER_NOW = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def state_progress(ds: DisaggregatedSet, state: RolloutState, revision: str) -> tuple[Progress, ...]:
    """Each slice against `revision`, as the state deploys it."""
    return tuple(progress_among(runs, revision) for runs in state_runs(ds, state))


def state_decision(ds: DisaggregatedSet, state: RolloutState,
                   now: datetime.datetime = RENDER_NOW, revision: str | None = None) -> WaveDecision:
    """The decision the committed state stands at (the same as a step's, but read from git);
    `revision`: for the rollout to it rather than to the set's."""
    return decided(ds.policy, revision or ds.revision, state.position, state_runs(ds, state), now).decision


def state_runs(ds: DisaggregatedSet, state: RolloutState) -> list[set[str]]:
    """The revisions each slice runs, as the state deploys it."""
    return [set(state.deployed(s)) for s in range(ds.slices)]


def with_position(ds: DisaggregatedSet, state: RolloutState, position: Position | None) -> RolloutState:
    """`state` with `position`, its last step moving nothing (each slice's previous is its point).
    The slices the set gained that render derives at the stable revision (`gained_at_stable`)
    are recorded there as they run, so a verb that admits them (a promote, a resume) leaves them
    pending at it, as in the terminal, rather than unrecorded inside the admitted waves."""
    state = with_gained(ds, state)
    return replace(state, position=position, previous={
        s: Point(state.replicas.get(s, {}), state.initial.get(s, {})) for s in state.replicas})


def with_gained(ds: DisaggregatedSet, state: RolloutState) -> RolloutState:
    """`state` with the slices the set gained that render derives at the stable revision
    (`gained_at_stable`) recorded there, at the replicas render gives them: what runs while the
    rollout is held (`rollout status --gitops` reads them so, `with_position` records them)."""
    stable, gained = gained_at_stable(ds, state)
    if gained and state.stepped_for is not None and len(gained) == ds.slices - state.stepped_for.slices:
        counts = {stable: {role: n for role, n, _, _ in _sized(ds, state, stable, {}, {})}}
        state = replace(state, replicas={**state.replicas, **{s: counts for s in gained}},
                        stepped_for=replace(state.stepped_for, slices=ds.slices))
    return state


def change_state(ds: DisaggregatedSet, state: RolloutState, change: Callable[[WaveDecision], Position],
                 now: datetime.datetime) -> tuple[WaveDecision, WaveDecision, RolloutState]:
    """A verb through git: the decision before, the one after, and the state to write. A
    committed position no step or verb could have written (rule 5) is refused, as the
    cluster's RolloutState is: a verb never writes it again under a reviewer's approval."""
    from kubectl_disagg.gitops.rules import position_problems  # rules reads positions through this module

    if problems := position_problems(ds, state):
        raise UserError(problems)
    before = state_decision(ds, state, now)
    after_state = with_position(ds, state, change(before))
    return before, state_decision(ds, after_state, now), after_state


def wave_problems(ds: DisaggregatedSet, state: RolloutState) -> list[Problem]:
    """Slices the state's last step moved where the policy would not let a step move them.

    The step is judged as it was taken: from its previous point, for the rollout it rolled
    (`target.revision`, the set's revision then). A template changed since (the next image,
    committed after the rollout completed or mid-rollout) is not that step's: the next step
    starts its rollout, under the waves, from the first. A state without a position was written
    by a step without a policy (a paced step always records one): its moves are rule 4's alone,
    and the next step judges the position."""
    if ds.policy is None or state.previous is None or state.position is None:
        return []
    stepped_for = state.stepped_for.revision if state.stepped_for is not None else None
    decision = state_decision(ds, replace(state, replicas={s: p.replicas for s, p in state.previous.items()},
                                          initial={s: p.initial for s, p in state.previous.items()}),
                              revision=stepped_for)
    problems = []
    where = f"the position is at wave {decision.wave + 1} of {len(decision.waves)}"
    position = decision.position
    for slice_index in sorted(state.replicas):
        previous = state.previous.get(slice_index)
        if slice_index >= ds.slices:
            continue
        if previous is not None and not previous.replicas:  # nothing deployed before: a slice the set gained
            problems.extend(_added_problems(decision, state, slice_index, where))
            continue
        moved = previous is not None and dict(state.deployed(slice_index)) != dict(previous.replicas)
        if moved and slice_index not in decision.moves:
            why = decision.held.get(slice_index)
            problems.append(_problem(state, slice_index, f"slice {slice_index} moved, but the RolloutPolicy holds it "
                                     f"({why.value if why else 'not admitted'}; {where}): a step never moves it "
                                     "there"))
        elif (slice_index >= decision.waves[decision.wave].end and position.revision != position.stable
              and position.revision in state.deployed(slice_index) and slice_index not in position.found
              and slice_index not in scaled_down_in_flight(ds, state)):
            # whatever its `previous` says: outside the admitted waves a slice runs the stable revision
            problems.append(_problem(state, slice_index, f"slice {slice_index} runs revision {position.revision}, "
                                     f"but the RolloutPolicy holds it ({Hold.WAVE.value}; {where}): a step starts "
                                     "it once its wave comes"))
    return problems


def scaled_down_in_flight(ds: DisaggregatedSet, state: RolloutState) -> tuple[int, ...]:
    """The slices that run the rollout's revision, admitted by the waves at the slice count the
    state's last step was taken for, where the set now has fewer slices (design §10.2): the
    smaller count's waves may not admit them, but a slice that has started goes on, as in the
    terminal (core/waves.decide). The step that records the scale lists them in the position's
    `found`, so the renders after it keep them too."""
    then, policy, position = state.stepped_for, ds.policy, state.position
    if policy is None or position is None or then is None or then.slices <= ds.slices:
        return ()
    def admitted(slices: int) -> int:
        waves = resolve_waves(policy, slices)
        return waves[min(position.wave, len(waves) - 1)].end

    return tuple(s for s in range(admitted(ds.slices), min(ds.slices, admitted(then.slices)))
                 if position.revision in state.deployed(s))


def _added_problems(decision: WaveDecision, state: RolloutState, slice_index: int, where: str) -> list[Problem]:
    """A slice the last step added: at the stable revision outside the admitted waves, at the
    rollout's (or, after an abort, the stable) revision inside them, never while held."""
    deployed = list(state.deployed(slice_index))
    if not deployed:
        return []
    if slice_index in decision.held:
        return [_problem(state, slice_index, f"slice {slice_index} was added, but the RolloutPolicy holds it "
                         f"({decision.held[slice_index].value}; {where}): a step adds it once the rollout moves")]
    outside = slice_index in decision.stable_starts
    expected = decision.position.stable if outside else decision.moves_to
    if deployed == [expected]:
        return []
    why = "outside the admitted waves" if outside else "inside the admitted waves"
    return [_problem(state, slice_index, f"slice {slice_index} was added at revision {', '.join(deployed)}, but the "
                     f"RolloutPolicy has it {why} ({where}): a step adds it at revision {expected}")]


def _problem(state: RolloutState, slice_index: int, message: str) -> Problem:
    document = state.source
    if document is None:
        return Problem("rollout state", 0, f"slices[slice {slice_index}]", message)
    entries = document.data.get("slices") if isinstance(document.data, dict) else None
    index = next((i for i, e in enumerate(entries or []) if isinstance(e, dict) and e.get("slice") == slice_index), 0)
    path = ("slices", index, "revisions")
    return Problem(document.file, document.line(path), dotted(path), message)


def held_layout(ds: DisaggregatedSet, state: RolloutState, slice_index: int) -> list[tuple[str, list[HeldRole]]] | None:
    """How render lays out a slice the policy keeps as it is (render.py's `_slice_layout` form:
    [(revision, [(role, replicas, initial-replicas or None, owner)])]), or None to lay it out
    as without a policy: a held slice renders what the state records (no new revision at 0, no
    initial-replicas it has not recorded), and so does every slice after an abort, whose steps
    record each LWS they create or annotate. A held slice that runs one revision alone takes
    the set's replicas at once (design §10.1: a replicas change is not a template change; its
    External roles keep the size recorded), as the terminal scales it; the step records what
    runs. A slice the set gained that the state does not record yet renders at the stable
    revision where a step would start it there (`gained_at_stable`)."""
    if ds.policy is None:
        return None
    decision = state_decision(ds, state)
    deployed = state.deployed(slice_index)
    if not deployed:
        stable, gained = gained_at_stable(ds, state, decision)
        if slice_index not in gained:
            return None
        return [(stable, _sized(ds, state, stable, {}, {}))]
    # an abort with no record of the stable revision to go back to holds every slice as it
    # stands, as in the cluster (core/delivery/waves.py `reconciled_toward`: nothing to rebuild it from)
    held = slice_index in decision.held or decision.moves_to not in (ds.revision, *state.revisions)
    if not held and decision.moves_to == ds.revision:
        return None
    initial = state.initial.get(slice_index, {})
    if len(deployed) == 1 and held:
        ((revision, counts),) = deployed.items()
        if revision == ds.revision:
            return None  # at the set's own revision: sized from the set, as at rest
        return [(revision, _sized(ds, state, revision, counts, initial.get(revision, {})))]
    return [(revision, [(role, n, initial.get(revision, {}).get(role), None) for role, n in counts.items()])
            for revision, counts in deployed.items()]


def static_targets(ds: DisaggregatedSet) -> dict[str, int]:
    """Role → the set's replicas, for the roles it sizes statically (not External)."""
    return {role.name: role.replicas for role in ds.roles if not role.external}


def _sized(ds: DisaggregatedSet, state: RolloutState, revision: str, counts: Mapping[str, int],
           initial: Mapping[str, int]) -> list[HeldRole]:
    """The roles of `revision`'s record at the set's replicas (a role the set sizes statically),
    else at `counts` (External roles, roles the set no longer has; a slice with nothing recorded:
    the most any slice runs)."""
    targets = static_targets(ds)
    most: dict[str, int] = {}
    for deployed in state.replicas.values():
        for role, n in deployed.get(revision, {}).items():
            most[role] = max(most.get(role, 0), n)
    return [(role, targets.get(role, counts.get(role, most.get(role, EXTERNAL_SEED_REPLICAS))), initial.get(role),
             None) for role in state.revisions[revision].role_names]


def gained_at_stable(ds: DisaggregatedSet, state: RolloutState, decision: WaveDecision | None = None
                     ) -> tuple[str, tuple[int, ...]]:
    """The slices the set gained since the state's last step, unrecorded yet, that a step would
    start at the stable revision: outside the admitted waves, while paused, after an abort
    (design §10.2). Render derives them at it (its record, at the set's replicas), so a commit of
    `slices` renders at once: the pause that holds every step does not hold the set's size.
    Under a policy with a recorded position only; a slice inside the admitted waves of a rollout
    under way is started at its revision, which a step records first (rules.py's GROWN).
    Returns the stable revision (the decision's: the rollout's under way) and those slices."""
    if ds.policy is None or state.position is None or state.stepped_for is None:
        return "", ()
    decision = decision or state_decision(ds, state)
    stable = decision.position.stable
    if not stable or stable not in state.revisions:
        return "", ()
    return stable, tuple(s for s in range(state.stepped_for.slices, ds.slices) if not state.deployed(s) and (
        s in decision.stable_starts or (s in decision.moves and decision.moves_to == stable)))


def opened_wave(ds: DisaggregatedSet, before: RolloutState | None, after: RolloutState | None) -> ResolvedWave | None:
    """The wave a step opens (a ResolvedWave: its slices join the rollout), or None."""
    if ds.policy is None or after is None or after.position is None:
        return None
    was = before.position.wave if before is not None and before.position is not None else 0
    if after.position.wave <= was or after.position.revision != (before.position.revision if before and
                                                                   before.position else after.position.revision):
        return None
    waves = resolve_waves(ds.policy, ds.slices)
    return waves[min(after.position.wave, len(waves) - 1)]
