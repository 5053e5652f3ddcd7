"""Issue 51: what a person reads of a rollout grows with what changed, not with the waiting.

Issue 51's rollout (a canary of one slice with a pause, 25 %, the rest; `maxSlicesInFlight: 10`)
over the in-memory cluster whose LWS become ready one watch after each write or several
(tests/support/fleet_text.py `Slow`, `issue_51`): the lines are the same whatever the readiness,
and within the issue's budgets. `make bench` (benchmarks/bench_step_text.py) reports them at
100 slices too."""

from __future__ import annotations

from kubectl_disagg.core.delivery.policy import RolloutPolicy
from kubectl_disagg.exits import StepExit
from kubectl_disagg.views.fleet import (GATE_REACHED, MOVED, WAITING_CHANGED, WAVE_COMPLETED, WAVE_STARTED, Beat,
                                        line_due, news)
from tests.support.fleet_text import (CANARY_THEN_25_100, ISSUE_51_IN_FLIGHT, Slow, StillClock, issue_51, lines,
                                      promote, stepped)
from tests.support.sets import fleet

FAST, SLOW = 1, 4  # watches of lag before the LWS written are ready
TO_THE_GATE, WHOLE = 40, 150  # the issue's budgets, in lines


def test_the_lines_of_a_whole_rollout_are_the_same_for_fast_and_slow_readiness_and_within_budget():
    # Before: 182 and 210 lines in two runs of the same 100-slice rollout; -q 69 and 73 from the promote.
    fast, slow = issue_51(12, FAST), issue_51(12, SLOW)
    assert (fast.plan, fast.to_gate, fast.whole, fast.quiet_tail) == (slow.plan, slow.to_gate, slow.whole,
                                                                         slow.quiet_tail)
    assert fast.to_gate <= TO_THE_GATE and fast.whole <= WHOLE
    # -q from the promote: waves 2 and 3 start, wave 2 completes, the end (no gate ahead)
    assert fast.quiet_tail == slow.quiet_tail == 2 + 1 + 1, slow.quiet_text


def test_100_slices_to_the_canarys_gate_read_the_same_whatever_the_readiness():
    fast, slow = issue_51(100, FAST, through=False), issue_51(100, SLOW, through=False)
    assert fast.to_gate == slow.to_gate <= TO_THE_GATE


def test_quiet_says_each_wave_started_and_completed_and_the_end_never_the_waiting():
    read = issue_51(12, SLOW)
    said = read.quiet_text.splitlines()
    assert "waiting" not in read.quiet_text
    assert said[0] == "disaggregatedset/llm in serving: rollout complete at revision " + said[0].rsplit(" ", 1)[-1]
    progress = said[1:]
    assert [line.split(",")[0] for line in progress] == ["llm: wave 2 of 3 (slices 1-2)"] * 2 + \
        ["llm: wave 3 of 3 (slices 3-11)"], progress
    assert "slices 1-2 in flight" in progress[0] and "3 of 12 slices done" in progress[1]


def test_a_pass_that_only_waits_prints_again_once_a_minute_piped():
    # the LWS written ready only 6 watches later, each watch 25 s: the waiting is said again after a minute
    def run(tick: float) -> str:
        memory, ds = fleet(3, RolloutPolicy("llm", "serving", "llm", CANARY_THEN_25_100, ISSUE_51_IN_FLIGHT))
        clock = StillClock()
        code, out, err = stepped(Slow(memory, 6, clock, tick), ds, clock=clock)
        assert code == StepExit.HELD, err
        return err

    still, waited = run(0.0), run(25.0)
    assert lines(waited) > lines(still)
    extra = [line for line in waited.splitlines() if line not in still.splitlines() or
             waited.splitlines().count(line) > still.splitlines().count(line)]
    assert extra and all("waiting: slice 0" in line for line in extra), extra


def test_promote_then_quiet_prints_nothing_while_the_wave_waits():
    memory, ds = fleet(12, RolloutPolicy("llm", "serving", "llm", CANARY_THEN_25_100, ISSUE_51_IN_FLIGHT))
    cluster = Slow(memory, SLOW)
    stepped(cluster, ds)
    promote(cluster, ds)
    code, out, err = stepped(cluster, ds, quiet=True)
    assert code == StepExit.OK and lines(err) == 3, err


# --- the pure part: what a pass means for the reader ---------------------------------------------------


def beat(wave=0, wave_done=False, at_gate=False, state="llm: wave 1 of 3", waiting=()):
    return Beat(wave, wave_done, at_gate, False, False, state, waiting)


def test_what_a_pass_means_for_the_reader():
    assert news(None, beat()) == (WAVE_STARTED,)
    assert news(None, beat(wave_done=True, at_gate=True)) == (GATE_REACHED,)
    assert news(beat(), beat()) == ()  # a pass that only waited
    assert news(beat(waiting=(1, 2)), beat(waiting=(1, 2))) == ()  # what they wait for changed: not news
    assert news(beat(waiting=(1, 2)), beat(waiting=(1,))) == (WAITING_CHANGED,)
    assert news(beat(waiting=(1, 2)), beat()) == ()  # waiting no more: the report of the move says so
    assert news(beat(), beat(state="llm: wave 1 of 3, 1 done", wave_done=True)) == (WAVE_COMPLETED, MOVED)
    assert news(beat(wave_done=True), beat(wave=1, state="llm: wave 2 of 3")) == (WAVE_STARTED, MOVED)
    assert news(beat(wave_done=True, at_gate=True), beat(wave_done=True, at_gate=True)) == ()


def test_when_the_line_is_printed_piped_and_with_quiet():
    waits, moved = beat(waiting=(1,)), beat(state="llm: wave 1 of 3, 1 done", waiting=(1,))
    assert not line_due(waits, waits, quiet=False, silent_for=59.0, until_complete=True)
    assert line_due(waits, waits, quiet=False, silent_for=60.0, until_complete=True)  # alive, once a minute
    assert line_due(waits, moved, quiet=False, silent_for=0.0, until_complete=True)
    assert not line_due(waits, moved, quiet=True, silent_for=600.0, until_complete=True)  # -q: milestones only
    assert line_due(waits, beat(wave=1), quiet=True, silent_for=0.0, until_complete=True)
    end = Beat(2, True, False, False, True, "llm: wave 3 of 3, 12 of 12 slices done", ())
    assert not line_due(waits, end, quiet=True, silent_for=0.0, until_complete=True)  # the end says it
    assert line_due(waits, end, quiet=True, silent_for=0.0, until_complete=False)
