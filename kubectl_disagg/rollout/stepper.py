"""Stepping a set, as a library: passes of `reconcile` carried out by an executor.

About 500 lines on purpose: a pass (its read, its units and their undo) and the loop of passes
are kept together, so every way a pass ends (written, interrupted, retried, braked) is one place,
and what a pass comes to is read once for both modes (`pass_outcome`); a run of `rollout step`
sees each set's passes as `Look`s (rollout/run.py `step_set`).

A pass reads a snapshot, reconciles it and carries out the actions (or, in a dry run, only
describes them: one `PlannedAction` per action, with the object it starts from and the one it
leaves, which views/action_detail.py draws as YAML, a diff and a JSON patch; a server dry run
also sends each write with dryRun=All and keeps the API server's verdict on it).
`drive` holds the set's Lease and repeats passes, waiting for the next change in between,
until the set is complete, refused, or out of time.

Where actions land is an executor (rollout/executors.py): a pass runs over any `PassExecutor`
(the cluster's, or a rollout state's: `gitops.executor.StateExecutor`), `drive` over the
cluster's `Executor` only. No click, no printing, no pictures.
"""

from __future__ import annotations

import contextlib
import functools
import math
import random
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.kube.client import ApiError
from kubectl_disagg.wait import NEVER, WATCH_SLICE_SECONDS, Deadline, until_settled
from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.ownership import controller_owned
from kubectl_disagg.errors import Conflict, Unreachable, UserError
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.provenance import unrendered
from kubectl_disagg.core.controller.reconcile import Action, Admission, Annotate, Create, Reconciliation, Scale, undo, write_units
from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.controller.render import deep_copy_object
from kubectl_disagg.core.controller.snapshot import Snapshot, occupied_by_others
from kubectl_disagg.rollout.executors import Executor, HeldLease, PassExecutor
from kubectl_disagg.rollout.write_scheduler import run_units
from kubectl_disagg.views.stops import owned_sentence

CONFLICT_BACKOFF_SECONDS = 0.5
# A unit cut short is taken back however long the API server takes to answer again (a restart,
# a permission restored): until the run's deadline, and for at least one lease term.
UNDO_PATIENCE_SECONDS = 30.0
UNDO_BACKOFF_SECONDS = (0.1, 2.0)  # the first wait between undo attempts, and the longest
CLIENT, SERVER = "client", "server"  # dry runs: described only; also judged by the API server


# --- one pass ---------------------------------------------------------------------------------


Admit = Callable[[DisaggregatedSet, Snapshot], tuple[DisaggregatedSet, Admission]]


def reconcile_for_step(ds: DisaggregatedSet, snapshot: Snapshot, admit: Admit | None = None, *,
                       provenance: bool = False) -> Reconciliation:
    """`reconcile`, refused outright when the upstream controller owns the set (see `controller`);
    with `provenance` (the cluster's passes: there every LWS of the set must be ours), also when
    an LWS of the set is not the one its revision renders (see `core.controller.provenance`); with `admit`
    (a RolloutPolicy's pass: rollout/progressive.py), over the slices it admits and toward the
    set it says (the stable revision after an abort)."""
    owned = controller_owned(ds.name, snapshot)
    if owned:
        return Reconciliation((), (), (owned_sentence(ds.name, owned),))
    if admit is None:
        result = reconcile(ds, snapshot)
    else:
        target, admission = admit(ds, snapshot)
        result = reconcile(target, snapshot, admission)
    foreign = unrendered(ds, snapshot) if provenance else ()
    return Reconciliation((), (), (*result.problems, *foreign), result.warnings) if foreign else result


def read_and_reconcile(executor: PassExecutor, ds: DisaggregatedSet, namespace: str, admit: Admit | None = None, *,
                       provenance: bool = False) -> tuple[Snapshot, Reconciliation]:
    """Read the set and reconcile, then make sure every name the pass would create is free.

    The snapshot holds what carries the set's labels; an object without them (a plain
    `kubectl create`, another tool's) at a name this pass would create is found only by asking
    for that name. Found, it blocks its slice, which refuses the whole pass before its first
    write (exit 3 in `rollout step`), naming the object and who holds it. `provenance`: see
    `reconcile_for_step` (a git-driven step's LWS are applied by Argo CD, not by us).
    """
    snapshot = executor.snapshot(ds.name, namespace, scalers=ds.has_external_roles)
    result = reconcile_for_step(ds, snapshot, admit, provenance=provenance)
    # RoleScalers are listed whole (every one in the namespace): their names are known already.
    creates = [(action.kind, action.name) for action in result.actions
               if isinstance(action, Create) and action.kind != naming.SCALER_KIND]
    occupied = occupied_by_others(ds.name, executor.occupants(creates, namespace)) if creates else {}
    if occupied:
        snapshot = replace(snapshot, occupied=occupied)
        result = reconcile_for_step(ds, snapshot, admit, provenance=provenance)
    return snapshot, result


@dataclass(frozen=True)
class PlannedAction:
    """One action of a pass, with (in a dry run) what it does to its object, as data.

    `before` is the live object a change starts from, as read (None for a create); `after` the
    object the action leaves: a create's whole object, or `before` changed by this step. Both
    None outside a dry run, for a delete, and for a change of an object that was not read.
    """

    action: Action
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None
    refusal: UserError | None = None  # a server dry run: why the API server refused the write
    answer: Mapping[str, Any] | None = None  # the API server's answer (its metav1.Status) behind `refusal`

    @property
    def slice(self) -> int:
        return self.action.slice


@dataclass(frozen=True)
class Pass:
    """What one pass over one set saw and did."""

    ds: DisaggregatedSet
    namespace: str
    snapshot: Snapshot
    reconciliation: Reconciliation
    planned: tuple[PlannedAction, ...] = ()  # one per reconciliation action, in order
    done: tuple[Action, ...] = ()  # those carried out, in planned order
    dry_run: str | None = None  # CLIENT or SERVER in a dry run (kubectl's --dry-run values)

    @property
    def refusal(self) -> tuple[str, ...]:
        """Why nothing was done (reconcile's verdict); empty when the pass ran."""
        return self.reconciliation.refusal

    @property
    def complete(self) -> bool:
        return self.reconciliation.complete

    @property
    def stopped(self) -> tuple[str, ...]:
        """Why a RolloutPolicy holds the rollout still (a gate, a pause, an abort over)."""
        return self.reconciliation.stopped

    def shown(self) -> list[PlannedAction]:
        """The actions to list: planned ones (with detail) in a dry run, else those carried out."""
        if self.refusal:
            return []
        if self.dry_run:
            return list(self.planned)
        return [PlannedAction(action) for action in self.done]

    @property
    def refused_writes(self) -> list[PlannedAction]:
        """A server dry run's writes the API server refused, in planned order."""
        return [planned for planned in self.planned if planned.refusal is not None]


def pass_outcome(passed: Pass) -> Outcome:
    """What one pass alone comes to, in both modes (the cluster's passes, git's over a
    `StateExecutor`): REFUSED (reconcile's refusal), ERROR (a server dry run's refused writes),
    HELD (a RolloutPolicy holds it still, nothing done), ADVANCED (it carried out actions),
    WAITING (nothing to do yet: it waits for the LWS), COMPLETE (nothing left to roll)."""
    if passed.refusal:
        return Outcome.REFUSED
    if passed.refused_writes:
        return Outcome.ERROR
    if passed.stopped and not passed.done:
        return Outcome.HELD
    if passed.done:
        return Outcome.ADVANCED
    return Outcome.COMPLETE if passed.complete else Outcome.WAITING


SETTLED = (Outcome.REFUSED, Outcome.ERROR, Outcome.HELD, Outcome.COMPLETE)  # passes a repeating run stops at


Kept = TypeVar("Kept")


@dataclass(frozen=True)
class Look(Generic[Kept]):
    """One look a run of `rollout step` took at a set, as its store yields it (rollout/run.py
    `step_set` takes a set through its looks and classifies the last one, for both stores).

    `outcome` is the store's verdict on this look; `settled` whether the run stops at it (a run
    whose last look is unsettled ran out of time); `event` the pass (or retry) it ran, where one
    ran; `kept` what the store keeps of it (git: the step, rollout/git_step.py `GitopsStep`);
    `notes` lines a held set's message adds (who braked while the run went)."""

    outcome: Outcome
    settled: bool = True
    event: Pass | Retry | None = None
    kept: Kept | None = None
    notes: tuple[str, ...] = ()

    @property
    def wrote(self) -> bool:
        """Whether its pass carried out any action (a retry: before it was cut short)."""
        passed = self.event.partial if isinstance(self.event, Retry) else self.event
        return passed is not None and bool(passed.done)


class PassInterrupted(Exception):
    """An action failed mid-pass; `partial` lists those carried out before it (and kept)."""

    def __init__(self, partial: Pass, error: UserError, undo_notes: list[str] | None = None):
        super().__init__(str(error))
        self.partial, self.error, self.undo_notes = partial, error, list(undo_notes or ())

    def user_error(self) -> UserError:
        total, done = len(self.partial.reconciliation.actions), len(self.partial.done)
        note = (f"{done} of the pass's {total} actions were carried out before this one; the rest were "
                "not attempted" if done else "no action of this pass was carried out")
        return UserError([*self.error.lines(), *self.undo_notes, note])


def plan_pass(executor: PassExecutor, ds: DisaggregatedSet, namespace: str, admit: Admit | None = None) -> Pass:
    """A (client) dry run: read and reconcile, change nothing, not even the Lease."""
    snapshot, result = read_and_reconcile(executor, ds, namespace, admit, provenance=True)
    return Pass(ds, namespace, snapshot, result, _described(result.actions, snapshot), dry_run=CLIENT)


def check_pass(executor: Executor, ds: DisaggregatedSet, namespace: str, *, max_in_flight: int = 1,
               admit: Admit | None = None) -> Pass:
    """A server dry run: the pass `run_pass` would make, each write sent with dryRun=All.

    The same read, reconcile, permission check (first, so a missing verb is refused alike) and
    write units; no Lease, since nothing is stored. Every write is sent whatever the others'
    verdicts, and each is judged against the live objects as they are (none sees another's
    effect: nothing lands). A refusal is kept on its `PlannedAction`, not raised; anything
    else (an unreachable server, say) raises as in a real pass.
    """
    snapshot, result = read_and_reconcile(executor, ds, namespace, admit, provenance=True)
    refusals: dict[int, UserError] = {}
    if result.may_proceed and result.actions:
        executor.authorize(result.actions, namespace)

        def send(action: Action) -> None:
            try:
                executor.execute(action, namespace, dry_run=True)
            except UserError as err:
                if not isinstance(err, (ApiError, Conflict)):
                    raise _NoAnswer(err) from None  # no verdict came: the server was not reached
                refusals[id(action)] = err

        try:
            run_units(write_units(result.actions), send, lambda *unit: [], max_in_flight=max_in_flight)
        except _NoAnswer as failed:
            raise failed.error from None
    return Pass(ds, namespace, snapshot, result, _described(result.actions, snapshot, refusals), dry_run=SERVER)


class _NoAnswer(Exception):
    """A dry-run write that got no answer: raised through the scheduler (which passes on
    anything but a UserError) to end the dry run as an error, not a refusal."""

    def __init__(self, error: UserError):
        super().__init__(str(error))
        self.error = error


def _described(actions: Sequence[Action], snapshot: Snapshot,
               refusals: Mapping[int, UserError] | None = None) -> tuple[PlannedAction, ...]:
    described = []
    for action in actions:
        refusal = (refusals or {}).get(id(action))
        described.append(PlannedAction(action, *_before_after(action, snapshot.objects), refusal,
                                       refusal.answer if isinstance(refusal, ApiError) else None))
    return tuple(described)


def _before_after(action: Action, live: Mapping[tuple[str, str], Mapping[str, Any]]
                  ) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """The object `action` starts from (as read) and the one it leaves; see `PlannedAction`."""
    if isinstance(action, Create):
        return None, action.object
    before = live.get((action.kind, action.name)) if isinstance(action, (Scale, Annotate)) else None
    if before is None:
        return None, None  # a delete (or an object not read) has nothing to show
    after = deep_copy_object(before)
    if isinstance(action, Scale):
        after.setdefault("spec", {})["replicas"] = action.to_replicas
    elif isinstance(action, Annotate):  # (a delete read nothing above)
        metadata = after.setdefault("metadata", {})
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **action.annotations}
    return before, after


def run_pass(executor: PassExecutor, ds: DisaggregatedSet, namespace: str, lease: HeldLease | None = None, *,
             max_in_flight: int = 1, deadline: Deadline = NEVER, provenance: bool = False,
             admit: Admit | None = None) -> Pass:
    """Read, reconcile and execute one pass. The caller holds `lease` (renewed before writes).

    A failing action stops the pass: `PassInterrupted` carries what was done before it. The
    actions land in `write_units` (a slice's step): a unit cut short is taken back, so no
    revision group is ever left split, each undo sent again while it fails in a way time may
    cure (no answer, 429, 5xx, 403) until `deadline`, and for at least
    UNDO_PATIENCE_SECONDS. With `max_in_flight` above 1 the units of different slices go out
    concurrently (`write_scheduler`; the executor must then be thread-safe), and the actions
    carried out are those that landed, in reconcile's order. Under a lease, the pass's
    permissions are checked whole before its first write, so a permission missing at the start
    never cuts it in half. `provenance`: see `reconcile_for_step` (`drive` asks for it).
    """
    snapshot, result = read_and_reconcile(executor, ds, namespace, admit, provenance=provenance)
    planned = tuple(PlannedAction(action) for action in result.actions)
    if not result.may_proceed:
        return Pass(ds, namespace, snapshot, result, planned)
    if lease is not None:
        executor.authorize(result.actions, namespace)
    keep_alive = _one_at_a_time(lease.renew_if_due if lease is not None else None)

    def undo_unit(landed: list[Action], failed: Action, err: UserError, unit: tuple[Action, ...]) -> list[str]:
        clock = deadline.clock
        until = Deadline(max(deadline.at if deadline.at is not None else -math.inf,
                             clock.monotonic() + UNDO_PATIENCE_SECONDS), clock)
        return _undo_unit(executor, landed, namespace, _may_have_landed(failed, err, unit), until, keep_alive)

    outcome = run_units(write_units(result.actions), lambda action: executor.execute(action, namespace), undo_unit,
                        max_in_flight=max_in_flight,
                        # a start over 100 slices is thousands of writes: outlast them all
                        before_write=keep_alive)
    if outcome.error is not None:
        raise PassInterrupted(Pass(ds, namespace, snapshot, result, planned, tuple(outcome.done)), outcome.error,
                              outcome.undo_notes) from None
    return Pass(ds, namespace, snapshot, result, planned, tuple(outcome.done))


def _one_at_a_time(call: Callable[[], None] | None) -> Callable[[], None] | None:
    """`call` behind a lock: the Lease is renewed from the scheduler's workers and the undos."""
    if call is None:
        return None
    lock = threading.Lock()

    def serialized() -> None:
        with lock:
            call()
    return serialized


def _may_have_landed(action: Action, err: UserError, unit: tuple[Action, ...]) -> Action | None:
    """The failed scale of a unit, unless the server refused it (a 409 says it did not land:
    undoing it could take back someone else's change)."""
    return action if len(unit) > 1 and not isinstance(err, Conflict) else None


def _undo_unit(executor: PassExecutor, landed: list[Action], namespace: str, failed: Action | None,
               until: Deadline, keep_alive: Callable[[], None] | None) -> list[str]:
    """Take back the writes of a unit cut short, newest first, so no revision group stays split.

    The write that failed is taken back too: an answer lost on the way (connection cut, reset,
    timed out) does not mean the write did not land. Its undo is pinned to the count it would
    have written, so when it did not land the server refuses the undo and nothing changes.
    Each undo goes again while it fails in a way time may cure (see `_undo`), until `until`.
    """
    notes = []
    if isinstance(failed, Scale):
        try:
            _undo(executor, failed, namespace, until, keep_alive)
            notes.append(f"undid: {failed.describe()} (it had landed; its answer was lost)")
        except Conflict:
            pass  # it did not land: nothing to take back
        except UserError as err:
            notes.append(f"could not tell whether it landed ({err}): {failed.describe()}; "
                         "the next pass repairs the group")
    for scale in reversed(landed):
        assert isinstance(scale, Scale)  # a unit of several writes is one revision group's scales (write_units)
        try:
            _undo(executor, scale, namespace, until, keep_alive)
            notes.append(f"undid: {scale.describe()}")
        except UserError as err:
            notes.append(f"could not undo ({err}): {scale.describe()}; the next pass repairs the group")
    return notes


def _undo(executor: PassExecutor, scale: Scale, namespace: str, until: Deadline,
          keep_alive: Callable[[], None] | None) -> None:
    """One undo, sent again after a growing pause while it fails in a way time may cure and
    `until` has not passed: no answer (the API server restarting),
    429 or 5xx, or 403 (a permission revoked mid-pass and given back). A 409 is final: the
    object moved, the undo is not ours to make."""
    wait = UNDO_BACKOFF_SECONDS[0]
    while True:
        try:
            if keep_alive is not None:
                with contextlib.suppress(Unreachable):  # nobody takes the Lease from a server that is down
                    keep_alive()
            executor.execute(undo(scale), namespace)
            return
        except Conflict:
            raise
        except UserError as err:
            if not _curable(err, forbidden=True) or until.remaining() < wait:
                raise
        time.sleep(wait * (0.5 + random.random() / 2))
        wait = min(wait * 2, UNDO_BACKOFF_SECONDS[1])


def _curable(err: UserError, *, forbidden: bool = False) -> bool:
    """Whether `err` is a failure time may cure: no answer at all (connection refused while the
    API server restarts), 429 or a 5xx; with `forbidden`, also a 403."""
    if isinstance(err, Unreachable):
        return True
    code = err.status if isinstance(err, ApiError) else None
    return code is not None and (code == 429 or 500 <= code <= 599 or (forbidden and code == 403))


# --- passes until done ------------------------------------------------------------------------


def _retry_reason(err: UserError) -> str:
    return err.what if isinstance(err, Conflict) else f"{err} (waiting for the API server)"


@dataclass(frozen=True)
class Retry:
    """A pass hit a write computed from a state that has moved on, or found the API server
    gone (with `until_complete`, until the deadline): `drive` reads again."""

    partial: Pass  # what that pass carried out before the conflict
    reason: str  # e.g. "leaderworkerset/x changed since it was read (409 Conflict)"


def drive(executor: Executor, ds: DisaggregatedSet, namespace: str, *, until_complete: bool = True,
          dry_run: str | None = None, deadline: Deadline = NEVER, max_in_flight: int = 1,
          wait_for_lease: bool = False, admit: Admit | None = None,
          braked: Callable[[], bool] | None = None) -> Generator[Pass | Retry, None, None]:
    """Passes over one set, each yielded as it ends.

    A dry run (`dry_run` CLIENT or SERVER) is one `plan_pass` or `check_pass`, without the
    Lease. Otherwise the set's Lease is held
    throughout: one pass, or with `until_complete` passes until one is complete or refused,
    or `deadline` passes; then the last one yielded says which. Between
    passes that changed nothing, it watches the set instead of polling (`wait.until_settled`);
    a conflict yields a `Retry` and reads again after a short jittered pause (with
    `until_complete` only: a single pass raises `PassInterrupted` for any failed action, as
    for other errors). Raises the executor's lease errors when another stepper holds or takes
    the set; with `wait_for_lease`, a held lease is queued for instead, until `deadline`. A
    single pass runs once it has the lease, whatever the deadline. Each pass is `run_pass`, each
    LWS checked to be ours; an unreachable API server is waited out like a conflict. `admit` (a
    RolloutPolicy's, rollout/progressive.py) says which slices each pass may move; a
    pass it holds still (a gate, a pause) ends a drive like a complete one. A `Conflict` before
    a pass wrote anything (its position moved: a brake, design §9.5) reads again, as a `Retry` (a
    single pass: once more); `braked()`, asked after each quiet watch, looks again at a brake.
    """
    if dry_run == CLIENT:
        yield plan_pass(executor, ds, namespace, admit)
        return
    if dry_run == SERVER:
        yield check_pass(executor, ds, namespace, max_in_flight=max_in_flight, admit=admit)
        return
    if dry_run is not None:
        raise ValueError(f"dry_run must be {CLIENT!r}, {SERVER!r} or None, not {dry_run!r}")
    take = functools.partial(run_pass, deadline=deadline, provenance=True)
    with executor.lease(ds.name, namespace, wait_until=deadline if wait_for_lease else None) as lease:
        if until_complete and deadline.expired():
            return

        def look(again: bool = True) -> Pass | Retry:
            try:
                return take(executor, ds, namespace, lease, max_in_flight=max_in_flight, admit=admit)
            except PassInterrupted as interrupted:
                if not until_complete or not isinstance(interrupted.error, (Conflict, Unreachable)):
                    raise
                return Retry(interrupted.partial, _retry_reason(interrupted.error))
            except Unreachable as err:  # a read: the API server restarting is waited out
                if not until_complete:
                    raise
                return Retry(Pass(ds, namespace, Snapshot(namespace), Reconciliation((), ())), _retry_reason(err))
            except Conflict as err:  # raised before any write: the position moved under the pass
                if until_complete:
                    return Retry(Pass(ds, namespace, Snapshot(namespace), Reconciliation((), ())), err.what)
                if not again:
                    raise
                return look(again=False)

        def settled(seen: Pass | Retry) -> bool:
            return not until_complete or (not isinstance(seen, Retry) and pass_outcome(seen) in SETTLED)

        def watch(seen: Pass | Retry, seconds: float) -> bool:
            if isinstance(seen, Retry):
                # Status moves under us all the time (the LWS controller writes it): read
                # again, after a short jittered pause so a busy writer is not raced in a loop.
                time.sleep(CONFLICT_BACKOFF_SECONDS * (1 + random.random()))
                return True
            if seen.done:
                return True  # the pass changed something: the next one looks at once
            try:
                changed = executor.wait_for_change(ds.name, namespace, seen.snapshot.lws_resource_version, seconds)
                if not changed:
                    lease.renew_if_due()
                    changed = braked is not None and braked()  # a brake while it waits: look at once
            except Unreachable:
                time.sleep(CONFLICT_BACKOFF_SECONDS * (1 + random.random()))
                return True  # the API server went away: look again (a look waits it out)
            return changed

        # Watches last at most a third of the lease, so the lease is renewed in time; a watch that
        # ends quietly means nothing changed, so the next one starts from the same resourceVersion.
        yield from until_settled(look, settled, watch, deadline, most=min(lease.duration / 3, WATCH_SLICE_SECONDS),
                                 rewatch=True)
