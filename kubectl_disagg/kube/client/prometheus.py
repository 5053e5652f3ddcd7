"""Prometheus's HTTP API (`/api/v1/query`), at an address or through the API server's service proxy.

One client for both ways (design §9.4): requests go over the project's transport through
`RestClient.send`, so they are retried as every read is (a 429 or a 5xx with Retry-After waited
for, a lost answer sent again) and, through the proxy, carry the kubeconfig's credentials. Every
failure is one line (`PrometheusError`): Prometheus's `{"status":"error","errorType":..,"error":..}`,
the API server's Status when the proxy refuses, or what kept the request from an answer.
"""

from __future__ import annotations

import json
import math
import urllib.parse

from kubectl_disagg.core.analysis import Prometheus, Sample
from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client.api_errors import network_detail, status_of
from kubectl_disagg.kube.client.kubeconfig import Connection
from kubectl_disagg.kube.client.rest import RestClient
from kubectl_disagg.kube.client.retry import ErrorAnswer
from kubectl_disagg.kube.client.transport import NetworkError

QUERY_TIMEOUT = 30.0  # seconds: Prometheus's own default query timeout is 2 min; a gate should not hang


class PrometheusError(UserError):
    """A measurement that got no answer to judge: Prometheus (or the way to it) said why, in one line."""


class PrometheusClient:
    """Instant queries to one Prometheus; `where` names it in messages."""

    def __init__(self, rest: RestClient, path: str, where: str):
        self._rest, self._path, self.where = rest, path, where

    @classmethod
    def at_address(cls, address: str) -> "PrometheusClient":
        """Prometheus at `address` (http:// or https://, maybe with a path prefix), no credentials."""
        rest = RestClient(Connection(server=address.rstrip("/"), whose=f"Prometheus at {address}"), address)
        return cls(rest, "/api/v1/query", f"Prometheus at {address}")

    @classmethod
    def through_service_proxy(cls, rest: RestClient, namespace: str, service: str, port: int | str) -> "PrometheusClient":
        """Prometheus behind Service `namespace/service:port`, through the API server's proxy."""
        namespace_part, service_part, port_part = (urllib.parse.quote(str(part), safe="")
                                                   for part in (namespace, service, port))
        path = f"/api/v1/namespaces/{namespace_part}/services/{service_part}:{port_part}/proxy/api/v1/query"
        return cls(rest, path, f"Prometheus at service {namespace}/{service}:{port} (through {rest.server})")

    @classmethod
    def for_endpoint(cls, endpoint: Prometheus, rest: RestClient | None) -> "PrometheusClient":
        if endpoint.address is not None:
            return cls.at_address(endpoint.address)
        if rest is None:
            raise UserError("the Prometheus of this analysis is a Service: it is reached through the API server, "
                            "which this command has no connection to")
        return cls.through_service_proxy(rest, endpoint.namespace, endpoint.service, endpoint.port)

    def query(self, expression: str, at: float | None = None) -> tuple[Sample, ...]:
        """The samples of an instant query (a scalar is one sample without labels)."""
        params = {"query": expression, "timeout": f"{QUERY_TIMEOUT:g}s"}
        if at is not None:
            params["time"] = f"{at:.3f}"
        try:
            response = self._rest.send("GET", self._path, params, read_timeout=QUERY_TIMEOUT + 5)
        except ErrorAnswer as error:
            raise PrometheusError(f"{self.where}: {error_line(error.status, error.reason, error.body)}") from None
        except NetworkError as error:
            raise PrometheusError(f"{self.where}: no answer: {network_detail(error)}") from None
        return samples(response.data, self.where)

    def close(self) -> None:
        self._rest.close()


def error_line(status: int, reason: str | None, body: bytes) -> str:
    """One line for a non-2xx answer: Prometheus's errorType and error, else the API server's Status."""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and answer.get("status") == "error":
        return f"{status} {answer.get('errorType') or 'error'}: {answer.get('error') or 'no details given'}"
    # Else the API server's proxy answered for Prometheus (a metav1.Status), or something else did.
    status_object = status_of(body)
    code = f"{status} {status_object.get('reason') or reason or ''}".strip()
    message = str(status_object.get("message") or "").strip()
    return f"{code}: {message}" if message else code


def samples(body: bytes, where: str) -> tuple[Sample, ...]:
    """A success answer's samples: a vector's, or a scalar as one."""
    try:
        answer = json.loads(body)
        data = answer["data"]
        kind, result = data["resultType"], data["result"]
        if answer.get("status") != "success":
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise PrometheusError(f"{where}: the answer is not a Prometheus query result") from None
    try:
        if kind == "scalar":
            return (Sample(_value(result[1])),)
        if kind == "vector":
            return tuple(Sample(_value(item["value"][1]), tuple(sorted(item.get("metric", {}).items())))
                         for item in result)
    except (ValueError, KeyError, TypeError, IndexError):
        raise PrometheusError(f"{where}: the answer is not a Prometheus query result") from None
    raise PrometheusError(f"{where}: the query gives a {kind}: a check compares an instant vector or a scalar")


def _value(text: str) -> float:
    value = float(text)  # Prometheus writes NaN, +Inf and -Inf as Go does, which float() reads
    return math.nan if math.isnan(value) else value
