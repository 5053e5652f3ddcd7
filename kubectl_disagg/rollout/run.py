"""`rollout step` as one library call over a store (`step`, `StepStore`): the cluster's
(rollout/store.py `ClusterStore`: each set driven by `drive_set`, `stepper.drive`, what each pass
did recorded as Events) or git's (rollout/git_run.py `GitStore`); and how the run ended as an
exit code, from one table for both (rollout/outcome.py `step_exit`).

No click and no formatting: what is shown goes to a `StepPrinter` (views/step_console.py),
passed in by the command. The exit codes are `exits.StepExit`, the command's contract (its
--help lists them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from kubectl_disagg.clock import Clock
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
from kubectl_disagg.rollout.stepper import Admit, Pass, PassInterrupted, Retry, drive
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
    part): the sets, each set's step (observed and decided; the cluster lands each pass's writes
    under the set's Lease as it goes) and the run's transaction (git: every state file, then one
    commit; the cluster: nothing left, each pass wrote). The exit code is the run's, from one
    table (rollout/outcome.py `step_exit`), whatever the store."""

    def targets(self, how: StepOptions, printer: StepPrinter) -> Sequence[tuple[DisaggregatedSet, str]] | None:
        """The sets to step, each with its namespace; None: the run is refused (said on `printer`)."""

    def step_set(self, ds: DisaggregatedSet, namespace: str, how: StepOptions, printer: StepPrinter) -> Outcome:
        """Step one set: how it ended."""

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
            outcome = store.step_set(ds, namespace, how, printer)
            outcomes.append(outcome)
            if how.until_complete and outcome != Outcome.FINISHED:
                break  # sets roll one after another: the first that does not complete stops the run
    except AnalysisTimeout as err:  # no verdict: nothing is recorded, the next step measures again
        printer.error([f"{line}; nothing written" for line in err.lines()])
        return step_exit([Outcome.TIMEOUT])
    return step_exit(store.write_run(outcomes, how, printer))


def drive_set(cluster: Any, ds: DisaggregatedSet, namespace: str, printer: StepPrinter, options: StepOptions,
              regarding: dict[str, Any] | None = None) -> Outcome:
    """The cluster's step of one set (`store.ClusterStore.step_set`): driven pass after pass under
    its Lease (`stepper.drive`), each pass shown and recorded as Events; how it ended (ADVANCED: a
    pass ran; FINISHED: with `until_complete`, the set is complete)."""
    last = None
    brakes = None
    changed = False  # whether any pass of this run wrote: a held run's last line says so
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
    try:
        with contextlib.closing(drive(cluster, ds, namespace, until_complete=until_complete, dry_run=dry_run,
                                      deadline=options.passes_deadline, max_in_flight=options.max_in_flight,
                                      wait_for_lease=options.wait_for_lease, **paced)) as passes:
            for last in passes:
                printer.show(last, until_complete=until_complete)
                _record(cluster, printer, last.partial if isinstance(last, Retry) else last, regarding, clock)
                changed = changed or bool((last.partial if isinstance(last, Retry) else last).done)
    except (LeaseWaitTimedOut, AnalysisTimeout) as err:
        printer.error(err.lines())
        return Outcome.TIMEOUT
    except (LeaseHeld, LeaseLost) as err:
        printer.error(err.lines())
        return Outcome.REFUSED
    except PassInterrupted as interrupted:
        if interrupted.partial.done:
            printer.report(interrupted.partial, only_changed=until_complete)
            _record(cluster, printer, interrupted.partial, regarding, clock)
        raise interrupted.user_error() from None
    if isinstance(last, Pass) and last.refusal:
        printer.error([f"refusing to step disaggregatedset/{ds.name} in {namespace}:",
                       *(f"  {reason}" for reason in last.refusal)])
        return Outcome.REFUSED
    if isinstance(last, Pass) and last.refused_writes:
        printer.refused_writes(last)
        return Outcome.ERROR
    if isinstance(last, Pass) and last.stopped and not last.done:
        done = "this run changed it (above) and stops here" if changed else "nothing was changed"
        printer.error([f"disaggregatedset/{ds.name} in {namespace} is held; {done}:",
                       *(f"  {reason}" for reason in last.stopped),
                       *(f"  {line}" for line in (brakes.applied() if brakes is not None else ()))])
        return Outcome.HELD
    if not until_complete:
        return Outcome.ADVANCED
    if isinstance(last, Pass) and last.complete:
        printer.finished(last)
        return Outcome.FINISHED
    return Outcome.TIMEOUT


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
