"""Render from a rollout state: what Argo CD applies during a git-driven rollout. Pure.

Every revision the state records renders at its recorded replicas, from its own record (so a
placement or metadata change never rewrites a deployed revision's pods), plus the set's own
revision at 0 where the state does not know it yet (the controller's "rollout started" step).
Slices at rest render at the set's replicas: scaling is direct, as with the controller; and a
rollout started from rest starts from them (what the slice ran, recorded by a step or not).
Hermetic and deterministic: no cluster, no clock, no environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from kubectl_disagg.core.api import naming
from kubectl_disagg.errors import UserError
from kubectl_disagg.core.api.model import DisaggregatedSet, Role
from kubectl_disagg.core.controller.planner import EXTERNAL_SEED_REPLICAS
from kubectl_disagg.core.controller.render import leader_worker_set, render_set, service
from kubectl_disagg.gitops.rules import check_state
from kubectl_disagg.gitops.waves import gained_at_stable, held_layout, static_targets, wave_problems
from kubectl_disagg.core.api.naming import STATE_FILE
from kubectl_disagg.gitops.state import MISSING_STATE, RevisionRecord, RoleRecord, RolloutState, record_from_set
from kubectl_disagg.manifests.source import JsonObject

RoleLayout = tuple[str, int, int | None, str | None]  # (role, replicas, initial-replicas or None, owner or None)
SliceLayout = list[tuple[str, list[RoleLayout]]]  # (revision, its roles) in render order


def render_with_state(ds: DisaggregatedSet, state: RolloutState | None, namespace: str | None = None,
                      *, require_state: bool = False, state_file: str = STATE_FILE) -> list[JsonObject]:
    """The objects of `ds` as far as `state` has rolled it; the steady state without a state.

    Deterministic and hermetic: slice, then revision in deployment order, then role, each LWS
    followed by its Service. `require_state` refuses a missing state (the plugin's strict mode).
    """
    if state is None:
        if require_state:
            raise UserError([f"{ds.source.file}: disaggregatedset/{ds.name}: "
                             + MISSING_STATE.format(file=state_file)])
        return list(render_set(ds, namespace))
    # only a state the planner could have written renders (design §8), with the slices it derives
    check_state(ds, state, gained_at_stable(ds, state)[1])
    if problems := wave_problems(ds, state):  # ... and that its RolloutPolicy let move (design §9)
        raise UserError(problems)
    return rendered(ds, state)


def rendered(ds: DisaggregatedSet, state: RolloutState) -> list[JsonObject]:
    """`render_with_state` without the rules: only for a step's own states (checked when it wrote
    them, or compared with the live LWS, which are the check there), never for what is applied."""
    namespace = state.namespace
    records = dict(state.revisions)
    records.setdefault(ds.revision, record_from_set(ds))
    objects: list[JsonObject] = []
    views: dict[str, DisaggregatedSet] = {}
    for slice_index, revision, role_name, replicas, initial, owner in _layout(ds, state):
        record = records[revision]
        view = views.get(revision) or views.setdefault(revision, _revision_set(ds, record))
        lws = leader_worker_set(view, _role(record.role(role_name)), slice_index, namespace, replicas)
        if initial is not None:
            annotations = lws["metadata"].setdefault("annotations", {})
            annotations[naming.INITIAL_REPLICAS_ANNOTATION] = str(initial)
        if owner is not None:
            annotations = lws["metadata"].setdefault("annotations", {})
            annotations[naming.REPLICAS_OWNER_ANNOTATION] = owner
        objects.append(lws)
        if ds.revision_services:
            objects.append(service(ds.name, slice_index, revision, role_name, namespace))
    return objects


def rendered_names(ds: DisaggregatedSet, state: RolloutState) -> tuple[set[str], set[str]]:
    """The names of the LeaderWorkerSets and of the Services `rendered` makes, without making
    them (what prune deletes between two of a step's states)."""
    lws = {naming.lws_name(ds.name, s, revision, role) for s, revision, role, *_ in _layout(ds, state)}
    return lws, {name + naming.SERVICE_SUFFIX for name in lws} if ds.revision_services else set()


def _layout(ds: DisaggregatedSet, state: RolloutState) -> Iterator[tuple[int, str, str, int, int | None, str | None]]:
    """(slice, revision, role, replicas, initial-replicas, owner) of every LWS, in render order."""
    for slice_index in range(ds.slices):
        for revision, roles in _slice_layout(ds, state, slice_index):
            for role_name, replicas, initial, owner in roles:
                yield slice_index, revision, role_name, replicas, initial, owner


def _slice_layout(ds: DisaggregatedSet, state: RolloutState, slice_index: int) -> SliceLayout:
    """[(revision, [(role, replicas or None, initial-replicas or None, owner)])] for one slice.

    `owner` (the replicas-owner annotation, or None): `autoscaler` on an External role's LWS
    whose size the autoscaler owns here (at rest, and an old revision at the start of a
    rollout): its replicas (the count last recorded, never the autoscaler's, which render
    cannot know) are only what Argo CD creates it with or compares to: its ignoreDifferences
    rule (docs/autoscaling.md) makes it keep the live size. A step records that size, and from
    then on the state sizes the role until the rollout ends (a start over a rollout keeps the
    sizes the state gave). At rest while the state still sizes it (`handing_back`), the role
    is `handing-back`: Argo CD applies the state's count, and the live object carrying the
    annotation is what lets the next state's `autoscaler` keep the live size (docs/gitops.md
    "Handing a size back").
    """
    deployed = state.deployed(slice_index)
    records = state.revisions
    held: SliceLayout | None = held_layout(ds, state, slice_index)  # (typed here until gitops/waves is)
    if held is not None:
        return held  # a RolloutPolicy keeps the slice at what the state records (gitops/waves.py)
    if not deployed or list(deployed) == [ds.revision]:
        # Steady: the set's revision at the set's replicas (scaling is direct, as with the controller).
        recorded = deployed.get(ds.revision, {})
        handing = handing_back(ds, state, slice_index)
        return [(ds.revision, [(role.name, recorded.get(role.name, EXTERNAL_SEED_REPLICAS), None,
                                naming.REPLICAS_OWNER_HANDING_BACK if role.name in handing
                                else naming.REPLICAS_OWNER_AUTOSCALER)
                               if role.external else (role.name, role.replicas, None, None)
                               for role in ds.roles])]
    # A revision the state does not know starts a rollout: like the controller, every old
    # revision then remembers the replicas it has now, else the ones its rollout started from.
    starting = ds.revision not in deployed
    initial = {} if starting else state.initial.get(slice_index, {})
    if starting and len(deployed) == 1:
        # Started from one revision (at rest, or held by the policy until a promote admitted it):
        # from what the slice ran there, the set's replicas for a role it sizes statically (as the
        # terminal reads them live), though no step recorded them yet (design §10.1); the rest as
        # recorded.
        ((revision, counts),) = deployed.items()
        targets = static_targets(ds)
        external = {role for role in counts if revision in records and records[revision].role(role).external}
        deployed = {revision: {role: n if role in external else targets.get(role, n) for role, n in counts.items()}}
    layout: SliceLayout = []
    for revision, counts in deployed.items():
        old = revision != ds.revision
        entries: list[RoleLayout] = []
        for role, n in counts.items():
            autoscaled = (starting and len(deployed) == 1 and revision in records
                          and records[revision].role(role).external
                          and role not in handing_over(state, slice_index, revision))
            # An autoscaled size is not known here: its initial-replicas is what the step reads live.
            started = None if not old or autoscaled else initial.get(revision, {}).get(role, n)
            entries.append((role, n, started, naming.REPLICAS_OWNER_AUTOSCALER if autoscaled else None))
        layout.append((revision, entries))
    if starting:
        # A template change the state does not know yet: the controller's "rollout started" step.
        layout.append((ds.revision, [(role.name, 0, None, None) for role in ds.roles]))
    return layout


def handing_back(ds: DisaggregatedSet, state: RolloutState, slice_index: int) -> set[str]:
    """The set's External roles at rest whose size the state applied until now, so that Argo
    CD's field manager owns it: those the last step sized (`handing_over`), and those the
    revision's record does not mark External (a role made External at rest: the state gave its
    replicas until this commit). Each renders `handing-back` until a step hands it back."""
    record = state.revisions.get(ds.revision)
    external = {role.name for role in ds.roles if role.external}
    was_fixed = {name for name in external
                 if record is not None and name in record.role_names and not record.role(name).external}
    return (handing_over(state, slice_index, ds.revision) & external) | was_fixed


def handing_over(state: RolloutState, slice_index: int, revision: str) -> set[str]:
    """Roles at rest that the state sized at the last step: every role when that step ended a
    rollout (the point before it ran another revision too; the state sized each role all
    along), else the roles whose size it changed (a rollout that ended with an External role
    at 0 gives it its capacity back). An External one is `handing-back` until the next step
    hands it to its autoscaler: Argo CD applies the state's count once more, and the live
    object carrying the annotation is what lets `autoscaler` keep the live size."""
    before = (state.previous or {}).get(slice_index)
    if before is None:
        return set()
    was, now = before.replicas.get(revision, {}), state.deployed(slice_index).get(revision, {})
    if set(before.replicas) - {revision}:
        return set(now)
    return {role for role, n in now.items() if role in was and was[role] != n}


def _revision_set(ds: DisaggregatedSet, record: RevisionRecord) -> DisaggregatedSet:
    """The set as it was when `record` was deployed: what its LWS are rendered from."""
    return replace(ds, placement=record.placement, roles=tuple(_role(r) for r in record.roles),
                       revision=record.revision)


def _role(record: RoleRecord) -> Role:
    return Role(record.name, 0, record.spec, record.labels, record.annotations, record.external)
