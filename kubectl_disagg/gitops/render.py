"""Render from a rollout state: what Argo CD applies during a git-driven rollout. Pure.

Every revision the state records renders at its recorded replicas, from its own record (so a
placement or metadata change never rewrites a deployed revision's pods), plus the set's own
revision at 0 where the state does not know it yet (the controller's "rollout started" step).
Slices at rest render at the set's replicas: scaling is direct, as with the controller.
Hermetic and deterministic: no cluster, no clock, no environment.
"""

from __future__ import annotations

from dataclasses import replace

from kubectl_disagg.core import naming
from kubectl_disagg.errors import UserError
from kubectl_disagg.core.model import DisaggregatedSet, Role
from kubectl_disagg.core.render import leader_worker_set, render_set, service
from kubectl_disagg.gitops.state import STATE_FILE, RevisionRecord, RoleRecord, RolloutState, record_from_set


def render_with_state(ds: DisaggregatedSet, state: RolloutState | None, namespace: str | None = None,
                      *, require_state: bool = False) -> list[dict]:
    """The objects of `ds` as far as `state` has rolled it; the steady state without a state.

    Deterministic and hermetic: slice, then revision in deployment order, then role, each LWS
    followed by its Service. `require_state` refuses a missing state (the plugin's strict mode).
    """
    if state is None:
        if require_state:
            raise UserError([f"{ds.source.file}: disaggregatedset/{ds.name}: no rollout state found (expected "
                             f"{STATE_FILE} beside it, or --state); a set renders only from its "
                             "state when one is required: run `kubectl disagg rollout step --gitops` to create it"])
        return list(render_set(ds, namespace))
    namespace = state.namespace
    records = dict(state.revisions)
    records.setdefault(ds.revision, record_from_set(ds))
    objects: list[dict] = []
    for slice_index in range(ds.slices):
        for revision, roles in _slice_layout(ds, state, slice_index):
            record = records[revision]
            view = _revision_set(ds, record)
            for role_name, replicas, initial in roles:
                lws = leader_worker_set(view, _role(record.role(role_name)), slice_index, namespace, replicas)
                if initial is not None:
                    annotations = lws["metadata"].setdefault("annotations", {})
                    annotations[naming.INITIAL_REPLICAS_ANNOTATION] = str(initial)
                objects.append(lws)
                objects.append(service(ds.name, slice_index, revision, role_name, namespace))
    return objects


def _slice_layout(ds: DisaggregatedSet, state: RolloutState, slice_index: int):
    """[(revision, [(role, replicas or None, initial-replicas or None)])] for one slice."""
    deployed = state.deployed(slice_index)
    if not deployed or list(deployed) == [ds.revision]:
        # Steady: the set's revision at the set's replicas (scaling is direct, as with the controller).
        return [(ds.revision, [(role.name, None if role.external else role.replicas, None) for role in ds.roles])]
    # A revision the state does not know starts a rollout: like the controller, every old
    # revision then remembers the replicas it has now, else the ones its rollout started from.
    starting = ds.revision not in deployed
    initial = {} if starting else state.initial.get(slice_index, {})
    layout = []
    for revision, counts in deployed.items():
        old = revision != ds.revision
        layout.append((revision, [(role, n, initial.get(revision, {}).get(role, n) if old else None)
                                  for role, n in counts.items()]))
    if starting:
        # A template change the state does not know yet: the controller's "rollout started" step.
        layout.append((ds.revision, [(role.name, 0, None) for role in ds.roles]))
    return layout


def _revision_set(ds: DisaggregatedSet, record: RevisionRecord) -> DisaggregatedSet:
    """The set as it was when `record` was deployed: what its LWS are rendered from."""
    return replace(ds, placement=record.placement, roles=tuple(_role(r) for r in record.roles),
                       revision=record.revision)


def _role(record: RoleRecord) -> Role:
    return Role(record.name, 0, record.spec, record.labels, record.annotations, record.external)
