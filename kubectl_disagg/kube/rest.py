"""The REST client: one API server's resources, read and written as plain JSON.

Paths, queries and bodies are built here (bodies encoded once, no typed models) and carried by
`transport` (a benchmark may wrap it to count requests). Every request has a bounded wait, is
retried while the server says "later", and fails as a readable `UserError` (see api_errors).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import time
from collections import namedtuple
from collections.abc import Callable, Mapping

from kubectl_disagg.core import naming
from kubectl_disagg.kube.api_errors import Gone, api_error, connection_error
from kubectl_disagg.kube.transport import NetworkError, Transport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FIELD_MANAGER = naming.MANAGER
# kubectl sets no timeout at all; a CLI that can hang forever on a half-open connection is
# worse. Connect fast, but give a LIST of a thousand objects time to arrive.
REQUEST_TIMEOUT = (10, 120)
WATCH_READ_SLACK = 10  # the server ends a watch at timeoutSeconds; allow it that much lateness
# After a watch's first event, the ones that follow within this long come in the same batch: a
# controller settling many objects at once is read as one change, not one pass per object.
WATCH_LINGER = 0.01
WATCH_LINGER_AT_MOST = 0.1

# Answers that say "come back later" (429 from priority and fairness, or a 5xx with
# Retry-After) are retried after the wait the server asks for, as client-go does.
MAX_RETRIES = 10
MAX_RETRY_AFTER_SECONDS = 30.0

APPLY_PATCH = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


class Resource(namedtuple("Resource", "kind group version plural")):
    """Where a kind lives in the API (`group` is "" for the core group)."""

    __slots__ = ()

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


class ErrorAnswer(Exception):
    """A non-2xx answer, raw: status, HTTP reason, body (a metav1.Status, usually) and headers."""

    def __init__(self, status: int, reason: str | None, body: bytes, headers: Mapping[str, str]):
        super().__init__(f"{status} {reason or ''}".strip())
        self.status, self.reason, self.body, self.headers = status, reason, body, headers


class RestClient:
    """Requests to one API server (`server`, as people may see it: no credentials in it)."""

    def __init__(self, connection: Any, server: str):
        from kubectl_disagg.kube.credentials import Credentials

        self.server = server
        self.transport = Transport(connection, Credentials(connection))

    def close(self) -> None:
        self.transport.close()

    def watch(self, resource: Resource, namespace: str, label_selector: str, resource_version: str,
              timeout: float, field_selector: str | None = None) -> bool:
        """Block until an object changes after `resource_version`: True, or False on timeout."""
        try:
            return bool(self.next_events(resource, namespace, label_selector, resource_version, timeout,
                                         field_selector, linger=0))
        except Gone:
            return True  # too old to watch from: plenty has changed, read everything again

    def next_events(self, resource: Resource, namespace: str, label_selector: str, resource_version: str,
                    timeout: float, field_selector: str | None = None, *, linger: float = WATCH_LINGER,
                    linger_at_most: float = WATCH_LINGER_AT_MOST) -> list[dict]:
        """The changes after `resource_version`, in order: watch events (type ADDED, MODIFIED or
        DELETED, and the object as it now is). Waits up to `timeout` for the first, then takes
        those that follow within `linger` of each other (for at most `linger_at_most`): a burst
        of changes comes back as one batch. Empty when `timeout` passes first. Raises `Gone`
        when the server no longer holds history that far back: read everything again.

        One WATCH request, ended by the server after `timeout` (rounded up to whole seconds,
        the API's unit) or by us after the batch: no polling.
        """
        if timeout <= 0:
            return []
        seconds = max(1, math.ceil(timeout))
        query = {"watch": "true", "labelSelector": label_selector, "resourceVersion": resource_version,
                 "timeoutSeconds": str(seconds)}
        if field_selector:
            query["fieldSelector"] = field_selector
        subject = resource.collection(namespace)
        events: list[dict] = []
        with self._errors(subject):
            response = self.send("GET", path_of(resource, namespace), query, stream=True,
                                 read_timeout=seconds + WATCH_READ_SLACK)
            try:
                lines = response.lines()
                first = next(lines, None)
                if first is not None:
                    events.append(json.loads(first))
                    stop = time.monotonic() + linger_at_most
                    while linger > 0 and time.monotonic() < stop:
                        response.set_read_timeout(linger)
                        try:
                            line = next(lines, None)
                        except NetworkError:
                            break  # quiet for `linger`: the burst is over (a line cut short is read again next time)
                        if line is None:
                            break
                        events.append(json.loads(line))
            finally:
                response.close()  # a watch cut short must not go back to the pool mid-stream
        for event in events:
            if event.get("type") == "ERROR":
                status = event.get("object") or {}
                raise api_error(subject, int(status.get("code") or 500), status.get("reason"), json.dumps(status))
        return events

    def allowed(self, verb: str, resource: Resource, namespace: str) -> bool:
        """Whether this session's user may `verb` the `resource` in `namespace`: one
        SelfSubjectAccessReview, which every authenticated user may create."""
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb, "group": resource.group,
                                                  "version": resource.version, "resource": resource.plural}}}
        with self._errors(f"selfsubjectaccessreview ({verb} {resource.plural})"):
            answer = _json(self.send("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", None, review))
        return bool((answer.get("status") or {}).get("allowed"))

    def list(self, resource: Resource, namespace: str, label_selector: str) -> dict:
        with self._errors(resource.collection(namespace)):
            return _json(self.send("GET", path_of(resource, namespace), {"labelSelector": label_selector}))

    def get(self, resource: Resource, namespace: str, name: str) -> dict:
        with self._errors(resource.subject(name)):
            return _json(self.send("GET", path_of(resource, namespace, name)))

    def create(self, resource: Resource, namespace: str, body: Mapping, *, dry_run: bool = False) -> dict:
        with self._errors(resource.subject(body["metadata"]["name"])):
            return _json(self.send("POST", path_of(resource, namespace),
                                   {"fieldManager": FIELD_MANAGER, **_dry_run_query(dry_run)}, body))

    def replace(self, resource: Resource, namespace: str, body: Mapping) -> dict:
        """PUT: the body's metadata.resourceVersion makes it conditional."""
        name = body["metadata"]["name"]
        with self._errors(resource.subject(name)):
            return _json(self.send("PUT", path_of(resource, namespace, name), {"fieldManager": FIELD_MANAGER}, body))

    def apply(self, resource: Resource, namespace: str, body: Mapping, *, dry_run: bool = False) -> None:
        """Server-side apply of `body`, never forced: fields another manager owns are a conflict."""
        name = body["metadata"]["name"]
        with self._errors(resource.subject(name)):
            self.send("PATCH", path_of(resource, namespace, name),
                      {"fieldManager": FIELD_MANAGER, "force": "false", **_dry_run_query(dry_run)},
                      apply_body(body), APPLY_PATCH)

    def patch(self, resource: Resource, namespace: str, name: str, body: Mapping | list, content_type: str, *,
              dry_run: bool = False) -> None:
        with self._errors(resource.subject(name)):
            self.send("PATCH", path_of(resource, namespace, name),
                      {"fieldManager": FIELD_MANAGER, **_dry_run_query(dry_run)}, body, content_type)

    def patch_status(self, resource: Resource, namespace: str, name: str, status: Mapping) -> None:
        """Merge `status` into a custom object's status subresource."""
        with self._errors(resource.subject(name) + "/status"):
            self.send("PATCH", path_of(resource, namespace, name) + "/status", {"fieldManager": FIELD_MANAGER},
                      {"status": dict(status)}, MERGE_PATCH)

    def delete(self, resource: Resource, namespace: str, name: str, uid: str, resource_version: str, *,
               dry_run: bool = False) -> None:
        # Background: the LWS's StatefulSets and pods go through the garbage collector, the
        # same as `kubectl delete`; the preconditions make a stale delete fail with 409.
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
                   "preconditions": {"uid": uid, "resourceVersion": resource_version}}
        if dry_run:  # in the body: a DELETE with a body ignores the options in its query
            options["dryRun"] = ["All"]
        with self._errors(resource.subject(name)):
            self.send("DELETE", path_of(resource, namespace, name), None, options)

    def send(self, method: str, path: str, query: Mapping[str, str] | None = None, body: Any = None,
             content_type: str = "application/json", *, stream: bool = False,
             read_timeout: float = REQUEST_TIMEOUT[1]) -> Any:
        """One request (retried while the server says "later"); the response, 2xx only.

        `body` is sent as it is when bytes, else as JSON. Any other answer raises `ErrorAnswer`;
        a 401 is retried once with a fresh credential when one can be had (exec plugin, token
        file). No answer at all raises `transport.NetworkError` (see `_errors`).
        """
        url = self.transport.base + path + (("?" + _query_string(query)) if query else "")
        headers = {"Accept": "application/json"}
        payload = None
        if body is not None:
            headers["Content-Type"] = content_type
            payload = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        refreshed = False

        def once() -> Any:
            nonlocal refreshed
            response = self.transport.request(method, url, payload, headers, read_timeout=read_timeout, stream=stream)
            if 200 <= response.status <= 299:
                return response
            answer = ErrorAnswer(response.status, response.reason, response.data, response.headers)
            if response.status == 401 and not refreshed and self.transport.rejected():
                refreshed = True
                return once()
            raise answer

        return retrying(once)

    def _errors(self, subject: str) -> _ReadableErrors:
        """Turn failed requests about `subject` into UserErrors people can read (`with`)."""
        return _ReadableErrors(subject, self.server)


class _ReadableErrors:
    """What `RestClient._errors` returns: a context manager of its own rather than a
    contextlib one (that module is ~1 ms of every cluster command's start, for this alone)."""

    __slots__ = ("subject", "server")

    def __init__(self, subject: str, server: str):
        self.subject, self.server = subject, server

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, error: BaseException | None, traceback: object) -> None:
        if isinstance(error, ErrorAnswer):
            raise api_error(self.subject, error.status, error.reason, error.body) from None
        if isinstance(error, NetworkError):
            raise connection_error(self.server, error) from None


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
    for attempt in itertools.count():
        try:
            return call()
        except ErrorAnswer as err:
            wait = retry_after(err.status, err.headers, attempt)
            if wait is None:
                raise
            sleep(wait)


def _dry_run_query(dry_run: bool) -> dict[str, str]:
    """A write with `dry_run` is judged whole (admission, validation, strict about unknown
    fields) and stored nowhere: what `rollout step --dry-run=server` sends."""
    return {"dryRun": "All", "fieldValidation": "Strict"} if dry_run else {}


def path_of(resource: Resource, namespace: str, name: str | None = None) -> str:
    """The URL path of a namespaced collection, or of one object in it."""
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    path = f"{base}/namespaces/{_quote(namespace)}/{resource.plural}"
    return path if name is None else f"{path}/{_quote(name)}"


# Percent-encoding as urllib.parse does it (not imported: it costs a cluster command ~5 ms).
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~")


def _quote(text: str, space: str = "%20") -> str:
    """`text` as UTF-8 with every byte but the unreserved ones escaped (`quote(text, safe='')`)."""
    return "".join(chr(b) if b in _UNRESERVED else space if b == 0x20 else f"%{b:02X}" for b in text.encode())


def _query_string(query: Mapping[str, str]) -> str:
    """`key=value&...` as an HTML form encodes it (`urlencode`): a space is `+`."""
    return "&".join(f"{_quote(str(key), '+')}={_quote(str(value), '+')}" for key, value in query.items())


def _json(response: Any) -> dict:
    """A read response's body, read whole."""
    return json.loads(response.data) if response.data else {}


# What the API server's YAML reader refuses raw (C1 controls, DEL, non-characters, lone
# surrogates) or reads as a line break (U+0085, U+2028, U+2029: folded inside quotes).
# Compiled on first use (re caches it): milliseconds, and only writes need it.
_YAML_UNSAFE = "[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]"


def apply_body(obj: Mapping) -> bytes:
    """An apply patch (`application/apply-patch+yaml`) the API server reads back as `obj`.

    ASCII-only JSON writes characters beyond U+FFFF as surrogate-pair escapes, which the
    server's YAML reader refuses ("invalid Unicode character escape code"): an emoji in an
    annotation would fail the request. Raw UTF-8 reads fine, and the few characters YAML
    refuses or folds raw are escaped.
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return re.sub(_YAML_UNSAFE, lambda match: f"\\u{ord(match.group()):04x}", text).encode()


def with_kind(item: dict, resource: Resource) -> dict:
    """List items of built-in kinds come without apiVersion and kind: put them back."""
    api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
    return {"apiVersion": api_version, "kind": resource.kind, **item}
