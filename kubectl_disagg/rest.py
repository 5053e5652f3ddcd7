"""The REST client: one API server's resources, read and written as plain JSON.

Built on the `kubernetes` client (imported when a client is made, so `render` and `validate`
never pay for it), without its typed models: slow for a thousand objects, and lossy. Every
request goes through `transport` (a benchmark may wrap it to count them), has a bounded wait,
and fails as a readable `UserError` (see api_errors).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import time
from urllib.parse import quote
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from kubectl_disagg import __version__, naming
from kubectl_disagg.api_errors import ClientFailure, Gone, api_error, connection_error

FIELD_MANAGER = naming.MANAGER
# kubectl sets no timeout at all; a CLI that can hang forever on a half-open connection is
# worse. Connect fast, but give a LIST of a thousand objects time to arrive.
REQUEST_TIMEOUT = (10, 120)
WATCH_READ_SLACK = 10  # the server ends a watch at timeoutSeconds; allow it that much lateness

# Answers that say "come back later" (429 from priority and fairness, or a 5xx with
# Retry-After) are retried after the wait the server asks for, as client-go does.
MAX_RETRIES = 10
MAX_RETRY_AFTER_SECONDS = 30.0
POOLED_CONNECTIONS = 64  # at least write_scheduler.MAX_IN_FLIGHT_LIMIT: concurrent writes reuse connections

APPLY_PATCH = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the API."""

    kind: str
    group: str  # "" for the core group
    version: str
    plural: str

    def subject(self, name: str) -> str:
        """How errors name one object: `leaderworkerset/x`, as kubectl and reconcile spell it."""
        return f"{self.kind.lower()}/{name}"

    def collection(self, namespace: str) -> str:
        return f"{self.plural} in namespace {namespace}"


LWS = Resource("LeaderWorkerSet", "leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
SERVICE = Resource("Service", "", "v1", "services")
LEASE = Resource("Lease", "coordination.k8s.io", "v1", "leases")
DISAGGREGATED_SET = Resource("DisaggregatedSet", "disaggregatedset.x-k8s.io", "v1", "disaggregatedsets")
EVENT = Resource("Event", "events.k8s.io", "v1", "events")
ROLE_SCALER = Resource("DisaggregatedSetRoleScaler", "disaggregatedset.x-k8s.io", "v1", "disaggregatedsetrolescalers")
BY_KIND = {resource.kind: resource for resource in (LWS, SERVICE, ROLE_SCALER)}


class RestClient:
    """Requests to one API server (`server`, as people may see it: no credentials in it).

    Requests are built here (paths, query, headers) and sent through the client's `ApiClient`
    (authentication, exec-plugin token refresh, TLS, the connection pool), never through its
    generated API classes: `CoreV1Api` alone loads some 250 pydantic models, seconds of a
    `rollout status` on a busy machine (BENCHMARKS.md).
    """

    def __init__(self, configuration: Any, server: str):
        from kubernetes.client.api_client import ApiClient

        self.server = server
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, POOLED_CONNECTIONS)
        self._api_client = ApiClient(configuration)
        self._api_client.user_agent = f"kubectl-disagg/{__version__}"

    @property
    def transport(self) -> Any:
        """What every request goes through: an object whose `request(method, url, ...)` sends it."""
        return self._api_client.rest_client

    @property
    def api_client(self) -> Any:
        """The kubernetes ApiClient under this session, for a request the methods here do not make."""
        return self._api_client

    def close(self) -> None:
        self._api_client.close()

    def watch(self, resource: Resource, namespace: str, label_selector: str, resource_version: str,
              timeout: float, field_selector: str | None = None) -> bool:
        """Block until an object changes after `resource_version`: True, or False on timeout.

        One WATCH request, ended by the server after `timeout` (rounded up to whole seconds,
        the API's unit): no polling.
        """
        from kubernetes import client, watch

        if timeout <= 0:
            return False
        seconds = max(1, math.ceil(timeout))
        custom = client.CustomObjectsApi(self._api_client)
        events = watch.Watch().stream(
            custom.list_namespaced_custom_object, resource.group, resource.version, namespace,
            resource.plural, label_selector=label_selector, resource_version=resource_version,
            timeout_seconds=seconds, **({"field_selector": field_selector} if field_selector else {}),
            _request_timeout=(REQUEST_TIMEOUT[0], seconds + WATCH_READ_SLACK),
        )
        try:
            with self._errors(resource.collection(namespace)):
                return next(events, None) is not None
        except Gone:
            return True  # too old to watch from: plenty has changed, read everything again
        finally:
            events.close()

    def allowed(self, verb: str, resource: Resource, namespace: str) -> bool:
        """Whether this session's user may `verb` the `resource` in `namespace`: one
        SelfSubjectAccessReview, which every authenticated user may create."""
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb, "group": resource.group,
                                                  "version": resource.version, "resource": resource.plural}}}
        with self._errors(f"selfsubjectaccessreview ({verb} {resource.plural})"):
            answer = _json(self._send("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", None, review))
        return bool((answer.get("status") or {}).get("allowed"))

    def list(self, resource: Resource, namespace: str, label_selector: str) -> dict:
        with self._errors(resource.collection(namespace)):
            return _json(self._send("GET", _path(resource, namespace), {"labelSelector": label_selector}))

    def get(self, resource: Resource, namespace: str, name: str) -> dict:
        with self._errors(resource.subject(name)):
            return _json(self._send("GET", _path(resource, namespace, name)))

    def create(self, resource: Resource, namespace: str, body: Mapping, *, dry_run: bool = False) -> dict:
        with self._errors(resource.subject(body["metadata"]["name"])):
            return _json(self._send("POST", _path(resource, namespace),
                                    {"fieldManager": FIELD_MANAGER, **_dry_run_query(dry_run)}, dict(body)))

    def replace(self, resource: Resource, namespace: str, body: Mapping) -> dict:
        """PUT: the body's metadata.resourceVersion makes it conditional."""
        name = body["metadata"]["name"]
        with self._errors(resource.subject(name)):
            return _json(self._send("PUT", _path(resource, namespace, name), {"fieldManager": FIELD_MANAGER},
                                    dict(body)))

    def apply(self, resource: Resource, namespace: str, body: Mapping, *, dry_run: bool = False) -> None:
        self.patch(resource, namespace, body["metadata"]["name"], body, APPLY_PATCH, force=False, dry_run=dry_run)

    def patch(self, resource: Resource, namespace: str, name: str, body: Mapping | list, content_type: str,
              force: bool | None = None, *, dry_run: bool = False) -> None:
        body = list(body) if isinstance(body, list) else dict(body)
        query = {"fieldManager": FIELD_MANAGER, **_dry_run_query(dry_run)}
        if force is not None:
            query["force"] = "true" if force else "false"
        with self._errors(resource.subject(name)):
            _discard(self._send("PATCH", _path(resource, namespace, name), query, body, content_type))

    def patch_status(self, resource: Resource, namespace: str, name: str, status: Mapping) -> None:
        """Merge `status` into a custom object's status subresource."""
        with self._errors(resource.subject(name) + "/status"):
            _discard(self._send("PATCH", _path(resource, namespace, name) + "/status",
                                {"fieldManager": FIELD_MANAGER}, {"status": dict(status)}, MERGE_PATCH))

    def delete(self, resource: Resource, namespace: str, name: str, uid: str, resource_version: str, *,
               dry_run: bool = False) -> None:
        # Background: the LWS's StatefulSets and pods go through the garbage collector, the
        # same as `kubectl delete`; the preconditions make a stale delete fail with 409.
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
                   "preconditions": {"uid": uid, "resourceVersion": resource_version}}
        if dry_run:  # in the body: a DELETE with a body ignores the options in its query
            options["dryRun"] = ["All"]
        with self._errors(resource.subject(name)):
            _discard(self._send("DELETE", _path(resource, namespace, name), None, options))

    def _send(self, method: str, path: str, query: Mapping[str, str] | None = None, body: Any = None,
              content_type: str = "application/json") -> Any:
        """One request (retried while the server says "later"); the raw response, 2xx only.

        Anything else raises the client's ApiException (see `_errors`).
        """
        from kubernetes.client.exceptions import ApiException

        def send() -> Any:
            headers = {"Accept": "application/json"}
            if body is not None:
                headers["Content-Type"] = content_type
            request = self._api_client.param_serialize(
                method, path, query_params=list((query or {}).items()), header_params=headers, body=body,
                auth_settings=["BearerToken"])
            response = self._api_client.call_api(*request, _request_timeout=REQUEST_TIMEOUT)
            if not 200 <= response.status <= 299:
                response.read()
                raise ApiException.from_response(http_resp=response, body=None, data=None)
            return response.response

        return retrying(send)

    @contextlib.contextmanager
    def _errors(self, subject: str) -> Iterator[None]:
        """Turn client exceptions about `subject` into UserErrors people can read."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            yield
        except ApiException as err:
            if not err.status:  # the client gave up before any answer (TLS, mostly)
                raise connection_error(self.server, ClientFailure(err.reason)) from None
            raise api_error(subject, err.status, err.reason, err.body) from None
        except HTTPError as err:
            raise connection_error(self.server, err) from None


def retry_after(status: int | None, headers: Mapping[str, str] | None, attempt: int) -> float | None:
    """Seconds to wait before retrying an answer, or None when it must not be retried.

    429 (priority and fairness, or a rate limit) is always "later": after Retry-After, else 1 s.
    A 5xx is retried only when the server says when (Retry-After), as client-go does. The wait
    is capped, and so are the attempts.
    """
    if attempt >= MAX_RETRIES or status is None or not (status == 429 or 500 <= status < 600):
        return None
    raw = next((value for key, value in (headers or {}).items() if key.lower() == "retry-after"), None)
    try:
        seconds = float(raw) if raw is not None else None
    except ValueError:
        seconds = None  # an HTTP date: not what the API server sends; wait the default
    if seconds is None:
        if status != 429:
            return None
        seconds = 1.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)


def retrying(call: Callable[[], Any], sleep: Callable[[float], None] = time.sleep) -> Any:
    """`call()`, again after the server's Retry-After while it answers 429 (or a 5xx with Retry-After).

    Safe for writes: each carries its precondition, so a retry of one that did land fails with
    409 instead of applying twice.
    """
    from kubernetes.client.exceptions import ApiException

    for attempt in itertools.count():
        try:
            return call()
        except ApiException as err:
            wait = retry_after(err.status, err.headers, attempt)
            if wait is None:
                raise
            sleep(wait)


def _dry_run_query(dry_run: bool) -> dict[str, str]:
    """A write with `dry_run` is judged whole (admission, validation, strict about unknown
    fields) and stored nowhere: what `rollout step --dry-run=server` sends."""
    return {"dryRun": "All", "fieldValidation": "Strict"} if dry_run else {}


def _path(resource: Resource, namespace: str, name: str | None = None) -> str:
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    path = f"{base}/namespaces/{quote(namespace, safe='')}/{resource.plural}"
    return path if name is None else f"{path}/{quote(name, safe='')}"


def _discard(response: Any) -> None:
    """Read an unwanted body to its end before the connection goes back to the pool.

    Released unread, its bytes stay in the socket and the next request on that connection
    reads them as its status line (a 50 KB object answering a patch is enough).
    """
    try:
        response.data  # noqa: B018 - reading is the point
    finally:
        response.release_conn()


def _json(response: Any) -> dict:
    try:
        return json.loads(response.data) if response.data else {}
    finally:
        response.release_conn()


def with_kind(item: dict, resource: Resource) -> dict:
    """List items of built-in kinds come without apiVersion and kind: put them back."""
    api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
    return {"apiVersion": api_version, "kind": resource.kind, **item}
