"""Where a paced rollout's position is kept (design §9.8): one protocol, two stores.

The rollout verbs (`rollout/verbs.py`) are written once, over a `PositionStore`; the command
picks the store from `--gitops`:

The same store is what `rollout history`, `rollout undo` and `rollout plan` read: the
revisions recorded for a set (`history`) and what a live plan starts from (`observe`).

- `ClusterStore` (here): the set's RolloutState object, read with the live LWS and written
  pinned to the resourceVersion read (a write in between is a `Conflict`, never lost); each
  set is its own transaction; the verb is recorded as an Event; who acted is the user the API
  server sees (a SelfSubjectReview).
- `gitops.store.GitStore`: the state file beside each set, decided from the committed state
  alone; every set's change is written together, one rename per file, then committed, or put
  back when the commit cannot be made (one transaction); a state file changed since it was read
  is a `Conflict` too, never written over; who acted is the git author.

tests/unit/rollout/test_store_contract.py holds the two to one contract: the same verbs over the
same fleet and position give the same exits, refusals, errors and positions in both.

The data both stores return (`PositionChange`) and the error both raise (`NotPaced`) live below
both, in core/delivery/change.py. `gitops/` sits below `rollout/` and implements the protocol
without importing it; `commands/` wires one store to the verbs (tests/unit/test_architecture.py
pins that direction).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api.model import DisaggregatedSet, namespace_for
from kubectl_disagg.core.controller.plan_inputs import Observed
from kubectl_disagg.core.controller.snapshot import live_from_snapshot
from kubectl_disagg.core.delivery.change import NotPaced, PositionChange
from kubectl_disagg.core.delivery.history import RevisionEntry, entries, forged, history_of
from kubectl_disagg.core.delivery.position import Position, timestamp
from kubectl_disagg.core.delivery.waves import WaveDecision, WaveEvent, admit
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.source import dotted
from kubectl_disagg.kube.lease import running_stepper
from kubectl_disagg.rollout.events import record_events
from kubectl_disagg.kube.seam import PacingSession
from kubectl_disagg.kube.who import cluster_user
from kubectl_disagg.rollout.progressive import (
    history_after, read_state, recorded_position, reference, rolling_steps, state_object, wave_events, write_state)

__all__ = ["ClusterStore", "PositionStore"]


class PositionStore(Protocol):
    """Where the verbs read a set's recorded position and write a new one.

    `together`: every set's change is decided before any is written, and a refusal writes
    nothing (git: one commit); else each set is written as it is decided (cluster)."""

    together: bool

    def sets(self) -> Sequence[tuple[DisaggregatedSet, str]]:
        """The sets to act on, each with its namespace."""

    def who(self) -> str:
        """Who acts, as the position records it (`by`)."""

    def change(self, ds: DisaggregatedSet, namespace: str, change: Callable[[WaveDecision], Position],
               now: datetime.datetime) -> PositionChange:
        """The decision as recorded, `change` applied to it (VerbRefused when it cannot apply),
        nothing written; NotPaced for a set without a RolloutPolicy."""

    def write(self, changes: Sequence[PositionChange]) -> list[PositionChange]:
        """Write `changes` (each `changed`) as one transaction (all or nothing); `Conflict` when
        what was read has changed since, nothing written (the caller reads and changes again)."""

    def record(self, change: PositionChange, event: WaveEvent) -> PositionChange:
        """After a write, the verb told where the rollout's history is kept (an Event; git's
        commit is its own record); `change` with the `stepper` running on its set, if any."""

    def history(self, ds: DisaggregatedSet, namespace: str) -> list[RevisionEntry]:
        """The revisions recorded for the set, oldest first (core/delivery/history.py's entries:
        the RolloutState's `history`, or git's commits of the set's file and of its state
        file); UserError where the record cannot be read, or holds an entry edited by hand."""

    def observe(self, ds: DisaggregatedSet, namespace: str) -> Observed:
        """What a live plan of the set starts from: the position recorded and what each slice
        runs (the live LWS, or what the state file deploys); nothing written."""


class ClusterStore:
    """The positions in the sets' RolloutState objects (rollout/progressive.py's object)."""

    together = False

    def __init__(self, cluster: PacingSession, sets: Sequence[DisaggregatedSet], namespace: str | None, *,
                 clock: Clock = SYSTEM_CLOCK, warn: Callable[[str], None] = lambda message: None):
        self.cluster, self._sets, self.namespace, self.clock, self.warn = cluster, sets, namespace, clock, warn

    def sets(self) -> list[tuple[DisaggregatedSet, str]]:
        return [(ds, namespace_for(ds, self.namespace, self.cluster.default_namespace)) for ds in self._sets]

    def who(self) -> str:
        return cluster_user(self.cluster)

    def change(self, ds: DisaggregatedSet, namespace: str, change: Callable[[WaveDecision], Position],
               now: datetime.datetime) -> PositionChange:
        """From a fresh read of the LWS and the RolloutState (the object to write is pinned to
        the resourceVersion read)."""
        if ds.policy is None:
            raise NotPaced(ds, namespace)
        snapshot = self.cluster.snapshot(ds.name, namespace, services=False)
        stored = read_state(self.cluster, ds.name, namespace)
        before = admit(ds, snapshot, recorded_position(stored, ds), self.clock.now()).decision
        position = change(before)
        after = admit(ds, snapshot, position, self.clock.now()).decision
        history = history_after(ds, stored, after, timestamp(self.clock.now()), self.who)
        return PositionChange(ds, namespace, before, after, state_object(ds, namespace, position, after, stored,
                                                                         history, rolling_steps(ds, snapshot)),
                              f"rolloutstate/{ds.name}")

    def write(self, changes: Sequence[PositionChange]) -> list[PositionChange]:
        return [replace(change, written=write_state(self.cluster, change.written)) for change in changes]

    def record(self, change: PositionChange, event: WaveEvent) -> PositionChange:
        record_events(self.cluster, wave_events(change.before, [event], reference(change.written)), self.clock,
                      self.warn)
        return replace(change, stepper=running_stepper(self.cluster.client, change.ds.name, change.namespace,
                                                            self.clock.now()))

    def history(self, ds: DisaggregatedSet, namespace: str) -> list[RevisionEntry]:
        """The entries of the set's RolloutState (none: never stepped here); refused where the
        cluster does not serve the kind, or where an entry's templates do not hash to its
        revision (`rolloutstate/NAME: history[i].revision: ...`, every such entry at once)."""
        stored = read_state(self.cluster, ds.name, namespace)
        problems = forged(stored)
        if problems:
            raise UserError([Problem(f"rolloutstate/{ds.name}", 0, dotted(path), message)
                             for path, message in problems])
        return entries(history_of(stored))

    def observe(self, ds: DisaggregatedSet, namespace: str) -> Observed:
        """The live LWS (and the autoscalers of external roles), and for a set under a policy
        the position in its RolloutState."""
        snapshot = self.cluster.snapshot(ds.name, namespace, scalers=ds.has_external_roles)
        recorded = recorded_position(read_state(self.cluster, ds.name, namespace), ds) if ds.policy is not None else None
        return Observed(recorded, live_from_snapshot(ds, snapshot), snapshot)
