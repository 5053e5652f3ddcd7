"""Prometheus's answers read: vectors, scalars, and every failure as one line."""

from __future__ import annotations

import json
import math

import pytest

from kubectl_disagg.core.analysis import Prometheus, Sample
from kubectl_disagg.kube.client import prometheus
from kubectl_disagg.kube.client.prometheus import PrometheusClient, PrometheusError


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


class Answers:
    """A local HTTP server answering each request with the next (status, headers, body)."""

    def __init__(self, *answers):
        import http.server
        import threading
        self.answers, self.paths = list(answers), []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.paths.append(self.path)
                status, headers, body = outer.answers.pop(0)
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


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
