"""Where a paced rollout's position is kept (design §9.8): one protocol (`Store`), one store per
mode, each the only object its mode's commands act through.

The rollout verbs (`rollout/verbs.py`) are written once, over the store's `PositionStore` part;
`rollout history`, `rollout undo` and `rollout plan` read the same part: the revisions recorded
for a set (`history`) and what a live plan starts from (`observe`). `rollout step` is one run
(rollout/run.py `step`) over its `StepStore` part: the sets, each set's step, the run's
transaction. The command picks the store from `--gitops`:

- `ClusterStore` (here): the set's RolloutState object, read with the live LWS and written
  pinned to the resourceVersion read (a write in between is a `Conflict`, never lost); each
  set is its own transaction; the verb is recorded as an Event; who acted is the user the API
  server sees (a SelfSubjectReview). A step drives each set under its Lease, each pass landing
  the objects and the RolloutState as it runs (`run.drive_looks`).
- rollout/git_run.py `GitStore`: the state file beside each set, decided from the committed
  state alone (a step: and the live LWS); every set's change is written together, one rename
  per file, then committed, or put back when the commit cannot be made (one transaction,
  gitops/store.py `write_states`); a state file changed since it was read is a `Conflict` too,
  never written over; who acted is the git author.

tests/unit/rollout/test_store_contract.py holds the two to one contract: the same verbs over the
same fleet and position give the same exits, refusals, errors and positions in both; the type
checker holds each to `Store` (tests/unit/test_seams.py).

The data both stores return (`PositionChange`) and the error both raise (`NotPaced`) live below
both, in core/delivery/change.py; what is git's alone (the state file, its rules, the writer,
git's log) in `gitops/`, which never imports `rollout/`; `commands/` wires one store to the
rollout (tests/unit/test_architecture.py pins that direction).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, Protocol

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.controller.ownership import reconciled_by_controller
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.core.delivery.sets import set_from_object
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
from kubectl_disagg.rollout.events import record_events, set_reference
from kubectl_disagg.kube.seam import PacingSession, StoredSets
from kubectl_disagg.kube.who import cluster_user
from kubectl_disagg.rollout.progressive import (
    history_after, read_state, recorded_position, reference, rolling_steps, state_object, wave_events, with_stored_policy,
    write_state)
from kubectl_disagg.rollout.run import StepOptions, StepPrinter, StepStore, drive_looks
from kubectl_disagg.rollout.stepper import Look
from kubectl_disagg.views.stops import reconciled_sentence

__all__ = ["ClusterStore", "PositionStore", "Store"]


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


class SteppingSession(PacingSession, StoredSets, Protocol):
    """What the cluster's store calls on its session: the pacing reads and writes, and the
    stored set a step by NAME reads."""


class ClusterStore:
    """The positions in the sets' RolloutState objects (rollout/progressive.py's object), of
    `sets` (from files) or, for a step, of the set `name` stored in the cluster.

    A step drives each set pass after pass under its Lease (`run.drive_looks`), each pass's writes
    landing as it runs: no transaction is left for the run."""

    together = False

    def __init__(self, cluster: SteppingSession, sets: Sequence[DisaggregatedSet] | None, namespace: str | None = None,
                 *, name: str | None = None, clock: Clock = SYSTEM_CLOCK,
                 warn: Callable[[str], None] = lambda message: None):
        self.cluster, self._sets, self.namespace, self.name = cluster, sets, namespace, name
        self.clock, self.warn = clock, warn
        self.regarding: dict[str, Any] | None = None  # a file: each event regards the LeaderWorkerSet it is about

    def sets(self) -> list[tuple[DisaggregatedSet, str]]:
        return [(ds, namespace_for(ds, self.namespace, self.cluster.default_namespace)) for ds in self._sets or ()]

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

    def targets(self, how: StepOptions, printer: StepPrinter) -> list[tuple[DisaggregatedSet, str]] | None:
        """The sets of the files, or the set `name` stored in the cluster (with its RolloutPolicy),
        refused where a DisaggregatedSet controller reconciles it (unless `how.ignore_controller`)."""
        if self._sets is not None:
            return self.sets()
        assert self.name is not None  # the command asks for NAME or -f
        stored = self.cluster.get_set(self.name, self.namespace or self.cluster.default_namespace)
        signs = [] if how.ignore_controller else reconciled_by_controller(stored)
        if signs:
            printer.error([f"refusing to step disaggregatedset/{self.name}:",
                           f"  {reconciled_sentence(self.name, signs)}"])
            return None
        ds = set_from_object(stored)
        ds = ds if how.revision_services else replace(ds, revision_services=False)
        self.regarding = set_reference(stored)
        ds = with_stored_policy(self.cluster, ds, self.namespace or self.cluster.default_namespace)
        return [(ds, namespace_for(ds, self.namespace, self.cluster.default_namespace))]

    def looks(self, ds: DisaggregatedSet, namespace: str, how: StepOptions, printer: StepPrinter) -> Iterator[Look[None]]:
        """The set driven under its Lease, each pass landing, shown and recorded as it runs
        (`run.drive_looks`)."""
        return drive_looks(self.cluster, ds, namespace, printer, how, self.regarding)

    def write_run(self, outcomes: Sequence[Outcome], how: StepOptions, printer: StepPrinter) -> list[Outcome]:
        """Nothing left: each pass wrote as it ran, under the set's Lease."""
        return list(outcomes)


class Store(PositionStore, StepStore, Protocol):
    """A mode's one store (`ClusterStore`; git's, rollout/git_run.py `GitStore`): the verbs',
    history's, undo's and plan's part (`PositionStore`) and the step's (rollout/run.py
    `StepStore`), over the same recorded position."""
