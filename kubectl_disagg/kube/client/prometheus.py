"""Prometheus's HTTP API (`/api/v1/query`), at an address or through the API server's service proxy.

One client for both ways (design §9.4): requests go over the project's transport through
`RestClient.send`, so they are retried as every read is (a 429 or a 5xx with Retry-After waited
for, a lost answer sent again) and, through the proxy, carry the kubeconfig's credentials. Every
failure is one line (`PrometheusError`): Prometheus's `{"status":"error","errorType":..,"error":..}`,
the API server's Status when the proxy refuses, or what kept the request from an answer.
"""

from __future__ import annotations

import json
from typing import NoReturn
import math
import re
import urllib.parse

from kubectl_disagg.core.delivery.analysis import Prometheus, Sample
from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client.api_errors import network_detail, status_of
from kubectl_disagg.kube.client.kubeconfig import Connection
from kubectl_disagg.kube.client.rest import RestClient
from kubectl_disagg.kube.client.retry import ErrorAnswer
from kubectl_disagg.kube.client.transport import NetworkError
from kubectl_disagg.wait import Deadline, DeadlineExceeded

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
        if endpoint.namespace is None or endpoint.service is None or endpoint.port is None:  # validation refuses it
            raise UserError("the Prometheus of this analysis has neither an address nor a whole Service")
        return cls.through_service_proxy(rest, endpoint.namespace, endpoint.service, endpoint.port)

    def query(self, expression: str, at: float | None = None, deadline: Deadline | None = None) -> tuple[Sample, ...]:
        """The samples of an instant query (a scalar is one sample without labels). A `deadline`
        bounds the request whole, resends included: past it, `DeadlineExceeded` (no answer came
        in time: no measurement, not a failed one)."""
        params = {"query": expression, "timeout": f"{QUERY_TIMEOUT:g}s"}
        if at is not None:
            params["time"] = f"{at:.3f}"
        try:
            response = self._rest.send("GET", self._path, params, read_timeout=QUERY_TIMEOUT + 5, deadline=deadline)
        except ErrorAnswer as error:
            raise PrometheusError(f"{self.where}: {error_line(error.status, error.reason, error.body)}") from None
        except NetworkError as error:
            raise PrometheusError(f"{self.where}: no answer: {network_detail(error)}") from None
        except DeadlineExceeded:
            raise DeadlineExceeded(f"{self.where}: no answer before the deadline") from None
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
    """A success answer's samples: a vector's, or a scalar as one. Anything else, however it
    is malformed, is a PrometheusError saying so (a failed measurement, never a traceback)."""
    if len(body) > MAX_ANSWER_BYTES:
        raise PrometheusError(f"{where}: the answer is {len(body)} bytes, more than a query result a check "
                              f"compares ({MAX_ANSWER_BYTES} at most)")
    try:
        answer = json.loads(body, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # not JSON (an HTML error page), or nested past reading
        raise PrometheusError(f"{where}: the answer is not a Prometheus query result (not JSON)") from None
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(answer, dict) or answer.get("status") != "success" or not isinstance(data, dict):
        raise PrometheusError(f"{where}: the answer is not a Prometheus query result (no status success "
                              "with data)")
    kind, result = data.get("resultType"), data.get("result")
    if not isinstance(kind, str):
        raise PrometheusError(f"{where}: the answer is not a Prometheus query result (no data.resultType)")
    if kind not in ("vector", "scalar"):
        raise PrometheusError(f"{where}: the query gives a {kind[:40]}: a check compares an instant vector or a scalar")
    try:
        if kind == "scalar":
            return (Sample(_value(result)),)
        if not isinstance(result, list):
            raise _Malformed("data.result is not a list")
        return tuple(_sample(item, index) for index, item in enumerate(result))
    except _Malformed as malformed:
        raise PrometheusError(f"{where}: the answer is not a Prometheus query result ({malformed})") from None


MAX_ANSWER_BYTES = 16 * 1024 * 1024  # a check compares a few series; tens of thousands fit
# How Prometheus writes a sample's value: Go's shortest float, or NaN, +Inf, -Inf.
_NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|NaN|[-+]Inf")


class _Malformed(Exception):
    """What is wrong with one part of an answer, for the one line that says so."""


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _sample(item: object, index: int) -> Sample:
    if not isinstance(item, dict):
        raise _Malformed(f"data.result[{index}] is not an object")
    metric = item.get("metric", {})
    if not isinstance(metric, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metric.items()):
        raise _Malformed(f"data.result[{index}].metric is not a map of label names to values")
    return Sample(_value(item.get("value"), f"data.result[{index}].value"), tuple(sorted(metric.items())))


def _value(pair: object, path: str = "data.result") -> float:
    """A [time, "number"] pair's number (NaN for Prometheus's NaN)."""
    if not (isinstance(pair, list) and len(pair) == 2):
        raise _Malformed(f"{path} is not a [time, value] pair")
    at, text = pair
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
        raise _Malformed(f"{path}[0] is not a time")
    if not isinstance(text, str) or not _NUMBER.fullmatch(text):
        raise _Malformed(f"{path}[1] is not a number as Prometheus writes one")
    return float(text)  # NaN, +Inf and -Inf included: float() reads them as Go writes them
