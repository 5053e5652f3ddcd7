"""`rollout promote|pause|resume|abort|retry`, once for both modes, over a `PositionStore`
(rollout/store.py; design §9.5, design §9.8).

Each verb reads the set's recorded position, changes it (core/delivery/waves.py: `promote`, `pause`,
`resume`, `abort`, `retry`, with who acted and the `--reason` given) and has the store write it.
Nothing else is written, so a verb takes no Lease. In the cluster a stepper running on the set
(`rollout step --until-complete`, an analysis it measures) writes the position pinned too, so a
verb in between makes the stepper's write a conflict, never lost, and the stepper reads the
position again at each boundary (rollout/run.py: `Brakes`) and stops, or after an abort turns
back; a verb whose write meets the stepper's reads again and changes the position anew, and the
verb names the running stepper (the Lease's holder) in what it prints. Through git every set's
verb is decided before any state is written (one refusal writes nothing), then written and
committed as one transaction (gitops/store.py); a state file committed meanwhile is read again
and every set decided anew. In both, a verb that leaves a position as it was (a repeated pause
or abort) writes and records nothing and exits 0, and a set without a RolloutPolicy is an error
for that set alone.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.core.delivery.waves import (ABORTED, PAUSED, PROMOTED_EVENT, RESUMED, RETRIED, Gate, VerbRefused,
                                       WaveDecision, WaveEvent, abort, gates_ahead, pause, promote, resume, retry)
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.exits import VerbExit
from kubectl_disagg.rollout.store import PositionStore
from kubectl_disagg.core.delivery.change import NotPaced, PositionChange

PROMOTE, PAUSE, RESUME, ABORT, RETRY = "promote", "pause", "resume", "abort", "retry"
VERB_ATTEMPTS = 5  # a verb's write that meets a stepper's reads again, at most this often
Outcome = PositionChange | NotPaced | VerbRefused | Conflict  # a set's: decided, or why not


@dataclass(frozen=True)
class VerbResult:
    """What a verb did to one set: the decision it found and the position it wrote, who acted
    (`by`) and where the position is kept (`where`: rolloutstate/NAME, or the state file)."""

    ds: DisaggregatedSet
    namespace: str
    verb: str
    before: WaveDecision
    after: WaveDecision
    full: bool = False
    stepper: str | None = None  # the Lease's holder: the `rollout step` running on the set, if any
    by: str = ""
    where: str = ""
    reason: str = ""
    changed: bool = True  # False: the position was already where the verb puts it; nothing written

    @property
    def passed(self) -> tuple[Gate, ...]:
        """The gates `promote --full` passed (the pauses, and the analyses it skipped), in order."""
        return gates_ahead(self.before) if self.full and self.verb == PROMOTE else ()


class VerbPrinter(Protocol):
    """Where a verb shows itself (views/verbs.py's VerbConsole)."""

    def done(self, result: VerbResult) -> None: ...

    def refused(self, verb: str, ds: DisaggregatedSet, namespace: str, refused: VerbRefused,
                together: bool) -> None: ...

    def conflicted(self, verb: str, ds: DisaggregatedSet, namespace: str, what: str, attempts: int) -> None: ...

    def warn(self, message: str) -> None: ...

    def error(self, lines: list[str]) -> None: ...


def change_for(verb: str, now: datetime.datetime, by: str, full: bool = False,
               reason: str = "", skip_analysis: bool = False) -> Callable[[WaveDecision], Position]:
    return {
        PROMOTE: lambda decision: promote(decision, now, by, full=full, skip_analysis=skip_analysis, reason=reason),
        PAUSE: lambda decision: pause(decision.position, now, by, reason),
        RESUME: lambda decision: resume(decision.position, now, by, reason),
        ABORT: lambda decision: abort(decision, now, by, reason),
        RETRY: lambda decision: retry(decision, now, by, reason),
    }[verb]


EVENTS = {PROMOTE: PROMOTED_EVENT, PAUSE: PAUSED, RESUME: RESUMED, ABORT: ABORTED, RETRY: RETRIED}


def run_verb(store: PositionStore, verb: str, printer: VerbPrinter, *, full: bool = False, reason: str = "",
             skip_analysis: bool = False, clock: Clock = SYSTEM_CLOCK) -> VerbExit:
    """The verb over each of the store's sets; the exit code (3 when a set refused it, leaving
    it as it was; with a store that writes `together`, a refusal writes nothing at all).
    `skip_analysis`: `promote --full` may pass analysis gates without their verdict. A verb that
    leaves a position as it was (a repeated pause or abort) writes nothing and exits 0. A write
    that meets another's (a `Conflict`) is decided again from a fresh read, in both stores."""
    by = store.who()
    flags = "--full --skip-analysis" if full and skip_analysis else "--full"
    detail = (flags if full else f"by {by}") + (f": {reason}" if reason else "")

    def decide(ds: DisaggregatedSet, namespace: str) -> Outcome:
        try:
            return _changed(store, ds, namespace, change_for(verb, clock.now(), by, full, reason, skip_analysis),
                            clock)
        except (NotPaced, VerbRefused, Conflict) as failed:
            return failed

    for attempt in range(1, VERB_ATTEMPTS + 1):
        outcomes = [(ds, namespace, decide(ds, namespace)) for ds, namespace in store.sets()]
        if not outcomes:
            raise UserError("no DisaggregatedSet to act on")
        if not store.together or any(isinstance(outcome, VerbRefused) for _, _, outcome in outcomes):
            break  # each set written as decided; or, together, a refusal: nothing is written
        changes = [outcome for _, _, outcome in outcomes if _writes(outcome)]
        try:
            written = iter(store.write(changes) if changes else ())
        except Conflict as err:
            if attempt < VERB_ATTEMPTS:
                continue  # the store reads again: every set is decided anew
            outcomes = [(ds, namespace, err if _writes(outcome) else outcome) for ds, namespace, outcome in outcomes]
            break
        outcomes = [(ds, namespace, next(written) if _writes(outcome) else outcome)
                    for ds, namespace, outcome in outcomes]
        break
    return _report(store, verb, printer, outcomes, detail, full, by, reason)


def _writes(outcome: Outcome) -> TypeGuard[PositionChange]:
    """Whether a set's outcome is a change to write (decided, and moving the position)."""
    return isinstance(outcome, PositionChange) and outcome.changed


def _report(store: PositionStore, verb: str, printer: VerbPrinter,
            outcomes: list[tuple[DisaggregatedSet, str, Outcome]], detail: str, full: bool, by: str,
            reason: str) -> VerbExit:
    """Each set's outcome shown, in order (a change written recorded first); the exit code.
    With a store that writes `together`, a refusal wrote nothing: the changes are not shown."""
    codes = []
    nothing_written = store.together and any(isinstance(outcome, VerbRefused) for _, _, outcome in outcomes)
    for ds, namespace, outcome in outcomes:
        if isinstance(outcome, NotPaced):
            printer.error(outcome.lines())
            codes.append(VerbExit.ERROR)
        elif isinstance(outcome, VerbRefused):
            printer.refused(verb, ds, namespace, outcome, store.together)
            codes.append(VerbExit.REFUSED)
        elif isinstance(outcome, Conflict):
            printer.conflicted(verb, ds, namespace, outcome.what, VERB_ATTEMPTS)
            codes.append(VerbExit.ERROR)
        elif not nothing_written:
            change = store.record(outcome, WaveEvent(EVENTS[verb], outcome.before.wave, detail)) \
                if outcome.changed else outcome
            printer.done(VerbResult(change.ds, change.namespace, verb, change.before, change.after, full,
                                    change.stepper, by, change.where, reason, change.changed))
            codes.append(VerbExit.OK)
    return max(codes)


def _changed(store: PositionStore, ds: DisaggregatedSet, namespace: str, change: Callable[[WaveDecision], Position],
             clock: Clock) -> PositionChange:
    """The change decided (and, for a store that writes each set alone, written unless it changes
    nothing), read and changed again when a stepper wrote the position in between (its write and
    ours are both pinned)."""
    attempt = 1
    while True:
        decided = store.change(ds, namespace, change, clock.now())
        if store.together or not decided.changed:
            return decided
        try:
            return store.write([decided])[0]
        except Conflict:
            if attempt == VERB_ATTEMPTS:
                raise
            attempt += 1
