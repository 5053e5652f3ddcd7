"""The one wait: a deadline's arithmetic and a watch reaction loop.

Every command that waits (`rollout status -w`, `rollout step --until-complete`, `rollout step
--gitops --wait`, `--wait-for-lease`, a hand-over waiting for the garbage collector) looks, and
until what it sees is settled, blocks on a watch until something changes, then looks again:
never polling, never past its deadline. What a look is and what a watch watches are the
caller's (the API server, a git directory, a Lease); the loop and the clock are here. It knows
nothing of the API server, so it sits below `kube/` (which waits for a Lease with it) and above
the pure `core/` (which reads no clock).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TypeVar

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.errors import UserError

WATCH_SLICE_SECONDS = 60.0  # a watch lasts at most this long, then the look is taken again (a missed event)

Look = TypeVar("Look")  # what a look sees: the caller's


class DeadlineExceeded(UserError):
    """A request, a wait or a resend that the deadline cut short: no answer came in time."""


class Deadline:
    """When waiting gives up: a moment on `clock.monotonic()`, or never (`at` None); `seconds`:
    the limit it was set `after` (the --timeout people gave), for messages."""

    def __init__(self, at: float | None, clock: Clock = SYSTEM_CLOCK,
                 seconds: float | None = None):
        self.at = None if at is None or at == math.inf else at
        self.clock, self.seconds = clock, seconds

    @classmethod
    def after(cls, seconds: float | None, clock: Clock = SYSTEM_CLOCK) -> Deadline:
        """`seconds` from now; None waits without limit."""
        return cls(None if seconds is None else clock.monotonic() + seconds, clock, seconds)

    def expired(self) -> bool:
        return self.at is not None and self.clock.monotonic() >= self.at

    def remaining(self) -> float:
        """Seconds left (math.inf without limit; 0 once passed)."""
        return math.inf if self.at is None else max(0.0, self.at - self.clock.monotonic())

    def cap(self, most: float) -> float:
        """How long the next wait may last: at most `most`, never past the deadline."""
        return min(most, self.remaining())


NEVER = Deadline(None)  # no limit: the default of a wait that may take one


def until_settled(look: Callable[[], Look], settled: Callable[[Look], bool],
                  watch: Callable[[Look, float], bool], deadline: Deadline, *,
                  most: float = WATCH_SLICE_SECONDS, rewatch: bool = False) -> Iterator[Look]:
    """Each look, yielded as it is taken, until one is `settled` or the deadline passes.

    Between looks, `watch(last look, seconds)` blocks until something changes (True) or
    `seconds` pass (False): never longer than `most`, never past the deadline. A change is
    looked at at once. A quiet watch looks again (a missed event is caught within `most`),
    or with `rewatch` watches again (the next look would only repeat the last one); a quiet
    watch at the deadline ends the loop. So the last look yielded is unsettled exactly when
    the deadline ended the wait.
    """
    while True:
        seen = look()
        yield seen
        if settled(seen):
            return
        while True:
            if deadline.expired():
                return
            changed = watch(seen, deadline.cap(most))
            if changed or not (rewatch or deadline.expired()):
                break
