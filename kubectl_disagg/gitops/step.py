"""A git step's own states, pure: the state a first step writes (`initial_state`, or
`adopt_state` of a set already live), which renders the cluster may run for a committed state
(`synced_renders`), what the committed state rendered implicitly made explicit from the live LWS
(`recorded_live`), and whether the cluster shows what the state renders to
(`synced_differences`).

The step itself (one reconcile pass over the live LWS, decided once) is the rollout's:
rollout/git_step.py `gitops_step`, above this package (design §9.8).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from kubectl_disagg.core.api import naming
from kubectl_disagg.errors import UserError
from kubectl_disagg.core.api.model import DisaggregatedSet, Placement
from kubectl_disagg.core.delivery.position import for_revision
from kubectl_disagg.core.api.naming import LWS_KIND as LWS
from kubectl_disagg.core.controller.reconcile import EXTERNAL_SEED_REPLICAS
from kubectl_disagg.core.controller.render import deep_copy_object
from kubectl_disagg.gitops.rules import set_stepped_for
from kubectl_disagg.core.api.rollout_config import resolve_config
from kubectl_disagg.gitops.state import (Point, RevisionRecord, RoleRecord, SteppedRole, RolloutState, SteppedSet,
                                         record_from_set, record_revision)
from kubectl_disagg.core.controller.snapshot import LiveLWS, Placed, Snapshot
from kubectl_disagg.gitops.render import render_with_state, rendered
from kubectl_disagg.manifests.source import JsonObject


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
    ours = _ours(ds, snapshot)
    records: dict[str, RevisionRecord] = {}
    replicas: dict[int, dict[str, dict[str, int]]] = {}
    initial: dict[int, dict[str, dict[str, int]]] = {}
    for identity, obj in ours:
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


def _ours(ds: DisaggregatedSet, live: Snapshot) -> list[tuple[Placed, LiveLWS]]:
    """The set's LWS whose labels place them, each with its place, oldest first (then by name)."""
    return [(placed, o) for o in sorted(live.lws, key=lambda o: (o.created, o.name))
            if o.managed_by_us(ds.name) and (placed := o.identity.placed) is not None]


def _adopted_stepped_for(ds: DisaggregatedSet, records: Mapping[str, RevisionRecord],
                         replicas: Mapping[int, Mapping[str, Mapping[str, int]]],
                         ours: list[tuple[Placed, LiveLWS]]) -> SteppedSet:
    """The set as the step that left the live objects saw it: the set itself when its revision
    runs; else (its template changed in git since) the newest live revision, in the slices that
    run, sized as the set sizes its roles (a role it no longer has: as most of it runs). The
    state records what runs, and the step after it starts the rollout to the set's revision."""
    if ds.revision in records or not ours:
        return SteppedSet.of(ds)
    newest = ours[-1][0].revision  # the revision the live objects were last rolled to
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


def _record_from_live(ds: DisaggregatedSet, revision: str, ours: list[tuple[Placed, LiveLWS]],
                      snapshot: Snapshot) -> RevisionRecord:
    """An old revision's record, recovered from its live LWS (the injected parts taken out).

    Checked by rendering it back: a revision whose LWS were edited by hand cannot be adopted.
    """
    by_role: dict[str, LiveLWS] = {}
    for placed, obj in sorted(ours, key=lambda o: o[0].slice):
        if placed.revision == revision:
            by_role.setdefault(placed.role, obj)
    roles: list[RoleRecord] = []
    placement: Placement | None = None
    order = {name: index for index, name in enumerate(ds.role_names)}
    for role_name in sorted(by_role, key=lambda r: (order.get(r, len(order)), r)):
        live = snapshot.objects[(LWS, by_role[role_name].name)]
        spec = deep_copy_object({k: v for k, v in (live.get("spec") or {}).items() if k != "replicas"})
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


def _strip_injected(spec: JsonObject, set_name: str) -> Placement | None:
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


def _is_placement_term(term: Mapping[str, Any], set_name: str) -> bool:
    expressions = ((term.get("labelSelector") or {}).get("matchExpressions") or [])
    return any(e.get("key") == naming.NAME_LABEL for e in expressions) and any(
        e.get("key") == naming.SLICE_LABEL for e in expressions)


def synced_renders(ds: DisaggregatedSet, state: RolloutState, live: Snapshot
                   ) -> list[tuple[DisaggregatedSet, RolloutState, list[JsonObject]]]:
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
    stepped_for, previous = state.stepped_for, state.previous
    if stepped_for is None or previous is None:  # format 1, which render refuses whatever the set
        raise error
    then, _ = set_stepped_for(ds, state, stepped_for)
    sets = [replace(ds, slices=min(ds.slices, stepped_for.slices))] + ([then] if then is not None else [])
    candidates: list[tuple[DisaggregatedSet, RolloutState, list[JsonObject]]] = []
    for synced in sets:
        try:
            candidates.append((synced, state, render_with_state(synced, state)))
        except UserError:
            continue
    if not candidates:
        raise error
    ours = _ours(ds, live)
    try:
        records = {**state.revisions, **{rev: _record_from_live(ds, rev, ours, live)
                                         for p in previous.values() for rev in p.replicas
                                         if rev not in state.revisions}}
    except UserError:
        return candidates  # a revision not live as recorded: not what runs
    before = replace(state, revisions=records, replicas={s: p.replicas for s, p in previous.items()},
                     initial={s: p.initial for s, p in previous.items() if p.initial})
    # (compared with the live LWS, which are the check)
    return candidates + [(synced, before, rendered(synced, before)) for synced in sets]


def lws_objects(objects: list[JsonObject]) -> list[JsonObject]:
    return [o for o in objects if o["kind"] == LWS]


def external_as_set(record: RevisionRecord, ds: DisaggregatedSet) -> RevisionRecord:
    """The record with each role's External mark as the set has it now (the mark is no part of
    the revision: a role can become External at rest)."""
    external = {role.name: role.external for role in ds.roles}
    return replace(record, roles=tuple(replace(role, external=external.get(role.name, role.external))
                                       for role in record.roles))


def autoscaled(objects: list[JsonObject]) -> set[str]:
    """The LWS whose size the autoscaler owns in this render (not the state's to compare).
    A `handing-back` LWS is not among them: Argo CD still applies the state's count to it."""
    return {o["metadata"]["name"] for o in objects
            if (o["metadata"].get("annotations") or {}).get(naming.REPLICAS_OWNER_ANNOTATION)
            == naming.REPLICAS_OWNER_AUTOSCALER}


def recorded_live(ds: DisaggregatedSet, state: RolloutState, live: Snapshot,
                   sized_by_autoscaler: Collection[str] = frozenset()) -> RolloutState:
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
        identity = obj.identity.placed
        if not obj.managed_by_us(ds.name) or identity is None or identity.slice >= ds.slices:
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


def synced_differences(expected: list[JsonObject], live: list[LiveLWS]) -> list[str]:
    """Where the live LWS differ from what the state renders to (Argo CD has not synced yet)."""
    by_name = {o.name: o for o in live}
    out: list[str] = []
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
