"""An analysis gate run with a fake clock: measurements at their times, verdicts, the timeout, and
the verdict a wave's gate gets."""

from __future__ import annotations

import datetime
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings, strategies as st

from kubectl_disagg.core.delivery import analysis
from kubectl_disagg.core.delivery.analysis import FAILED, PASSED, Analysis, Check, Condition, Prometheus, Sample
from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave, resolve_waves
from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.core.delivery.waves import Progress, State, decide
from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client import PrometheusClient
from kubectl_disagg.rollout.analysis import AnalysisTimeout, GateAnalysis, pending_gate, run_gate
from kubectl_disagg.wait import Deadline
from tests.fakes.clock import FakeClock

TTFT = Check("ttft", "prefill", 'a{revision="{{revision}}"}', Condition("<", 0.5), 60, 5, 1, "fail")
TPOT = Check("tpot", "decode", 'b{role="{{role}}"}', Condition("<", 0.05), 30, 3, 0, "fail")


class Clock(FakeClock):
    """The fake clock at epoch second `t` (1000 to begin with), moved on by its `sleep`."""

    def __init__(self):
        super().__init__(read=lambda: self.t, wall=datetime.datetime.fromtimestamp(0, datetime.timezone.utc))
        self.t = 1000.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


def answering(table: dict):
    asked: list[str] = []

    def query(expression: str):
        asked.append(expression)
        answer = table[expression.split("{")[0]]
        value = answer.pop(0) if isinstance(answer, list) else answer
        if isinstance(value, Exception):
            raise value
        return (Sample(value),)
    query.asked = asked
    return query


def test_measures_every_interval_until_count():
    clock, progress = Clock(), []
    query = answering({"a": 0.3, "b": 0.01})
    run = run_gate([TTFT, TPOT], {"revision": "r1"}, query, clock=clock, sleep=clock.sleep,
                   progress=progress.append)
    assert run.phase == PASSED
    assert run.why == "ttft: 0.3 < 0.5 at 5 measurements; tpot: 0.01 < 0.05 at 3 measurements"
    assert [j.measurement.at for j in run.verdicts[0].judged] == [1000, 1060, 1120, 1180, 1240]
    assert [j.measurement.at for j in run.verdicts[1].judged] == [1000, 1030, 1060]
    assert clock.t == 1240 and len(progress) == 6
    assert query.asked[:2] == ['a{revision="r1"}', 'b{role="decode"}']


def test_a_failed_check_ends_the_gate_at_once():
    clock = Clock()
    query = answering({"a": [0.3, 0.9, 0.8, 0.1, 0.1], "b": 0.01})
    run = run_gate([TTFT, TPOT], {"revision": "r"}, query, clock=clock, sleep=clock.sleep)
    assert run.phase == FAILED and clock.t == 1120
    assert run.why == ("ttft: 2 of 3 measurements failed (failureLimit 1): 0.9 is not < 0.5; 0.8 is not < 0.5")


def test_no_answer_is_a_failed_measurement():
    clock = Clock()
    query = answering({"b": UserError("Prometheus at http://x: no answer: connection refused")})
    run = run_gate([TPOT], {}, query, clock=clock, sleep=clock.sleep)
    assert run.phase == FAILED
    assert run.verdicts[0].judged[0].measurement.error == "Prometheus at http://x: no answer: connection refused"


def test_timeout_refused_before_the_first_measurement_or_ends_without_verdict():
    clock = Clock()
    with pytest.raises(AnalysisTimeout, match=r"at least 4m .* more than the 1m left of --timeout 1m$"):
        run_gate([TTFT], {"revision": "r"}, answering({"a": 0.1}), deadline=Deadline.after(60, clock), clock=clock, sleep=clock.sleep)
    assert clock.t == 1000

    def slow_query(expression):
        clock.t += 70  # each answer takes 70 s: the measurements fall behind
        return (Sample(0.1),)
    with pytest.raises(AnalysisTimeout, match="did not end within --timeout 4m10s: ttft: 4 of 5"):
        run_gate([TTFT], {"revision": "r"}, slow_query, deadline=Deadline.after(250, clock), clock=clock, sleep=clock.sleep)


def test_the_refusal_says_durations_as_people_write_them():
    # What is left of --timeout 5s once the command has read its inputs: said as "5s".
    clock = Clock()
    with pytest.raises(AnalysisTimeout) as refused:
        run_gate([TTFT], {"revision": "r"}, answering({"a": 0.1}), deadline=Deadline.after(4.98355, clock), clock=clock,
                 sleep=clock.sleep)
    assert str(refused.value) == ("the analysis takes at least 4m (count × interval of ttft), more than the 5s "
                                  "left of --timeout 5s")


# --- at a wave's analysis gate ----------------------------------------------------------------

T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
D, P = Progress.DONE, Progress.PENDING
ANALYSIS = Analysis(Prometheus(address="http://prometheus:9090"), (TTFT, TPOT))


class SetStub:
    name = "llama"

    def __init__(self, on_failure: str):
        self.policy = RolloutPolicy("llama", "serving", "llama", (Wave(1, analysis=("ttft", "tpot")),), None,
                                    on_failure, ANALYSIS)


@pytest.mark.parametrize("latency, on_failure, after", [(0.3, "abort", State.ROLLING), (0.9, "abort", State.ABORTED),
                                                         (0.9, "pause", State.PAUSED)])
def test_the_verdict_passes_the_gate_or_does_on_failure(latency, on_failure, after):
    ds, clock = SetStub(on_failure), Clock()
    at_gate = decide(ds.policy, "r2", Position("r2", "r1"), (D, P, P), T0)
    assert at_gate.state == State.AT_GATE and pending_gate(at_gate).checks == ("ttft", "tpot")
    query = answering({"a": latency, "b": 0.01})
    gates = GateAnalysis(lambda prometheus: query, clock=clock, sleep=clock.sleep)
    position = gates(ds, "serving", at_gate)
    assert query.asked[0] == 'a{revision="r2"}'
    recorded = position.verdicts[0]
    assert recorded["phase"] == ("passed" if latency < 0.5 else "failed")
    assert [c["check"] for c in recorded["checks"]] == ["ttft", "tpot"]
    decision = decide(ds.policy, "r2", position, (D, P, P), T0)
    assert decision.state == after
    assert pending_gate(decision) is None and gates(ds, "serving", decision) is None  # measured once


def test_waiting_at_a_gate_keeps_the_lease_alive():
    ds, clock, kept = SetStub("abort"), Clock(), []
    at_gate = decide(ds.policy, "r2", Position("r2", "r1"), (D, P, P), T0)
    gates = GateAnalysis(lambda prometheus: answering({"a": 0.1, "b": 0.01}), clock=clock, sleep=clock.sleep,
                         keep_alive=lambda: kept.append(clock.t))
    gates(ds, "serving", at_gate)
    assert clock.t == 1240 and max(clock.sleeps) <= 5  # 4 minutes of intervals, slept 5 s at a time
    assert all(b - a <= 5 for a, b in zip(kept, kept[1:])) and kept[-1] == 1240


def test_a_hung_prometheus_ends_the_gate_at_the_deadline_without_a_verdict():
    # Each query used to be resent up to 10 times at a 35 s read timeout, with the deadline
    # checked only between measurements: minutes past --timeout. Now the command's deadline
    # bounds the query, its resends and its waits, and no failed measurement is recorded.
    from kubectl_disagg.rollout.analysis import gate_analysis
    from tests.fakes.servers import Silent
    from tests.support.kube import bounded

    server = Silent()
    try:
        ds = SetStub("abort")
        ds.policy = RolloutPolicy("llama", "serving", "llama", (Wave(1, analysis=("ttft",)),), None, "abort",
                                  Analysis(Prometheus(address=server.address), (replace(TTFT, count=1),)))
        at_gate = decide(ds.policy, "r2", Position("r2", "r1"), (D, P, P), T0)
        cluster = type("Cluster", (), {"client": None, "current_lease": None})()
        gates = gate_analysis(cluster, Deadline.after(2.0), lambda gate: (lambda run: None))
        raised, took = bounded(lambda: gates(ds, "serving", at_gate), 2.0 + 1.5)
    finally:
        server.close()
    assert isinstance(raised, AnalysisTimeout), raised
    assert str(raised).startswith("the analysis did not end within --timeout 2s: ttft had no answer in time")
    assert 1.9 <= took <= 2.5 and gates.runs == []


ANSWER = st.one_of(st.floats(0, 1), st.just(math.nan), st.just(math.inf), st.none(), st.just("error"))


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 3), st.sampled_from([1, 30, 60, 90]),
                          st.sampled_from(["fail", "pass"]), st.lists(ANSWER, min_size=8, max_size=8)),
                min_size=1, max_size=3),
       st.floats(0, 5))
def test_whatever_a_run_records_reads_back_as_a_verdict(specs, slow):
    """No false refusal: every gate record a run writes, its answers and their latency whatever
    they were, passes the rule that refuses forged ones."""
    checks, answers = [], {}
    for index, (count, limit, interval, no_data, table) in enumerate(specs):
        name = f"c{index}"
        checks.append(Check(name, "prefill", name + '{x="{{revision}}"}', Condition("<", 0.5), interval, count,
                            min(limit, count - 1), no_data))
        answers[name] = list(table)
    clock = Clock()
    completed = int(clock.t)  # the wave's completion, recorded to the second just before

    def query(expression: str):
        clock.t += slow  # an answer takes its time
        answer = answers[expression.split("{")[0]].pop(0)
        if answer == "error":
            raise UserError("Prometheus at http://x: no answer: timed out")
        return () if answer is None else (Sample(answer),)

    run = run_gate(checks, {"revision": "r"}, query, clock=clock, sleep=clock.sleep)
    record = analysis.gate_record(run.verdicts, run.phase, run.why)
    assert analysis.verdict_problems(record, checks, completed) == []


def test_the_position_says_which_verdicts_it_holds_and_each_must_be_a_run_s():
    ds, clock = SetStub("abort"), Clock()
    waves = resolve_waves(ds.policy, 3)
    at_gate = decide(ds.policy, "r2", Position("r2", "r1"), (D, P, P), T0)
    position = GateAnalysis(lambda prometheus: answering({"a": 0.3, "b": 0.01}), clock=clock, sleep=clock.sleep,
                            )(ds, "serving", replace(at_gate, position=replace(
                                at_gate.position, completed={0: "1970-01-01T00:16:40Z"})))
    assert analysis.recorded_verdict_problems(position, "r2", waves, ANALYSIS) == []
    assert analysis.recorded_verdict_problems(position, "r3", waves, ANALYSIS) == []  # another rollout's: not read
    forged = replace(position, verdicts={0: {"phase": "passed"}, 1: {"phase": "passed"}})
    assert [path for path, _ in analysis.recorded_verdict_problems(forged, "r2", waves, ANALYSIS)] == [
        ("verdicts", "0", "checks"), ("verdicts", "1")]
    assert analysis.recorded_verdict_problems(replace(forged, completed={}), "r2", waves, ANALYSIS)[0][1].startswith(
        "wave 1 is not recorded as completed")


def test_an_unreachable_prometheus_is_a_failed_measurement_not_a_pass():
    check = Check("ttft", "prefill", TTFT.query, Condition("<", 0.5), 1, 1, 0, "pass")
    values = analysis.placeholder_values("llama", "serving", "new", [0])
    run = run_gate([check], values, PrometheusClient.at_address("http://127.0.0.1:1").query)
    assert run.phase == analysis.FAILED
    assert run.verdicts[0].judged[0].why == "error: Prometheus at http://127.0.0.1:1: no answer: connection refused"
