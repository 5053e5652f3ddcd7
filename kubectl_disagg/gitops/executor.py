"""The second executor of a pass: reconcile's actions land in a rollout state, not a cluster.

`gitops_step` runs its one pass with it over the live LWS; `rules` replays a recorded step with it
to check that a state in git is one the planner wrote (one decision, one way to apply it).
"""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.reconcile import EXTERNAL_SEED_REPLICAS, Action, Annotate, Create, Delete, Scale
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops.state import RolloutState, record_from_set
from kubectl_disagg.manifests.source import JsonObject

Counts = dict[int, dict[str, dict[str, int]]]  # slice → revision → role → count


class StateExecutor:
    """The `executors.PassExecutor` of a rollout state (what `run_pass` uses; the type checker
    holds it to the protocol, tests/unit/gitops/test_executor.py): reconcile's actions land in
    the document, each rewriting the state as the cluster executor would rewrite the cluster.
    `snapshot` hands out the live state the step was decided on. Services follow their
    revision's LWS in the render, so their creates and deletes need no record. No lease, no
    watch and no permission check: git serialises writers and review is both.
    """

    def __init__(self, ds: DisaggregatedSet, state: RolloutState, live: Snapshot):
        self._ds, self._snapshot = ds, live
        self._name, self._namespace = state.name, state.namespace
        self.records = dict(state.revisions)
        self.replicas: Counts = {s: {rev: dict(c) for rev, c in d.items()} for s, d in state.replicas.items()}
        self.initial: Counts = {s: {rev: dict(c) for rev, c in d.items()} for s, d in state.initial.items()}
        # (an LWS whose labels are incomplete is None: reconcile refuses it, so no action names it)
        self._placed = {o.name: o.identity.placed for o in live.lws}

    def snapshot(self, set_name: str, namespace: str, *, scalers: bool = False) -> Snapshot:
        return self._snapshot

    def authorize(self, actions: Sequence[Action], namespace: str) -> None:
        pass  # a state file is written by whoever may commit it

    def occupants(self, names: Sequence[tuple[str, str]], namespace: str) -> dict[tuple[str, str], JsonObject]:
        return {}  # a state writes no cluster object: Argo CD applies the render, as its owner

    def execute(self, action: Action, namespace: str, *, dry_run: bool = False) -> None:
        if action.kind == naming.SERVICE_KIND:
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
        placed = self._placed.get(action.name)
        if placed is None:
            raise UserError(f"leaderworkerset/{action.name} is not part of the rollout state")
        if dry_run:
            return  # judged (it is part of the state), not landed
        slice_index, revision, role = placed.slice, placed.revision, placed.role
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

    def _set(self, table: Counts, slice_index: int, revision: str, role: str, value: int) -> None:
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
