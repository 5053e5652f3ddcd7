"""The second executor of a pass: reconcile's actions land in a rollout state, not a cluster. Pure.

`gitops_step` runs a pass with it against the live LWS; `rules` replays a recorded step with it
to check that a state in git is one the planner wrote (one decision, one way to apply it).
"""

from __future__ import annotations

import contextlib

from kubectl_disagg.core import naming
from kubectl_disagg.core.model import DisaggregatedSet
from kubectl_disagg.core.reconcile import EXTERNAL_SEED_REPLICAS, SERVICE, Action, Annotate, Create, Delete, Scale
from kubectl_disagg.core.snapshot import Snapshot
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops.state import RolloutState, record_from_set


class _NoLease:
    """Git serialises writers (one pull request per step): no Lease to hold."""

    duration = 0

    def renew_if_due(self) -> None:
        pass


class StateExecutor:
    """`stepper.Executor` over a rollout state: reconcile's actions land in the document.

    `snapshot` hands out the live snapshot the step was decided on; each action rewrites the
    state as the cluster executor would rewrite the cluster. Services follow their revision's
    LWS in the render, so their creates and deletes need no record.
    """

    def __init__(self, ds: DisaggregatedSet, state: RolloutState, snapshot: Snapshot):
        self._ds, self._snapshot, self._name = ds, snapshot, state.name
        self._namespace = state.namespace
        self.records = dict(state.revisions)
        self.replicas = {s: {rev: dict(c) for rev, c in d.items()} for s, d in state.replicas.items()}
        self.initial = {s: {rev: dict(c) for rev, c in d.items()} for s, d in state.initial.items()}
        self._identities = {o.name: o.identity for o in snapshot.lws}

    def snapshot(self, set_name: str, namespace: str, *, scalers: bool = False) -> Snapshot:
        return self._snapshot

    def lease(self, set_name: str, namespace: str) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext(_NoLease())

    def wait_for_change(self, set_name: str, namespace: str, resource_version: str, timeout: float) -> bool:
        return False  # a state changes only by a commit: one pass per step

    def execute(self, action: Action, namespace: str) -> None:
        if action.kind == SERVICE:
            return
        if isinstance(action, Create):
            labels = action.object["metadata"]["labels"]
            slice_index, revision, role = (int(labels[naming.SLICE_LABEL]), labels[naming.REVISION_LABEL],
                                           labels[naming.ROLE_LABEL])
            replicas = action.object["spec"].get("replicas", EXTERNAL_SEED_REPLICAS)
            self._set(self.replicas, slice_index, revision, role, replicas)
            return
        identity = self._identities.get(action.name)
        if identity is None:
            raise UserError(f"leaderworkerset/{action.name} is not part of the rollout state")
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
