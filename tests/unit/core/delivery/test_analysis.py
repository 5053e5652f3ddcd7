"""Analysis checks: their validation at FILE:LINE, the queries' templating (no name can inject a
selector), and the verdict over measurements."""

from __future__ import annotations

import math
import re
import textwrap

import pytest
from hypothesis import given, strategies as st

from kubectl_disagg.core.delivery import analysis, promql
from kubectl_disagg.core.delivery.analysis import FAILED, PASSED, RUNNING, Measurement, Sample
from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.source import dotted

GOOD = """\
analysis:
  prometheus: {service: {namespace: monitoring, name: prometheus, port: 9090}}
  checks:
  - name: ttft
    role: prefill
    query: histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{namespace="{{namespace}}", revision="{{revision}}", slice=~"{{slices}}"}[5m])))
    successCondition: "< 0.5"
    interval: 1m
    count: 5
    failureLimit: 1
    noData: fail
  - name: tpot
    role: decode
    query: max(vllm:time_per_output_token_seconds{set='{{set}}', role='{{role}}'})
    successCondition: "<= 0.05"
"""


def validated(text: str):
    document = parse_stream(textwrap.dedent(text), "policy.yaml")[0]

    def locate(path: tuple, message: str) -> Problem:
        return Problem(document.file, document.line(path), dotted(path), message)

    return analysis.validate_analysis(document.data["analysis"], ("analysis",), locate)


def problems(text: str) -> list[str]:
    model, found = validated(text)
    assert model is None
    return [str(p) for p in found]


def test_a_good_analysis_reads_with_defaults():
    model, found = validated(GOOD)
    assert found == []
    assert model.prometheus == analysis.Prometheus(namespace="monitoring", service="prometheus", port=9090)
    ttft, tpot = model.checks
    assert (ttft.interval, ttft.count, ttft.failure_limit, ttft.condition) == (60, 5, 1, analysis.Condition("<", 0.5))
    assert (tpot.interval, tpot.count, tpot.failure_limit, tpot.no_data) == (60, 1, 0, "fail")
    assert model.names == ("ttft", "tpot")


def test_an_address():
    model, found = validated("analysis:\n  prometheus: {address: 'http://prom.monitoring:9090/'}\n"
                             + GOOD.split("\n", 2)[2])
    assert found == [] and model.prometheus.address == "http://prom.monitoring:9090"


@pytest.mark.parametrize("change, expected", [
    (("port: 9090", "port: 0"), 'policy.yaml:2: analysis.prometheus.service.port: Invalid value: "0"'),
    (("{service: {namespace: monitoring, name: prometheus, port: 9090}}", "{address: 'ftp://x'}"),
     'policy.yaml:2: analysis.prometheus.address: Invalid value: "ftp://x": must be an http://'),
    (("{service: {namespace: monitoring, name: prometheus, port: 9090}}", "{address: 'http://u:p@x'}"),
     "must not carry a query, a fragment or credentials"),
    (("{service: {namespace: monitoring, name: prometheus, port: 9090}}", "{}"),
     "policy.yaml:2: analysis.prometheus: Invalid value: must name exactly one of address"),
    (("name: ttft", "name: TTFT"), 'policy.yaml:4: analysis.checks[0].name: Invalid value: "TTFT"'),
    (("name: tpot", "name: ttft"), 'policy.yaml:12: analysis.checks[1].name: Duplicate value: "ttft" (also checks[0])'),
    (('"< 0.5"', '"lt 0.5"'), 'policy.yaml:7: analysis.checks[0].successCondition: Invalid value: "lt 0.5"'),
    (('"< 0.5"', '"< nan"'), "analysis.checks[0].successCondition: Invalid value"),
    (("interval: 1m", "interval: soon"), 'policy.yaml:8: analysis.checks[0].interval: Invalid value: "soon"'),
    (("count: 5", "count: 0"), "policy.yaml:9: analysis.checks[0].count: Invalid value"),
    (("count: 5", "count: true"), "policy.yaml:9: analysis.checks[0].count: Invalid value"),
    (("failureLimit: 1", "failureLimit: 5"), "policy.yaml:10: analysis.checks[0].failureLimit: Invalid value: 5: "
                                             "must be less than count (5)"),
    (("noData: fail", "noData: ignore"), 'policy.yaml:11: analysis.checks[0].noData: Unsupported value: "ignore"'),
    (("noData: fail", "nodata: fail"), 'policy.yaml:11: analysis.checks[0].nodata: unknown field "nodata"'),
    (("[5m])))", "[5m]))"), "policy.yaml:6: analysis.checks[0].query: Invalid value: PromQL parse error at 1:"),
    (("[5m])))", "[5m]))[5m]"), "analysis.checks[0].query: Invalid value: PromQL parse error"),
    (("rate(vllm", "(vllm"), 'expected type instant vector in aggregation expression, got range vector'),
    (('revision="{{revision}}"', 'revision={{revision}}'), '"{{revision}}" must stand inside a quoted label value'),
    (('revision="{{revision}}"', 'revision=`{{revision}}`'), '"{{revision}}" must stand inside a quoted label value'),
    (('revision="{{revision}}"', 'revision="{{rev}}"'), 'unknown placeholder "{{rev}}"'),
    (('slice=~"{{slices}}"', 'slice="{{slices}}"'), '"{{slices}}" is a regex alternation'),
    (("max(vllm", "max_over_time(vllm"), "expected type range vector"),
])
def test_problems_name_their_line_and_field(change, expected):
    old, new = change
    assert old in GOOD
    found = problems(GOOD.replace(old, new, 1))
    assert any(expected in line for line in found), found


def test_every_problem_at_once():
    found = problems(GOOD.replace("count: 5", "count: -1").replace("noData: fail", "noData: x")
                     .replace("role: decode", "role: Decode"))
    assert [line.split(":", 3)[1:3] for line in found] == [["9", " analysis.checks[0].count"],
                                                           ["11", " analysis.checks[0].noData"],
                                                           ["13", " analysis.checks[1].role"]]


def test_parse_errors_point_into_the_query_as_written():
    query = 'sum(rate(m{revision="{{revision}}", slice=~"{{slices}}"}[5m])) +'
    assert analysis.query_error(query) == f"Invalid value: PromQL parse error at 1:{len(query) + 1}: unexpected end of input"
    assert analysis.query_error('m{a="{{set}}"} )').startswith("Invalid value: PromQL parse error at 1:16: ")


def test_a_matrix_query_is_no_check():
    assert "gives a range vector" in analysis.query_error("rate(x[5m])[5m:]")


def test_roles_of_the_set():
    model, _ = validated(GOOD)
    found = analysis.role_problems(model, ["prefill", "encode"], ("analysis",),
                                   lambda path, message: Problem("p.yaml", 1, dotted(path), message))
    assert [str(p) for p in found] == ['p.yaml:1: analysis.checks[1].role: Invalid value: "decode": '
                                       "not a role of the set (roles: prefill, encode)"]


# --- templating ----------------------------------------------------------------------------

TEMPLATE = ('sum(rate(m{set="{{set}}", namespace=\'{{namespace}}\', role=~"{{role}}", revision!="{{revision}}", '
            'slice=~"{{slices}}"}[5m])) # {{ set }} is not substituted in comments\n')


def test_fill_quotes_for_the_literal():
    filled = analysis.fill('a{x="{{set}}", y=\'{{role}}\', z=~"{{namespace}}", s=~"{{slices}}"}',
                           {"set": 'a"b\\c', "role": "it's", "namespace": "a.b", "slices": "0|3"})
    assert filled == 'a{x="a\\"b\\\\c", y=\'it\\\'s\', z=~"a\\\\.b", s=~"0|3"}'
    assert analysis.slices_alternation([3, 0, 1, 1]) == "0|1|3"


def test_placeholder_in_a_comment_is_refused():
    assert "must stand inside a quoted label value" in analysis.query_error(TEMPLATE)


names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(set_=names, namespace=names, role=names, revision=names, slices=st.lists(st.integers(0, 99), min_size=1))
def test_no_name_can_inject_a_selector(set_, namespace, role, revision, slices):
    template = TEMPLATE.split(" #")[0]
    values = {"set": set_, "namespace": namespace, "role": role, "revision": revision,
              "slices": analysis.slices_alternation(slices)}
    parsed = promql.parse(analysis.fill(template, values))
    (matchers,) = parsed.matchers
    assert [(m.label, m.op) for m in matchers] == [("set", "="), ("namespace", "="), ("role", "=~"),
                                                   ("revision", "!="), ("slice", "=~")]
    assert [matchers[0].value, matchers[1].value, matchers[3].value] == [set_, namespace, revision]
    # The regex matches the role itself and nothing else of the names tried.
    assert re.fullmatch(matchers[2].value, role, re.DOTALL)
    assert not re.fullmatch(matchers[2].value, role + "x", re.DOTALL)
    assert {int(s) for s in matchers[4].value.split("|")} == set(slices)


# --- verdicts ------------------------------------------------------------------------------

CHECK = analysis.Check("ttft", "prefill", "q", analysis.Condition("<", 0.5), 60, 5, 1, "fail")


def m(at: float, *values: float, error: str | None = None) -> Measurement:
    return Measurement(at, tuple(Sample(v) for v in values), error)


def test_passes_after_count_measurements():
    verdict = analysis.judge(CHECK, [m(60 * i, 0.3, 0.31) for i in range(5)])
    assert verdict.phase == PASSED
    assert verdict.why == "ttft: 0.31 < 0.5 at 5 measurements"


def test_running_until_count():
    verdict = analysis.judge(CHECK, [m(0, 0.3), m(60, 0.7)])
    assert verdict.phase == RUNNING and verdict.failures == 1
    assert verdict.why == ("ttft: 2 of 5 measurements, next in 1m; held 0.3 < 0.5; missed 1 (failureLimit 1): "
                           "0.7 is not < 0.5")


def test_a_passed_check_never_shows_a_missed_value_as_holding():
    # One measurement of five missed, within failureLimit 1: the check passed, and its line says
    # what held (the worst of those) apart from what missed.
    verdict = analysis.judge(CHECK, [m(0, 0.3), m(60, 0.82), m(120, 0.31), m(180, 0.2), m(240, 0.1)])
    assert verdict.phase == PASSED and verdict.worst() == 0.31
    assert verdict.why == ("ttft: 0.31 < 0.5 at 4 of 5 measurements; missed 1 (failureLimit 1): "
                           "0.82 is not < 0.5")
    only_missed = analysis.judge(CHECK, [m(0, 0.9)])
    assert only_missed.why == "ttft: 1 of 5 measurements, next in 1m; missed 1 (failureLimit 1): 0.9 is not < 0.5"


def test_fails_as_soon_as_failures_pass_the_limit():
    verdict = analysis.judge(CHECK, [m(0, 0.9), m(60, 0.3), m(120, 0.8), m(180, 0.1)])
    assert verdict.phase == FAILED and len(verdict.judged) == 3
    assert verdict.why == ("ttft: 2 of 3 measurements failed (failureLimit 1): 0.9 is not < 0.5; "
                           "0.8 is not < 0.5")


def test_one_failing_sample_fails_the_measurement():
    judged = analysis.judge_measurement(CHECK, m(0, 0.1, 0.6, 0.7))
    assert not judged.ok and judged.why == "0.6 is not < 0.5 (and 1 more samples)"


@pytest.mark.parametrize("no_data, ok", [("fail", False), ("pass", True)])
def test_no_data_and_nan(no_data, ok):
    check = analysis.Check("c", "r", "q", analysis.Condition(">", 1), 1, 1, 0, no_data)
    for measurement in (m(0), m(0, math.nan)):
        judged = analysis.judge_measurement(check, measurement)
        assert (judged.ok, judged.why) == (ok, "no data")


def test_an_error_is_a_failed_measurement_never_a_pass():
    check = analysis.Check("c", "r", "q", analysis.Condition("<", 1), 1, 1, 0, "pass")
    verdict = analysis.judge(check, [m(0, error="connection refused")])
    assert verdict.phase == FAILED and verdict.why.endswith("error: connection refused")


@pytest.mark.parametrize("op, value, holds", [("<", 0.5, False), ("<=", 0.5, True), (">", 0.4, True),
                                               (">=", 0.6, False), ("==", 0.5, True), ("!=", 0.5, False)])
def test_conditions(op, value, holds):
    assert analysis.Condition(op, value).holds(0.5) is holds


@given(st.lists(st.one_of(st.floats(allow_nan=True), st.none()), max_size=12), st.integers(1, 6), st.integers(0, 5))
def test_verdict_rules(values, count, limit):
    check = analysis.Check("c", "r", "q", analysis.Condition("<", 0.5), 1, count, limit, "fail")
    measurements = [m(i) if v is None else m(i, v) for i, v in enumerate(values)]
    verdict = analysis.judge(check, measurements)
    failed = [not analysis.judge_measurement(check, x).ok for x in measurements[:count]]
    if verdict.phase == FAILED:
        assert verdict.failures == limit + 1 and failed[len(verdict.judged) - 1]
    elif verdict.phase == PASSED:
        assert len(verdict.judged) == count and sum(failed) <= limit
    else:
        assert len(measurements) < count and sum(failed) <= limit


def test_record_has_every_value_and_time():
    verdict = analysis.judge(CHECK, [m(1_700_000_000, 0.3), m(1_700_000_060, math.inf), m(1_700_000_120, error="x")])
    assert analysis.record(verdict) == {
        "check": "ttft", "role": "prefill", "phase": "failed", "successCondition": "< 0.5", "count": 5,
        "failureLimit": 1, "message": verdict.why,
        "measurements": [{"time": "2023-11-14T22:13:20.000Z", "ok": True, "values": [0.3]},
                         {"time": "2023-11-14T22:14:20.000Z", "ok": False, "values": ["+Inf"]},
                         {"time": "2023-11-14T22:15:20.000Z", "ok": False, "error": "x"}]}


def test_gate_record_and_values():
    verdict = analysis.judge(CHECK, [m(1_700_000_000, 0.3)])
    assert analysis.gate_record([verdict], "running", "x") == {"phase": "running", "message": "x",
                                                               "checks": [analysis.record(verdict)]}
    assert analysis.placeholder_values("s", "n", "r", range(3)) == {"set": "s", "namespace": "n", "revision": "r",
                                                                    "slices": "0|1|2"}


@pytest.mark.parametrize(("interval", "expected"), [
    ("25h", 'interval: Invalid value: "25h": must be at most 24h'),
    ("9" * 400 + "s", "interval: Invalid value: \"" + "9" * 37 + '...": must be at most 24h'),
    ("1\u0661m", 'interval: Invalid value: "1\u0661m": must be a positive duration'),
])
def test_an_interval_is_bounded(interval, expected):
    """Issue 37 item 8: 400 nines read as infinity, and the gate spun ignoring --timeout (count 1)
    or overflowed (count 2). Refused at validation: at most 24h."""
    found = problems(GOOD.replace("interval: 1m", f'interval: "{interval}"'))
    assert len(found) == 1 and found[0].startswith("policy.yaml:") and expected in found[0], found
# --- a recorded verdict, read back ---------------------------------------------------------

GATE = analysis.Check("ttft", "prefill", "q", analysis.Condition("<", 0.5), 60, 3, 1, "fail")
T = 1_764_626_400  # 2025-12-01T22:00:00Z: the wave completed then, the first measurement at once


def passed_record() -> dict:
    verdict = analysis.judge(GATE, [m(T, 0.3), m(T + 60, 0.82), m(T + 120, 0.31)])
    return analysis.gate_record([verdict], verdict.phase, verdict.why)


def forged(change) -> dict:
    record = passed_record()
    change(record, record["checks"][0], record["checks"][0]["measurements"])
    return record


def test_a_verdict_a_run_wrote_reads_back_whole():
    assert analysis.verdict_problems(passed_record(), [GATE], T) == []


FORGERIES = {
    "the probe's: a phase and nothing else": (
        lambda r, c, ms: [r.pop("checks"), r.pop("message")],
        ("checks",), "must record the gate's checks (ttft), each with every measurement, in that order; records none"),
    "a failing value marked as held": (
        lambda r, c, ms: ms[1].update(ok=True),
        ("checks", 0, "measurements", 1, "ok"), "says true, but 0.82 is not < 0.5 (against < 0.5, noData fail): the "
                                                "measurement missed"),
    "a value changed to one that held": (
        lambda r, c, ms: ms[1].update(values=[0.1]),
        ("checks", 0, "measurements", 1, "ok"), "says false, but 0.1 < 0.5"),
    "the gate's phase flipped": (
        lambda r, c, ms: [r.update(phase="failed")],
        ("phase",), "says failed, but its measurements give passed"),
    "too few measurements": (
        lambda r, c, ms: [ms.pop(), c.update(phase="passed")],
        ("checks", 0, "phase",), "says passed, but its 2 measurements give running (count 3, failureLimit 1)"),
    "a looser condition": (
        lambda r, c, ms: c.update(successCondition="< 1"),
        ("checks", 0, "successCondition"), "is '< 1', but the RolloutPolicy's check ttft has '< 0.5'"),
    "a smaller count": (
        lambda r, c, ms: c.update(count=1),
        ("checks", 0, "count"), "is 1, but the RolloutPolicy's check ttft has 3"),
    "a measurement past the verdict": (
        lambda r, c, ms: ms.append(dict(ms[0], time="2025-12-01T22:03:00.000Z")),
        ("checks", 0, "measurements", 3), "comes after the check's verdict (passed after 3 measurements"),
    "measured sooner than the interval": (
        lambda r, c, ms: ms[1].update(time="2025-12-01T22:00:10.000Z"),
        ("checks", 0, "measurements", 1, "time"), "2025-12-01T22:00:10.000Z is before measurement 2 was due "
                                                  "(2025-12-01T22:01:00.000Z: one every 1m from the first"),
    "measured before the wave completed": (
        lambda r, c, ms: [m.update(time=m["time"].replace("2025-12-01", "2025-11-30")) for m in ms],
        ("checks",), "the first measurement (2025-11-30T22:00:00.000Z) is from before the wave completed"),
    "another check's name": (
        lambda r, c, ms: c.update(check="tpot"),
        ("checks",), "must record the gate's checks (ttft), each with every measurement, in that order; records tpot"),
    "a time that is no time": (
        lambda r, c, ms: ms[0].update(time="yesterday"),
        ("checks", 0, "measurements", 0), "time: must be an RFC 3339 time, got 'yesterday'"),
    "a value that is no number": (
        lambda r, c, ms: ms[0].update(values=["0.1"]),
        ("checks", 0, "measurements", 0), "values: '0.1' is not a number"),
    "both values and an error": (
        lambda r, c, ms: ms[0].update(error="x"),
        ("checks", 0, "measurements", 0), "must have either values (the samples) or error"),
    "a phase the gate never records": (
        lambda r, c, ms: r.update(phase="running"),
        ("phase",), "must be \"passed\" or \"failed\", got 'running'"),
}


@pytest.mark.parametrize("change, path, message", FORGERIES.values(), ids=FORGERIES.keys())
def test_a_forged_verdict_is_refused_at_its_field(change, path, message):
    found = analysis.verdict_problems(forged(change), [GATE], T)
    assert any(where == path and message in text for where, text in found), found


def test_a_failed_gate_may_stop_a_check_that_was_still_running():
    tpot = analysis.Check("tpot", "decode", "q", analysis.Condition("<", 0.05), 30, 5, 0, "fail")
    verdicts = [analysis.judge(GATE, [m(T, 0.9), m(T + 60, 0.8)]), analysis.judge(tpot, [m(T, 0.01), m(T + 30, 0.01),
                                                                                          m(T + 60, 0.01)])]
    record = analysis.gate_record(verdicts, FAILED, "x")
    assert [v.phase for v in verdicts] == [FAILED, RUNNING]
    assert analysis.verdict_problems(record, [GATE, tpot], T) == []
