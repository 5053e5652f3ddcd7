"""A real Prometheus scraping a local exporter, for the analysis gates' integration tests."""

from __future__ import annotations

from testenv.prometheus import LatencyExporter, PrometheusServer


TTFT_QUERY = ('histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{'
              'namespace="{{namespace}}", set="{{set}}", role="{{role}}", revision="{{revision}}", '
              'slice=~"{{slices}}"}[5s])))')


def serve_for(exporter: LatencyExporter, prometheus: PrometheusServer, seconds: float, *, namespace: str,
              set_: str, revision: str, role: str = "prefill", slice_: str = "0") -> None:
    """`seconds` of time to first token for one series, once Prometheus has counted it."""
    exporter.set("vllm:time_to_first_token_seconds", seconds, namespace=namespace, set=set_, role=role,
                 revision=revision, slice=slice_)
    prometheus.wait_for_samples(f'rate(vllm:time_to_first_token_seconds_count{{revision="{revision}", '
                                f'namespace="{namespace}"}}[5s]) > 0')


def expose(control_plane, namespace: str, name: str, address: str) -> None:
    """A Service `name` whose one endpoint is `address`, as the controllers of a cluster would leave it.

    The API server's service proxy (v1.36) reads the v1 Endpoints, and only proxies to an address
    whose targetRef is a Pod that has that IP; the EndpointSlice is what the EndpointSlice
    controller would write beside it. No kubelet runs: the Pod's status is written here."""
    ns = f"/api/v1/namespaces/{namespace}"
    control_plane.request("POST", f"{ns}/services", {
        "metadata": {"name": name}, "spec": {"ports": [{"name": "web", "port": 9090, "targetPort": 9090}]}})
    pod = control_plane.request("POST", f"{ns}/pods", {
        "metadata": {"name": f"{name}-0"}, "spec": {"containers": [{"name": "prometheus", "image": "prometheus"}]}})
    pod["status"] = {"phase": "Running", "podIP": address, "podIPs": [{"ip": address}]}
    control_plane.request("PUT", f"{ns}/pods/{name}-0/status", pod)
    target = {"kind": "Pod", "name": f"{name}-0", "namespace": namespace}
    control_plane.request("POST", f"{ns}/endpoints", {"metadata": {"name": name}, "subsets": [
        {"addresses": [{"ip": address, "targetRef": target}], "ports": [{"name": "web", "port": 9090}]}]})
    control_plane.request("POST", f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices", {
        "metadata": {"name": f"{name}-1", "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4", "endpoints": [{"addresses": [address], "targetRef": target}],
        "ports": [{"name": "web", "port": 9090, "protocol": "TCP"}]})
