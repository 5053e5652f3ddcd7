"""Prometheus's answers read: vectors, scalars, and every failure as one line."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st

from kubectl_disagg.core.delivery.analysis import Prometheus, Sample
from kubectl_disagg.kube.client import prometheus
from kubectl_disagg.kube.client.prometheus import PrometheusClient, PrometheusError
from tests.fakes.servers import Answers, Silent
from tests.support.kube import bounded


def body(data: dict) -> bytes:
    return json.dumps({"status": "success", "data": data}).encode()


def test_a_vector():
    got = prometheus.samples(body({"resultType": "vector", "result": [
        {"metric": {"role": "prefill", "slice": "0"}, "value": [1700000000.1, "0.31"]},
        {"metric": {}, "value": [1700000000.1, "NaN"]}, {"metric": {}, "value": [1, "+Inf"]}]}), "P")
    assert got[0] == Sample(0.31, (("role", "prefill"), ("slice", "0")))
    assert math.isnan(got[1].value) and got[2].value == math.inf


def test_a_scalar_and_an_empty_vector():
    assert prometheus.samples(body({"resultType": "scalar", "result": [1, "2.5"]}), "P") == (Sample(2.5),)
    assert prometheus.samples(body({"resultType": "vector", "result": []}), "P") == ()


@pytest.mark.parametrize("answer, message", [
    (body({"resultType": "matrix", "result": []}), "P: the query gives a matrix: a check compares"),
    (b"<html>not found</html>", "P: the answer is not a Prometheus query result"),
    (body({"resultType": "vector", "result": [{"value": [1, "x"]}]}), "P: the answer is not a Prometheus"),
])
def test_answers_that_are_no_measurement(answer, message):
    with pytest.raises(PrometheusError) as raised:
        prometheus.samples(answer, "P")
    assert str(raised.value).startswith(message)


def test_error_bodies_become_one_line():
    answer = json.dumps({"status": "error", "errorType": "bad_data",
                         "error": "invalid parameter \"query\": 1:5: parse error: unexpected"}).encode()
    assert prometheus.error_line(400, "Bad Request", answer) == (
        '400 bad_data: invalid parameter "query": 1:5: parse error: unexpected')
    status = json.dumps({"kind": "Status", "status": "Failure", "reason": "ServiceUnavailable",
                         "message": 'no endpoints available for service "prometheus"', "code": 503}).encode()
    assert 'no endpoints available for service "prometheus"' in prometheus.error_line(503, None, status)


def test_the_service_proxy_path():
    class Rest:
        server = "https://127.0.0.1:6443"
    client = PrometheusClient.for_endpoint(Prometheus(namespace="monitoring", service="prom", port="web"), Rest())
    assert client._path == "/api/v1/namespaces/monitoring/services/prom:web/proxy/api/v1/query"
    assert client.where == "Prometheus at service monitoring/prom:web (through https://127.0.0.1:6443)"


def test_connection_refused_is_one_line():
    client = PrometheusClient.at_address("http://127.0.0.1:1")
    with pytest.raises(PrometheusError) as raised:
        client.query("up")
    assert str(raised.value) == "Prometheus at http://127.0.0.1:1: no answer: connection refused"


SCALAR = body({"resultType": "scalar", "result": [1, "0.25"]})
BAD = json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode()


def test_a_read_is_retried_as_every_read_is():
    server = Answers((503, {"Retry-After": "0"}, b"busy"), (200, {}, SCALAR))
    try:
        assert PrometheusClient.at_address(server.address).query('up{a="b"}') == (Sample(0.25),)
        assert len(server.paths) == 2 and server.paths[0].startswith("/api/v1/query?query=up%7Ba%3D%22b%22%7D")
    finally:
        server.close()


def test_a_refused_query_is_not_retried():
    server = Answers((400, {"Content-Type": "application/json"}, BAD))
    try:
        with pytest.raises(PrometheusError, match=r"^Prometheus at http://127\.0\.0\.1:\d+/prefix: 400 bad_data: parse error$"):
            PrometheusClient.at_address(server.address + "/prefix").query("up")
        assert server.paths[0].startswith("/prefix/api/v1/query?")
    finally:
        server.close()


# --- answers that are no vector of numbers: each a failed measurement, with its reason ---------

def vector(*items) -> bytes:
    return body({"resultType": "vector", "result": list(items)})


MALFORMED = {
    "metric null": (vector({"metric": None, "value": [1, "0.1"]}), "data.result[0].metric is not a map"),
    "metric a list": (vector({"metric": ["a", "b"], "value": [1, "0.1"]}), "data.result[0].metric is not a map"),
    "metric a string": (vector({"metric": "up", "value": [1, "0.1"]}), "data.result[0].metric is not a map"),
    "label value a number": (vector({"metric": {"slice": 0}, "value": [1, "0.1"]}), "metric is not a map"),
    "value a string": (vector({"metric": {}, "value": "12"}), "data.result[0].value is not a [time, value] pair"),
    "value one item": (vector({"metric": {}, "value": ["0.1"]}), "is not a [time, value] pair"),
    "value three items": (vector({"metric": {}, "value": [1, "0.1", "x"]}), "is not a [time, value] pair"),
    "value missing": (vector({"metric": {}}), "data.result[0].value is not a [time, value] pair"),
    "value not a number": (vector({"metric": {}, "value": [1, "fast"]}), "value[1] is not a number"),
    "value a JSON number": (vector({"metric": {}, "value": [1, 0.1]}), "value[1] is not a number"),
    "value a boolean": (vector({"metric": {}, "value": [1, True]}), "value[1] is not a number"),
    "value Python's inf": (vector({"metric": {}, "value": [1, "inf"]}), "value[1] is not a number"),
    "value Python's nan": (vector({"metric": {}, "value": [1, "nan"]}), "value[1] is not a number"),
    "value with underscores": (vector({"metric": {}, "value": [1, "1_000"]}), "value[1] is not a number"),
    "value with spaces": (vector({"metric": {}, "value": [1, " 1"]}), "value[1] is not a number"),
    "time a string": (vector({"metric": {}, "value": ["now", "0.1"]}), "value[0] is not a time"),
    "sample not an object": (vector([1, "0.1"]), "data.result[0] is not an object"),
    "result not a list": (body({"resultType": "vector", "result": {"a": 1}}), "data.result is not a list"),
    "scalar not a pair": (body({"resultType": "scalar", "result": "0.1"}), "data.result is not a [time, value]"),
    "bare NaN in JSON": (b'{"status":"success","data":{"resultType":"scalar","result":[1,NaN]}}', "not JSON"),
    "matrix": (body({"resultType": "matrix", "result": []}), "the query gives a matrix: a check compares"),
    "string": (body({"resultType": "string", "result": [1, "x"]}), "the query gives a string: a check compares"),
    "resultType missing": (body({"result": []}), "no data.resultType"),
    "data missing": (json.dumps({"status": "success"}).encode(), "no status success with data"),
    "data null": (json.dumps({"status": "success", "data": None}).encode(), "no status success with data"),
    "status missing": (json.dumps({"data": {"resultType": "vector", "result": []}}).encode(), "no status success"),
    "a list": (b"[]", "no status success with data"),
    "not JSON": (b"up 1", "not JSON"),
    "empty": (b"", "not JSON"),
    "not UTF-8": (b"\xff\xfe{", "not JSON"),
    "an HTML error page": (b"<html><body><h1>502 Bad Gateway</h1></body></html>", "not JSON"),
    "nested past reading": (b"[" * 200_000 + b"]" * 200_000, "not JSON"),
    "a huge body": (vector(*[{"metric": {"i": str(i)}, "value": [1, "0.1"]} for i in range(400_000)]),
                    "bytes, more than a query result a check compares"),
}


@pytest.mark.parametrize("answer, reason", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_answer_is_a_prometheus_error_saying_why(answer, reason):
    with pytest.raises(PrometheusError) as raised:
        prometheus.samples(answer, "P")
    assert str(raised.value).startswith("P: ") and reason in str(raised.value)


@pytest.mark.parametrize("text, value", [("NaN", math.nan), ("+Inf", math.inf), ("-Inf", -math.inf),
                                         ("1e-3", 0.001), ("-0.5", -0.5), ("3", 3.0), (".5", 0.5)])
def test_values_as_prometheus_writes_them(text, value):
    (sample,) = prometheus.samples(vector({"metric": {}, "value": [1.5, text]}), "P")
    assert sample.value == value or (math.isnan(value) and math.isnan(sample.value))


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)
VALUE_TEXT = st.sampled_from(["0.1", "NaN", "+Inf", "-Inf", "inf", "nan", "1_0", " 1", "x", "12", ""])
SAMPLE = st.fixed_dictionaries({"metric": st.one_of(JSON, st.dictionaries(st.text(max_size=4), JSON, max_size=3)),
                                "value": st.one_of(JSON, st.tuples(JSON, VALUE_TEXT).map(list), VALUE_TEXT)})
SHAPED = st.fixed_dictionaries({"status": st.just("success"), "data": st.fixed_dictionaries(
    {"resultType": st.sampled_from(["vector", "vector", "scalar", "matrix", None]),
     "result": st.one_of(st.lists(SAMPLE, min_size=1, max_size=3), st.tuples(JSON, VALUE_TEXT).map(list), JSON)})})


@settings(max_examples=300)
@given(st.one_of(SHAPED, JSON))
def test_any_answer_is_samples_or_a_prometheus_error(answer):
    """Whatever comes back, the measurement gets samples of numbers or a reason: never another exception."""
    try:
        got = prometheus.samples(json.dumps(answer).encode(), "P")
    except PrometheusError as error:
        assert str(error).startswith("P: ")
        return
    assert all(isinstance(s.value, float) and all(isinstance(k, str) and isinstance(v, str) for k, v in s.labels)
               for s in got)


def test_a_malformed_answer_is_a_failed_measurement_and_the_gate_gets_its_verdict():
    # The probe's case: `metric: null` crashed `rollout step` (and every one after it).
    from kubectl_disagg.core.delivery.analysis import FAILED, Check, Condition
    from kubectl_disagg.rollout.analysis import run_gate

    server = Answers((200, {}, vector({"metric": None, "value": [1, "0.1"]})))
    try:
        check = Check("ttft", "prefill", "up", Condition("<", 0.5), 60, 1, 0, "fail")
        run = run_gate([check], {}, PrometheusClient.at_address(server.address).query)
    finally:
        server.close()
    assert run.phase == FAILED
    (judged,) = run.verdicts[0].judged
    assert judged.measurement.error == (f"Prometheus at {server.address}: the answer is not a Prometheus query "
                                        "result (data.result[0].metric is not a map of label names to values)")


# --- a Prometheus that accepts and never answers: the deadline bounds everything -------------


@pytest.mark.parametrize("trickle", [None, 0.2], ids=["silent", "trickling"])
def test_a_query_to_a_hung_prometheus_ends_at_the_deadline(trickle):
    from kubectl_disagg.wait import Deadline, DeadlineExceeded

    server = Silent(trickle)
    try:
        client = PrometheusClient.at_address(server.address)
        raised, took = bounded(lambda: client.query("up", deadline=Deadline.after(1.0)), 1.0 + 1.5)
    finally:
        server.close()
    assert isinstance(raised, DeadlineExceeded), raised
    assert str(raised) == f"Prometheus at {server.address}: no answer before the deadline"
    assert 0.9 <= took <= 1.5
