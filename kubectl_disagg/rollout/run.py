"""`rollout step` as one library call over a store (`step`, `StepStore`): each set taken through
its looks and how it ended classified once, for both stores (`step_set`); the store gives only
its own, the looks: the cluster's (rollout/store.py `ClusterStore`: passes driven under the set's
Lease by `drive_looks`, `stepper.drive`, each recorded as Events) or git's (rollout/git_run.py
`GitStore`: rollout/git_step.py `looks`); and how the run ended as an exit code, from one table
for both (rollout/outcome.py `step_exit`).

No click and no formatting: what is shown goes to a `StepPrinter` (views/step_console.py),
passed in by the command. The exit codes are `exits.StepExit`, the command's contract (its
--help lists them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol

from kubectl_disagg.clock import Clock
from kubectl_disagg.core.api.durations import format_duration
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.reconcile import Admission
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.core.delivery.position import Position, Stamp
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import StepExit
from kubectl_disagg.rollout.outcome import step_exit
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.kube.lease import LeaseHeld, LeaseLost, LeaseWaitTimedOut
from kubectl_disagg.wait import NEVER, Deadline
from kubectl_disagg.rollout.events import events_for, record_events
from kubectl_disagg.rollout.analysis import AnalysisTimeout, GateRun, gate_analysis
from kubectl_disagg.rollout.progressive import Progressive, recorded_position
from kubectl_disagg.rollout.stepper import Admit, Look, Pass, PassInterrupted, Retry, drive, pass_outcome
from kubectl_disagg.rollout.git_step import SetStep


class StepPrinter(Protocol):
    """Where a run of `rollout step` shows itself: reports, progress, warnings and errors."""

    def show(self, event: Pass | Retry, *, until_complete: bool) -> None:
        """A pass (or a retry) as it ends."""

    def report(self, step: Pass, *, only_changed: bool = False) -> None: ...

    def warn(self, message: str, *, once: bool = False) -> None: ...

    def error(self, lines: list[str]) -> None: ...

    def finished(self, step: Pass) -> None:
        """The last pass of --until-complete: the set is complete."""

    def refused_writes(self, step: Pass) -> None:
        """A server dry run whose writes the API server would refuse: each, and why."""

    def analysis_progress(self, gate: str) -> Callable[[GateRun], None]:
        """Where an analysis gate's run shows its progress (rollout/analysis.py's GateRun)."""

    def written(self, results: Sequence[SetStep], how: StepOptions, revision: str | None) -> None:
        """A run through git, as written: each set's step, the sets whose --wait ran out, the
        pull request's description (`how.pr_description`) and the commit `revision` made."""


@dataclass(frozen=True)
class StepOptions:
    """How `rollout step` runs, its flags read once by the command (design §9.7).

    `until_complete`: passes until each set is complete, one set after another, the first that
    does not complete stopping the run; `deadline` (--timeout) bounds it, the lease queue of
    `wait_for_lease` and an analysis gate's run in every step (with --gitops, `wait` too).
    `dry_run`: CLIENT or SERVER (rollout/stepper.py), None for a real step. `revision_services`
    False: a stored set without its per-revision Services (--no-revision-services). Through git
    (`rollout.git_run.GitStore`): `wait` watches until the step can advance, `commit` commits the
    states written (on a new `branch`), `pr_description` is where the pull request's text goes,
    `state_file` the explicit state file of one set."""

    until_complete: bool = False
    dry_run: str | None = None
    deadline: Deadline = NEVER
    max_in_flight: int = 1
    wait_for_lease: bool = False
    ignore_controller: bool = False
    ignore_rollout_state: bool = False
    revision_services: bool = True
    quiet: bool = False
    wait: bool = False
    commit: bool = False
    branch: str | None = None
    pr_description: str | None = None
    state_file: str | None = None

    @property
    def passes_deadline(self) -> Deadline:
        """What bounds the passes of one set: the deadline when they repeat or queue, else none
        (a single pass runs once it has the lease)."""
        return self.deadline if self.until_complete or self.wait_for_lease else NEVER


class StepStore(Protocol):
    """What `step` asks of a store (design §9.8; rollout/store.py `Store` is it with the verbs'
    part): the sets, each set's looks (observed and decided; the cluster lands each pass's writes
    under the set's Lease as it goes) and the run's transaction (git: every state file, then one
    commit; the cluster: nothing left, each pass wrote). How a set's run ended is classified once
    (`step_set`), and the exit code is the run's, from one table (rollout/outcome.py
    `step_exit`), whatever the store.

    `together`: the sets are written together, at the end (git): what the run did is shown when
    it is written (`write_run`); else each pass lands and is shown as it runs (the cluster), and
    how each set ended is said as it ends."""

    together: bool

    def targets(self, how: StepOptions, printer: StepPrinter) -> Sequence[tuple[DisaggregatedSet, str]] | None:
        """The sets to step, each with its namespace; None: the run is refused (said on `printer`)."""

    def looks(self, ds: DisaggregatedSet, namespace: str, how: StepOptions,
              printer: StepPrinter) -> Iterator[Look[Any]]:
        """The looks of one set's run, each with the store's verdict, as they are taken: one, or
        (the cluster's --until-complete, git's --wait) until one is settled or the run's deadline
        passes. Only the store's own goes here: where a pass's actions land and how the next
        look is taken and waited for."""

    def write_run(self, outcomes: Sequence[Outcome], how: StepOptions, printer: StepPrinter) -> list[Outcome]:
        """The run's writes, one transaction, shown on `printer` (git: what each set's step wrote);
        the sets' outcomes as written (git: a directory's sets step together, so one that cannot
        step holds the others)."""


def step(store: StepStore, printer: StepPrinter, how: StepOptions = StepOptions()) -> StepExit:
    """`rollout step` over a store: each of its sets stepped, one after another (with
    --until-complete, the first that does not complete stops the run), the store's transaction
    written; the exit code. An analysis gate without a verdict that a store lets out (one whose
    sets are written together, so nothing of the run is) ends the run, nothing written."""
    sets = store.targets(how, printer)
    if sets is None:
        return step_exit([Outcome.REFUSED])
    outcomes: list[Outcome] = []
    try:
        for ds, namespace in sets:
            outcome = step_set(store, ds, namespace, how, printer)
            outcomes.append(outcome)
            if how.until_complete and outcome != Outcome.FINISHED:
                break  # sets roll one after another: the first that does not complete stops the run
    except AnalysisTimeout as err:  # no verdict: nothing is recorded, the next step measures again
        printer.error([f"{line}; nothing written" for line in err.lines()])
        return step_exit([Outcome.TIMEOUT])
    return step_exit(store.write_run(outcomes, how, printer))


def step_set(store: StepStore, ds: DisaggregatedSet, namespace: str, how: StepOptions, printer: StepPrinter) -> Outcome:
    """One set taken through its looks (`store.looks`), and how it ended, for both stores: the
    last look's verdict, or TIMEOUT where the run ran out of time before a look settled. A set
    that could not be taken (its Lease held, lost, or queued for past the deadline) is REFUSED
    or TIMEOUT; an analysis gate without a verdict times out a set whose passes land as they go
    (a store that writes together lets it out: `step`). A store that shows each pass as it
    runs (not `together`) has the end said here; the other's report is its `write_run`'s."""
    last: Look[Any] | None = None
    changed = False  # whether any pass of this run wrote: a held run's last line says so
    try:
        for last in store.looks(ds, namespace, how, printer):
            changed = changed or last.wrote
    except (LeaseWaitTimedOut, LeaseHeld, LeaseLost, AnalysisTimeout) as err:
        if store.together and isinstance(err, AnalysisTimeout):
            raise
        printer.error(err.lines())
        outcome = Outcome.REFUSED if isinstance(err, (LeaseHeld, LeaseLost)) else Outcome.TIMEOUT
    else:
        outcome = last.outcome if last is not None and last.settled else Outcome.TIMEOUT
        if not store.together:
            _ended(last, outcome, changed, ds, namespace, printer)
    if outcome == Outcome.TIMEOUT and how.until_complete and not store.together:
        printer.error([f"timed out after {format_duration(how.deadline.seconds or 0)}: "
                       f"disaggregatedset/{ds.name} in {namespace} is not complete; the rollout stays where it "
                       "is, run the command again to continue"])
    return outcome


def _ended(last: Look[Any] | None, outcome: Outcome, changed: bool, ds: DisaggregatedSet, namespace: str,
           printer: StepPrinter) -> None:
    """How a set's run ended, said where its last pass did not say it."""
    if last is None or not isinstance(last.event, Pass):
        return
    passed = last.event
    if outcome == Outcome.REFUSED:
        printer.error([f"refusing to step disaggregatedset/{ds.name} in {namespace}:",
                       *(f"  {reason}" for reason in passed.refusal)])
    elif outcome == Outcome.ERROR:
        printer.refused_writes(passed)
    elif outcome == Outcome.HELD:
        done = "this run changed it (above) and stops here" if changed else "nothing was changed"
        printer.error([f"disaggregatedset/{ds.name} in {namespace} is held; {done}:",
                       *(f"  {reason}" for reason in passed.stopped), *(f"  {line}" for line in last.notes)])
    elif outcome == Outcome.FINISHED:
        printer.finished(passed)


def drive_looks(cluster: Any, ds: DisaggregatedSet, namespace: str, printer: StepPrinter, options: StepOptions,
                regarding: dict[str, Any] | None = None) -> Iterator[Look[None]]:
    """The cluster's looks at one set (`store.ClusterStore.looks`): driven pass after pass under
    its Lease (`stepper.drive`), each pass shown and recorded as Events as it ends; its verdict
    (`stepper.pass_outcome`): a refusal, refused writes or a hold end the run; else ADVANCED (a
    pass ran), with `until_complete` FINISHED where the set is complete, and the passes repeat
    until it is. A held set's look says who braked while the run went."""
    brakes = None
    dry_run, clock = options.dry_run, options.deadline.clock  # the command's clock
    paced: dict[str, Any]
    if ds.policy is None:  # no pacing: only a RolloutState a removed policy left is brought to the truth
        paced = {"admit": Progressive(cluster, namespace, dry_run=bool(dry_run), clock=clock, warn=printer.warn).admit}
    else:
        brakes = None if dry_run else Brakes(cluster, ds, namespace)
        progressive = Progressive(cluster, namespace, dry_run=bool(dry_run), clock=clock, warn=printer.warn,
                                  analyze=gate_analysis(cluster, options.deadline, printer.analysis_progress,
                                                        None if brakes is None else brakes.during_analysis))
        paced = {"admit": progressive.admit} if brakes is None else {"admit": brakes.admit(progressive),
                                                                     "braked": brakes.moved}
    until_complete = options.until_complete
    last: Look[None] | None = None  # each look is yielded once the next is taken: the last after the Lease is let go
    try:
        with contextlib.closing(drive(cluster, ds, namespace, until_complete=until_complete, dry_run=dry_run,
                                      deadline=options.passes_deadline, max_in_flight=options.max_in_flight,
                                      wait_for_lease=options.wait_for_lease, **paced)) as passes:
            for event in passes:
                printer.show(event, until_complete=until_complete)
                _record(cluster, printer, event.partial if isinstance(event, Retry) else event, regarding, clock)
                if last is not None:
                    yield last
                last = _cluster_look(event, until_complete)
    except PassInterrupted as interrupted:
        if interrupted.partial.done:
            printer.report(interrupted.partial, only_changed=until_complete)
            _record(cluster, printer, interrupted.partial, regarding, clock)
        raise interrupted.user_error() from None
    if last is not None:
        yield replace(last, notes=tuple(brakes.applied())) if last.outcome == Outcome.HELD and brakes else last


def _cluster_look(event: Pass | Retry, until_complete: bool) -> Look[None]:
    """A cluster pass as a look: its verdict, and whether the run stops at it."""
    if isinstance(event, Retry):
        return Look(Outcome.WAITING, settled=False, event=event)  # read again (until the deadline)
    verdict = pass_outcome(event)
    if verdict in (Outcome.REFUSED, Outcome.ERROR, Outcome.HELD):
        return Look(verdict, event=event)
    if not until_complete:
        return Look(Outcome.ADVANCED, event=event)  # a pass ran
    if verdict == Outcome.COMPLETE:
        return Look(Outcome.FINISHED, event=event)
    return Look(verdict, settled=False, event=event)  # passes repeat until the set is complete


BRAKES = (("paused", "paused"), ("aborted", "aborted"), ("full", "promoted --full"))  # Position field, its verb


def _stamps(position: Position | None) -> dict[str, Stamp | None]:
    return {field: getattr(position, field) if position is not None else None for field, _ in BRAKES}


class Brakes:
    """A running stepper's view of the brakes (design §9.5): `rollout pause`, `abort` and
    `promote --full` write the set's position without its Lease, so the stepper reads it back at
    each boundary: every pass reads it (`Progressive.admit`); while the set waits, each quiet
    watch asks `moved`; while an analysis is measured, each wait asks `during_analysis`. Each
    is one GET of the RolloutState. A brake found stops the stepper there: the next pass holds
    (a pause) or turns back (an abort), and `applied` says who braked while the run went."""

    def __init__(self, cluster: Any, ds: DisaggregatedSet, namespace: str):
        self.cluster, self.ds, self.namespace = cluster, ds, namespace
        self.first: dict[str, Stamp | None] | None = None  # the stamps when the run began (None: not read yet)
        self.seen: dict[str, Stamp | None] | None = None  # the stamps the latest pass decided from

    def admit(self, progressive: Progressive) -> Admit:
        """`progressive.admit`, keeping the stamps each pass decided from (and those the run
        began with)."""
        def admit(ds: DisaggregatedSet, snapshot: Snapshot) -> tuple[DisaggregatedSet, Admission]:
            if self.first is None:
                self.first = _stamps(self._position())
            admitted = progressive.admit(ds, snapshot)
            self.seen = _stamps(progressive.passage.decision.position if progressive.passage else None)
            return admitted
        return admit

    def moved(self) -> bool:
        """Whether a brake was applied since the latest pass read the position."""
        return self.seen is not None and any(
            stamp is not None and stamp != self.seen[field] for field, stamp in _stamps(self._position()).items())

    def during_analysis(self, ds: object, namespace: str) -> str | None:
        """A brake applied while an analysis is measured (it runs at a gate, where nothing is
        paused, aborted or promoted --full), in words; None when there is none."""
        stamps = _stamps(self._position())
        return next((f"the rollout was {verb} by {stamp.by} at {stamp.at}"
                     for field, verb in BRAKES if (stamp := stamps[field]) is not None), None)

    def applied(self) -> list[str]:
        """Who paused or aborted the rollout while this run went, and what the run did about it
        (an analysis's own onFailure is the step's, not a brake)."""
        if self.first is None:
            return []
        stamps, lines = _stamps(self._position()), []
        for field, verb in BRAKES[:2]:
            stamp = stamps[field]
            if stamp is None or stamp == self.first[field] or stamp.by == "analysis":
                continue
            done = ("this step stopped at its next boundary" if field == "paused" else
                    "this step turned back at its next boundary and rolled the started slices back")
            lines.append(f"the rollout was {verb} by {stamp.by} at {stamp.at} while this step ran: {done}")
        return lines

    def _position(self) -> Position | None:
        try:
            return recorded_position(self.cluster.rollout_state(self.ds.name, self.namespace), self.ds)
        except UserError:
            return None  # unreadable now: the next pass reads it and says why


def _record(cluster: Any, printer: StepPrinter, step: Pass, regarding: dict[str, Any] | None, clock: Clock) -> None:
    """What the pass did, as Events (see `events`): a history aid, so a failure only warns."""
    record_events(cluster, events_for(step, regarding), clock, lambda message: printer.warn(message, once=True))
