"""`wait.until_settled` and `Deadline` on a fake clock and a fake watch: when the loop looks,
how long each watch may last, and when it gives up."""

from __future__ import annotations

import math

from kubectl_disagg.wait import WATCH_SLICE_SECONDS, Deadline, until_settled
from tests.fakes.clock import FakeClock


class Clock(FakeClock):
    """Monotonic seconds kept in `now`, which the fake watch moves."""

    def __init__(self, now: float = 100.0):
        super().__init__(read=lambda: self.now)
        self.now = now


class FakeWatch:
    """Answers from a script: each entry (seconds that pass, changed?); records what it was asked."""

    def __init__(self, clock: Clock, script: list[tuple[float | None, bool]]):
        self.clock, self.script, self.asked = clock, list(script), []

    def __call__(self, seen, seconds: float) -> bool:
        self.asked.append(seconds)
        passes, changed = self.script.pop(0)
        self.clock.now += seconds if passes is None else passes  # None: the whole timeout passes
        return changed


def looks_of(values):
    values = iter(values)
    return lambda: next(values)


def test_deadline_arithmetic():
    clock = Clock(100.0)
    never = Deadline(None, clock)
    assert not never.expired() and never.remaining() == math.inf and never.cap(60) == 60
    assert Deadline(math.inf, clock).at is None  # math.inf spells "no limit" too
    soon = Deadline.after(30, clock)
    assert soon.at == 130 and soon.cap(60) == 30 and soon.cap(10) == 10
    clock.now = 130
    assert soon.expired() and soon.remaining() == 0
    assert Deadline.after(None, clock).at is None


def test_a_settled_first_look_never_watches():
    clock = Clock()
    watch = FakeWatch(clock, [])
    seen = list(until_settled(looks_of(["done"]), lambda seen: seen == "done", watch, Deadline(None, clock)))
    assert seen == ["done"]
    assert watch.asked == []


def test_a_change_is_looked_at_at_once_and_watches_are_capped():
    clock = Clock()
    watch = FakeWatch(clock, [(5, True), (1, True)])
    seen = list(until_settled(looks_of(["a", "b", "done"]), lambda seen: seen == "done", watch,
                              Deadline(None, clock), most=WATCH_SLICE_SECONDS))
    assert seen == ["a", "b", "done"] and watch.asked == [WATCH_SLICE_SECONDS, WATCH_SLICE_SECONDS]


def test_a_quiet_watch_looks_again_in_case_an_event_was_missed():
    clock = Clock()
    watch = FakeWatch(clock, [(None, False)])
    seen = list(until_settled(looks_of(["a", "done"]), lambda seen: seen == "done", watch, Deadline.after(600, clock),
                              most=60))
    assert seen == ["a", "done"] and watch.asked == [60]


def test_with_rewatch_a_quiet_watch_watches_again_without_looking():
    clock = Clock()
    watch = FakeWatch(clock, [(None, False), (None, False), (3, True)])
    seen = list(until_settled(looks_of(["a", "done"]), lambda seen: seen == "done", watch, Deadline(None, clock),
                              most=10, rewatch=True))
    assert seen == ["a", "done"] and watch.asked == [10, 10, 10]


def test_the_deadline_bounds_the_last_watch_and_ends_the_loop_unsettled():
    clock = Clock(0.0)
    watch = FakeWatch(clock, [(None, False), (None, False)])
    seen = list(until_settled(looks_of(["a", "b", "c"]), lambda seen: False, watch, Deadline.after(90, clock),
                              most=60))
    # 60 s, a look, then only the 30 s left; a quiet watch at the deadline does not look again.
    assert seen == ["a", "b"] and watch.asked == [60, 30] and clock.now == 90


def test_an_expired_deadline_looks_once_and_never_watches():
    clock = Clock(10.0)
    watch = FakeWatch(clock, [])
    assert list(until_settled(looks_of(["a"]), lambda seen: False, watch, Deadline(5.0, clock))) == ["a"]
    assert watch.asked == []


def test_a_change_at_the_deadline_is_still_looked_at():
    clock = Clock(0.0)
    watch = FakeWatch(clock, [(None, True)])
    seen = list(until_settled(looks_of(["a", "b"]), lambda seen: False, watch, Deadline.after(30, clock), most=60))
    assert seen == ["a", "b"] and watch.asked == [30]
