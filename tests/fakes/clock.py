"""The one clock (`kubectl_disagg.clock.Clock`) standing still until a test moves it."""

from __future__ import annotations

import datetime
from collections.abc import Callable

from kubectl_disagg.clock import Clock

WALL = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)


class FakeClock(Clock):
    """`monotonic()` is `seconds` (or what `read` returns: a test's own counter), and `now()` the
    wall time that many seconds after `wall`."""

    def __init__(self, seconds: float = 0.0, read: Callable[[], float] | None = None, wall: datetime.datetime = WALL):
        self.seconds, self._read, self.wall = seconds, read, wall

    def monotonic(self) -> float:
        return self._read() if self._read is not None else self.seconds

    def now(self) -> datetime.datetime:
        return self.wall + datetime.timedelta(seconds=self.monotonic())
