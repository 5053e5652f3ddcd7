"""Analysis gates against a real Prometheus (Debian's 2.42) scraping the test's latency exporter:
by address, and through the API server's service proxy (a Service and EndpointSlice naming
Prometheus inside a network namespace of the test's own; root only)."""

from __future__ import annotations

from kubectl_disagg.core.delivery import analysis
from kubectl_disagg.core.delivery.analysis import Check, Condition
from kubectl_disagg.kube.client import PrometheusClient, connect
from kubectl_disagg.rollout.analysis import run_gate
from testenv.prometheus import LatencyExporter
from tests.support.prometheus import TTFT_QUERY, expose


VALUES = analysis.placeholder_values("llama", "serving", "new", [0])


def ttft(count: int = 3, no_data: str = "fail") -> Check:
    return Check("ttft", "prefill", TTFT_QUERY, Condition("<", 0.5), 1, count, 0, no_data)


def serve(exporter: LatencyExporter, seconds: float, revision: str = "new", slice_: str = "0") -> None:
    exporter.set("vllm:time_to_first_token_seconds", seconds, namespace="serving", set="llama", role="prefill",
                 revision=revision, slice=slice_)


def test_a_good_canary_passes_with_its_values(exporter, prometheus):
    serve(exporter, 0.1)
    prometheus.wait_for_samples('rate(vllm:time_to_first_token_seconds_count{revision="new"}[5s]) > 0')
    client = PrometheusClient.at_address(prometheus.address)
    run = run_gate([ttft()], VALUES, client.query)
    assert run.phase == analysis.PASSED, run.why
    values = run.verdicts[0].values
    assert len(values) == 3 and all(0.08 < v <= 0.1 for v in values)  # in the bucket of 0.1 s
    assert run.why == f"ttft: {max(values):.4g} < 0.5 at 3 measurements"


def test_a_slow_canary_fails(exporter, prometheus):
    serve(exporter, 2.0, revision="slow")
    prometheus.wait_for_samples('rate(vllm:time_to_first_token_seconds_count{revision="slow"}[5s]) > 0')
    run = run_gate([ttft()], {**VALUES, "revision": "slow"}, PrometheusClient.at_address(prometheus.address).query)
    assert run.phase == analysis.FAILED
    assert run.why.startswith("ttft: 1 of 1 measurements failed (failureLimit 0): 2.4")


def test_no_data_follows_no_data(prometheus):
    client = PrometheusClient.at_address(prometheus.address)
    values = {**VALUES, "revision": "never-served"}
    assert run_gate([ttft(1)], values, client.query).phase == analysis.FAILED
    assert run_gate([ttft(1, no_data="pass")], values, client.query).phase == analysis.PASSED


def test_prometheus_refusing_the_query_is_a_failed_measurement(exporter, prometheus):
    # Valid PromQL (offline validation passes it) that Prometheus refuses when it runs: many buckets
    # on each side of a one-to-one match.
    query = 'vllm:time_to_first_token_seconds_bucket{set="{{set}}"} * on() vllm:time_to_first_token_seconds_bucket'
    assert analysis.query_error(query) is None
    serve(exporter, 0.1)
    prometheus.wait_for_samples("vllm:time_to_first_token_seconds_bucket")
    check = Check("bad", "prefill", query, Condition("<", 1), 1, 1, 0, "pass")
    run = run_gate([check], VALUES, PrometheusClient.at_address(prometheus.address).query)
    assert run.phase == analysis.FAILED
    (judged,) = run.verdicts[0].judged
    assert judged.why.startswith(f"error: Prometheus at {prometheus.address}: 422 execution: ")
    assert "\n" not in judged.why


def test_through_the_api_servers_service_proxy(control_plane, namespace, prometheus_in_a_namespace):
    server, inner, netns = prometheus_in_a_namespace
    expose(control_plane, namespace, "prometheus", netns.inside)
    serve(inner, 0.1)
    server.wait_for_samples('rate(vllm:time_to_first_token_seconds_count[5s]) > 0')
    rest, _ = connect(str(control_plane.kubeconfig), "admin")
    endpoint = analysis.Prometheus(namespace=namespace, service="prometheus", port="web")
    run = run_gate([ttft()], VALUES, PrometheusClient.for_endpoint(endpoint, rest).query)
    assert run.phase == analysis.PASSED, run.why
    # A Service with no endpoints: the API server's refusal, one line, a failed measurement.
    gone = analysis.Prometheus(namespace=namespace, service="nothing", port=9090)
    run = run_gate([ttft(1)], VALUES, PrometheusClient.for_endpoint(gone, rest).query)
    assert run.phase == analysis.FAILED
    assert 'services "nothing" not found' in run.verdicts[0].judged[0].why
