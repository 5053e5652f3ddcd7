"""The one clock: wall time as an aware UTC datetime (`now`), and monotonic seconds (`monotonic`)
for deadlines, timeouts and how long a grant lasts. Injected where time is read, so a name
`clock` is always a `Clock` (tests hand in a fake one)."""

from __future__ import annotations

import datetime
import time


class Clock:
    """Where time is read: `now()`, the wall time people and the recorded positions use
    (RFC 3339 in UTC); `monotonic()`, seconds that never go back, for every deadline."""

    def now(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.timezone.utc)

    def monotonic(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK = Clock()


class StoppedClock(Clock):
    """A clock whose wall time stands at `moment` (monotonic seconds run on): a git step takes
    every decision at the time it started, the analysis it measures meanwhile included."""

    def __init__(self, moment: datetime.datetime):
        self.moment = moment

    def now(self) -> datetime.datetime:
        return self.moment
