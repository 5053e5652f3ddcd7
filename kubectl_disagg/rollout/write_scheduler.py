"""Carrying out a pass's writes concurrently, without breaking the orders that matter.

A dependency-respecting scheduler. A pass's actions come cut into write units
(`reconcile.write_units`: all scales of one step in one slice land together or are
undone). Every ordering the rollout relies on lies inside one slice: the writes of a unit
(a step's drains before its scale-ups); a rollout start's annotations before its creates; a revision's
Service deletes after the deletes of its LWS. So the dependency graph is one chain per slice,
in reconcile's order, and different slices are independent. The scheduler runs the chains
side by side, at most `max_in_flight` writes at a time (each worker has one request out),
and each chain strictly in order.

After a failure no new unit starts, in any slice; units already under way finish (a unit is
never left half-written on purpose), and the failing unit's earlier writes are undone by the
caller's `undo_unit`. Everything that landed stays: each write carries its precondition, so
what is left is a state the next pass reads and converges from. With `max_in_flight=1` the
writes go out one at a time in exactly reconcile's order.

An interrupt (KeyboardInterrupt: Ctrl-C, or SIGTERM and SIGHUP, which the command line turns
into one) stops the pass the same way: no new unit starts, the units under way end, landed or
taken back, and only then does the interrupt go on. The writes go out from worker threads, so
the interrupt never lands between two writes of a unit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.core.controller.reconcile import Action

DEFAULT_MAX_IN_FLIGHT = 16  # client-go's default QPS burst is 10; the API server's default inflight limit is 400
MAX_IN_FLIGHT_LIMIT = 64  # connections the REST client keeps pooled


@dataclass
class WritesCarriedOut:
    """What a scheduled pass carried out: `done` in reconcile's order; `error` the failure, if any."""

    done: list[Action] = field(default_factory=list)
    error: UserError | None = None
    undo_notes: list[str] = field(default_factory=list)


def chains(units: Sequence[tuple[Action, ...]]) -> list[list[tuple[Action, ...]]]:
    """The units grouped into one ordered chain per slice, chains in order of first appearance."""
    by_slice: dict[int, list[tuple[Action, ...]]] = {}
    for unit in units:
        by_slice.setdefault(unit[0].slice, []).append(unit)
    return list(by_slice.values())


def run_units(units: Sequence[tuple[Action, ...]], execute: Callable[[Action], None],
              undo_unit: Callable[[list[Action], Action, UserError, tuple[Action, ...]], list[str]], *,
              max_in_flight: int = 1,
              before_write: Callable[[], None] | None = None) -> WritesCarriedOut:
    """Execute `units` (see the module doc); never raises a `UserError`, returns it in the outcome.

    `before_write` runs before every write, one call at a time (the Lease's renewal).
    `undo_unit(written, failed, error, unit)` takes back a unit cut short and says what it did.
    """
    if max_in_flight < 1:
        raise ValueError("max_in_flight must be at least 1")
    order = {id(action): index for index, unit in enumerate(units) for action in unit}
    landed: list[Action] = []
    errors: list[UserError] = []
    undo_notes: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def run_chain(chain: list[tuple[Action, ...]]) -> None:
        for unit in chain:
            if stop.is_set():
                return
            written: list[Action] = []
            for action in unit:
                try:
                    if before_write is not None:
                        with lock:
                            before_write()
                    execute(action)
                except UserError as err:
                    stop.set()
                    notes = undo_unit(written, action, err, unit)  # the failed write may have landed
                    with lock:
                        errors.append(err)
                        undo_notes.extend(notes)
                    return
                written.append(action)
            with lock:
                landed.extend(written)

    work = chains(units)
    pending: queue.SimpleQueue[list[tuple[Action, ...]]] = queue.SimpleQueue()
    for chain in work:
        pending.put(chain)
    bugs: list[BaseException] = []

    unfinished = [0]
    finished = threading.Event()  # every worker has returned

    def worker() -> None:
        try:
            while not stop.is_set():
                try:
                    chain = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    run_chain(chain)
                except BaseException as bug:  # anything but a UserError is a bug: raised to the caller
                    bugs.append(bug)
                    stop.set()
        finally:
            with lock:
                unfinished[0] -= 1
                if not unfinished[0]:
                    finished.set()

    # The writes go out from workers, never from the caller's thread: a signal (Ctrl-C,
    # SIGTERM) interrupts only the caller, which then lets the units under way end. It waits
    # on an Event, not in Thread.join(): a join interrupted by a signal can mark a thread that
    # still runs as stopped (CPython 3.11's handling of bpo-45274), and nothing would wait for it.
    workers = [threading.Thread(target=worker, name="write") for _ in range(max(1, min(max_in_flight, len(work))))]
    unfinished[0] = len(workers)
    try:
        for thread in workers:
            thread.start()
        finished.wait()
    except KeyboardInterrupt:
        stop.set()  # no new unit starts; each one under way lands whole or is taken back ...
        # (a worker never started counts as finished; one starting sees `stop` and writes nothing)
        while not finished.wait(0.05) and any(thread.is_alive() for thread in workers):
            pass
        raise  # ... before the interrupt goes on (and the Lease is released)
    if bugs:
        raise bugs[0]
    landed.sort(key=lambda action: order[id(action)])
    return WritesCarriedOut(landed, _first_error(errors), undo_notes)


def _first_error(errors: list[UserError]) -> UserError | None:
    """The error to report: a real failure before a conflict (a conflict only means "read again")."""
    for err in errors:
        if not isinstance(err, Conflict):
            return err
    return errors[0] if errors else None
