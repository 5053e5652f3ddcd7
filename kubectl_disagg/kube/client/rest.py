"""The REST client: one API server's resources, read and written as plain JSON.

Paths, queries and bodies are built here (bodies encoded once, no typed models) and carried by
`transport` (a benchmark may wrap it to count requests). Every request has a bounded wait, is
retried while the server says "later", and fails as a readable `ApiError` (see api_errors) or,
with no answer at all, `Unreachable`. When a request goes again is `retry`'s, one policy for every request.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import re
import time
import urllib.parse
from dataclasses import dataclass
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api import naming
from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client.api_errors import (AlreadyExists, ApiConflict, ApiError, Gone, NotFound, PatchRejected,
                                                api_error, connection_error)
from kubectl_disagg.kube.client.credentials import Credentials
from kubectl_disagg.kube.client.kubeconfig import Impersonation, load_configuration, redact_url
from kubectl_disagg.kube.client.retry import MAX_RETRIES, ErrorAnswer, backoff, retrying
from kubectl_disagg.kube.client.transport import NetworkError, Transport
from kubectl_disagg.wait import Deadline
from kubectl_disagg.manifests.source import JsonObject

FIELD_MANAGER = naming.MANAGER
# kubectl sets no timeout at all; a CLI that can hang forever on a half-open connection is
# worse. Connect fast, but give a LIST of a thousand objects time to arrive.
REQUEST_TIMEOUT = (10, 120)
WATCH_READ_SLACK = 10  # the server ends a watch at timeoutSeconds; allow it that much lateness
# After a watch's first event, the ones that follow within this long come in the same batch: a
# controller settling many objects at once is read as one change, not one pass per object.
WATCH_LINGER = 0.01
WATCH_LINGER_AT_MOST = 0.1

APPLY_PATCH = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the API (`group` is "" for the core group)."""

    kind: str
    group: str
    version: str
    plural: str

    def subject(self, name: str) -> str:
        """How errors name one object: `leaderworkerset/x`, as kubectl and reconcile spell it."""
        return f"{self.kind.lower()}/{name}"

    def collection(self, namespace: str) -> str:
        return f"{self.plural} in namespace {namespace}"


LWS = Resource(naming.LWS_KIND, naming.LWS_GROUP, naming.LWS_VERSION, "leaderworkersets")
SERVICE = Resource(naming.SERVICE_KIND, "", "v1", "services")
LEASE = Resource("Lease", "coordination.k8s.io", "v1", "leases")
DISAGGREGATED_SET = Resource(naming.SET_KIND, naming.SET_GROUP, naming.SET_VERSION, "disaggregatedsets")
EVENT = Resource("Event", "events.k8s.io", "v1", "events")
ROLE_SCALER = Resource(naming.SCALER_KIND, naming.SET_GROUP, naming.SET_VERSION, "disaggregatedsetrolescalers")
ROLLOUT_STATE = Resource(naming.STATE_KIND, naming.PLUGIN_GROUP, naming.PLUGIN_VERSION, "rolloutstates")  # docs/gitops.md
STATEFULSET = Resource("StatefulSet", "apps", "v1", "statefulsets")  # validate --server's dry runs only
BY_KIND = {resource.kind: resource for resource in (LWS, SERVICE, ROLE_SCALER, STATEFULSET)}


def connect(kubeconfig: str | None = None, context: str | None = None,
            impersonation: Impersonation | None = None, clock: Clock = SYSTEM_CLOCK) -> tuple[RestClient, str]:
    """The client of the API server --kubeconfig and --context name, as kubectl reaches it, and its namespace."""
    connection, namespace = load_configuration(kubeconfig, context, impersonation)
    return RestClient(connection, redact_url(connection.server), clock), namespace


class RestClient:
    """Requests to one API server (`server`, as people may see it: no credentials in it)."""

    def __init__(self, connection: Any, server: str, clock: Clock = SYSTEM_CLOCK):
        self.server, self.clock = server, clock
        self.transport = Transport(connection, Credentials(connection, clock), clock)

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
                    linger_at_most: float = WATCH_LINGER_AT_MOST) -> list[JsonObject]:
        """The changes after `resource_version`, in order: watch events (type ADDED, MODIFIED or
        DELETED, and the object as it now is). Waits up to `timeout` for the first, then takes
        those that follow within `linger` of each other (for at most `linger_at_most`): a burst
        of changes comes back as one batch. Empty when `timeout` passes first. Raises `Gone`
        when the server no longer holds history that far back: read everything again.

        One WATCH request, ended by the server after `timeout` (rounded up to whole seconds,
        the API's unit) or by us after the batch: no polling. A watch cut before its first event
        is started again from the same resourceVersion (nothing is missed) for the time left, as
        client-go's watchers re-establish theirs; a cut after it ends the batch.
        """
        deadline, subject = self.clock.monotonic() + timeout, resource.collection(namespace)
        events: list[JsonObject] = []
        for attempt in itertools.count():
            left = deadline - self.clock.monotonic()
            if left <= 0:
                return []
            seconds = max(1, math.ceil(left))
            query = {"watch": "true", "labelSelector": label_selector, "resourceVersion": resource_version,
                     "timeoutSeconds": str(seconds)}
            if field_selector:
                query["fieldSelector"] = field_selector
            with self._errors(subject):
                response = self.send("GET", path_of(resource, namespace), query, stream=True,
                                     read_timeout=seconds + WATCH_READ_SLACK)
                try:
                    lines = response.lines()
                    try:
                        first = next(lines, None)
                    except NetworkError as cut:
                        if attempt >= MAX_RETRIES:
                            raise
                        wait = backoff(attempt)
                        if self.clock.monotonic() + wait < deadline:
                            time.sleep(wait)
                            continue  # in `finally`, the broken stream is closed first
                        raise cut
                    if first is not None:
                        events.append(json.loads(first))
                        stop = self.clock.monotonic() + linger_at_most
                        while linger > 0 and self.clock.monotonic() < stop:
                            response.set_read_timeout(linger)
                            try:
                                line = next(lines, None)
                            except NetworkError:
                                break  # quiet for `linger`, or cut: the burst is over (what follows is read next time)
                            if line is None:
                                break
                            events.append(json.loads(line))
                finally:
                    response.close()  # a watch cut short must not go back to the pool mid-stream
            break
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
            answer = self._object("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", None, review,
                                  repeatable=True)  # stores nothing
        return bool((answer.get("status") or {}).get("allowed"))

    def serves(self, resource: Resource) -> bool:
        """Whether the API server serves `resource`: its group version's discovery document lists
        it. Discovery is open to every authenticated user (an access check on an object of a kind
        not served answers 403 to a user without the grant, not 404, so it cannot tell)."""
        path = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
        try:
            with self._errors(f"{resource.plural} ({path})"):
                answer = self._object("GET", path)
        except NotFound:
            return False
        return any(entry.get("name") == resource.plural for entry in answer.get("resources") or ())

    def list(self, resource: Resource, namespace: str, label_selector: str) -> JsonObject:
        with self._errors(resource.collection(namespace)):
            return self._object("GET", path_of(resource, namespace), {"labelSelector": label_selector})

    def get(self, resource: Resource, namespace: str, name: str) -> JsonObject:
        with self._errors(resource.subject(name)):
            return self._object("GET", path_of(resource, namespace, name))

    def create(self, resource: Resource, namespace: str, body: Mapping[str, Any], *, dry_run: bool = False) -> JsonObject:
        """POST. Sent again after a lost answer: an AlreadyExists then is our own first sending
        when the stored object holds everything `body` says (read back, and returned)."""
        name = body["metadata"]["name"]
        try:
            with self._errors(resource.subject(name)):
                return self._object("POST", path_of(resource, namespace),
                                    {"fieldManager": FIELD_MANAGER, **_dry_run_query(dry_run)}, body, repeatable=True)
        except AlreadyExists as err:
            stored = self._ours_after_resend(err, resource, namespace, name, body)
            if stored is None:
                raise
            return stored

    def replace(self, resource: Resource, namespace: str, body: Mapping[str, Any]) -> JsonObject:
        """PUT: the body's metadata.resourceVersion makes it conditional. Sent again after a lost
        answer: a Conflict then is our own first sending when the stored object holds `body`."""
        name = body["metadata"]["name"]
        try:
            with self._errors(resource.subject(name)):
                return self._object("PUT", path_of(resource, namespace, name), {"fieldManager": FIELD_MANAGER},
                                    body, repeatable=True)
        except ApiConflict as err:
            stored = self._ours_after_resend(err, resource, namespace, name, body)
            if stored is None:
                raise
            return stored

    def apply(self, resource: Resource, namespace: str, body: Mapping[str, Any], *, dry_run: bool = False) -> None:
        """Server-side apply of `body`, never forced: fields another manager owns are a conflict.
        The same apply twice is the apply once: it goes again after a lost answer."""
        name = body["metadata"]["name"]
        with self._errors(resource.subject(name)):
            self.send("PATCH", path_of(resource, namespace, name),
                      {"fieldManager": FIELD_MANAGER, "force": "false", **_dry_run_query(dry_run)},
                      apply_body(body), APPLY_PATCH, repeatable=True)

    def patch(self, resource: Resource, namespace: str, name: str, body: JsonObject | Sequence[JsonObject],
              content_type: str, *, dry_run: bool = False) -> None:
        """PATCH. A merge patch goes again after a lost answer (twice is once), and so does a
        JSON patch with a `test`: refused then (its test no longer holds), it is our own first
        sending when the stored object holds every value the patch writes."""
        guarded = content_type == JSON_PATCH and isinstance(body, list) and any(op.get("op") == "test" for op in body)
        try:
            with self._errors(resource.subject(name)):
                self.send("PATCH", path_of(resource, namespace, name),
                          {"fieldManager": FIELD_MANAGER, **_dry_run_query(dry_run)}, body, content_type,
                          repeatable=content_type == MERGE_PATCH or guarded)
        except PatchRejected as err:
            if not (guarded and err.resent):
                raise
            try:
                stored = self.get(resource, namespace, name)
            except NotFound:
                raise err from None
            if not isinstance(body, list) or not patched(stored, body):
                raise

    def patch_status(self, resource: Resource, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        """Merge `status` into a custom object's status subresource."""
        with self._errors(resource.subject(name) + "/status"):
            self.send("PATCH", path_of(resource, namespace, name) + "/status", {"fieldManager": FIELD_MANAGER},
                      {"status": dict(status)}, MERGE_PATCH, repeatable=True)

    def delete(self, resource: Resource, namespace: str, name: str, uid: str, resource_version: str, *,
               dry_run: bool = False, propagation: str = "Background") -> None:
        """DELETE with uid and resourceVersion preconditions. Sent again after a lost answer: a
        404 then means the object with that uid is gone, which is what was asked."""
        # Background: the LWS's StatefulSets and pods go through the garbage collector, the
        # same as `kubectl delete`; the preconditions make a stale delete fail with 409.
        # Orphan: the collector removes the object's ownerReferences from its dependents instead.
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation,
                   "preconditions": {"uid": uid, "resourceVersion": resource_version}}
        if dry_run:  # in the body: a DELETE with a body ignores the options in its query
            options["dryRun"] = ["All"]
        try:
            with self._errors(resource.subject(name)):
                self.send("DELETE", path_of(resource, namespace, name), None, options, repeatable=True)
        except NotFound as err:
            if not err.resent:
                raise

    def _object(self, method: str, path: str, *args: Any, **kwargs: Any) -> JsonObject:
        """`send`, and the answer as the API object it must be (see `api_object`)."""
        return api_object(self.send(method, path, *args, **kwargs), self.server, method, path)

    def _ours_after_resend(self, err: ApiError, resource: Resource, namespace: str, name: str,
                           body: Mapping[str, Any]) -> JsonObject | None:
        """After a write refused on its resend: the stored object when it holds what `body`
        says (our first sending landed, its answer lost), else None. Metadata is left out: a
        replaced object's managedFields and resourceVersion move with every write; what it
        holds (a Lease's holder and renewTime, an Event's fields) tells ours from another's."""
        if not err.resent:
            return None
        try:
            stored = self.get(resource, namespace, name)
        except NotFound:
            return None
        return stored if holds(stored, {key: value for key, value in body.items() if key != "metadata"}) else None

    def send(self, method: str, path: str, query: Mapping[str, str] | None = None, body: Any = None,
             content_type: str = "application/json", *, stream: bool = False,
             read_timeout: float = REQUEST_TIMEOUT[1], repeatable: bool | None = None,
             deadline: Deadline | None = None) -> Any:
        """One request, sent again as `retrying` says, all within `deadline`; the response, 2xx only.

        `body` is sent as it is when bytes, else as JSON. Any other answer raises `ErrorAnswer`;
        a 401 is retried once with a fresh credential when one can be had (exec plugin, token
        file). No answer at all raises `transport.NetworkError` (see `_errors`).

        `repeatable` (default: a GET is, a write is not) says a request that may have landed
        can go again: a write whose repetition changes nothing (server-side apply, a merge
        patch, an access review), or one its own precondition refuses once it landed (a JSON
        patch with a `test`, a delete with uid and resourceVersion, a create, a PUT with a
        resourceVersion). An error after such a resend has `resent` set: the caller then reads
        whether what it wanted is there (see `create`, `delete`, `replace`, `ClusterExecutor`).
        """
        url = self.transport.base + path + (("?" + _query_string(query)) if query else "")
        headers, payload = {"Accept": "application/json"}, None
        if body is not None:
            headers["Content-Type"] = content_type
            payload = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        refreshed = False

        def once() -> Any:
            nonlocal refreshed
            response = self.transport.request(method, url, payload, headers, read_timeout=read_timeout, stream=stream,
                                              deadline=deadline)
            if 200 <= response.status <= 299:
                return response
            answer = ErrorAnswer(response.status, response.reason, response.data, response.headers,
                                 f"{method} {path}")
            if response.status == 401 and not refreshed and self.transport.rejected():
                refreshed = True
                return once()
            raise answer

        repeatable = method == "GET" if repeatable is None else repeatable
        return retrying(once, read=method == "GET", repeatable=repeatable, deadline=deadline)

    @contextlib.contextmanager
    def _errors(self, subject: str) -> Iterator[None]:
        """Turn failed requests about `subject` into errors people can read (`with`): an answer
        into an `ApiError`, no answer into `Unreachable`."""
        try:
            yield
        except ErrorAnswer as error:
            readable = api_error(subject, error.status, error.reason, error.body, request=error.request)
            readable.resent = error.resent
            raise readable from None
        except NetworkError as error:
            raise connection_error(self.server, error, getattr(error, "attempts", 1),
                                   getattr(error, "elapsed", 0.0)) from None


def _dry_run_query(dry_run: bool) -> dict[str, str]:
    """A write with `dry_run` is judged whole (admission, validation, strict about unknown
    fields) and stored nowhere: what `rollout step --dry-run=server` sends."""
    return {"dryRun": "All", "fieldValidation": "Strict"} if dry_run else {}


def path_of(resource: Resource, namespace: str, name: str | None = None) -> str:
    """The URL path of a namespaced collection (namespace "": of a cluster's kind), or of one object in it."""
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    path = f"{base}/namespaces/{_quote(namespace)}/{resource.plural}" if namespace else f"{base}/{resource.plural}"
    return path if name is None else f"{path}/{_quote(name)}"


def _quote(text: str) -> str:
    """`text` as one path segment: UTF-8, every byte but the unreserved ones escaped."""
    return urllib.parse.quote(text, safe="")


def _query_string(query: Mapping[str, str]) -> str:
    """`key=value&...` as an HTML form encodes it: a space is `+`."""
    return urllib.parse.urlencode(query)


class NotAnApiServer(UserError):
    """A 2xx answer that is not a Kubernetes API object: the URL leads somewhere else."""


def api_object(response: Any, server: str, method: str, path: str) -> JsonObject:
    """A 2xx answer's body as the API object it must be (every API answer, an object, a list or
    a review, names its kind and apiVersion); anything else is refused naming the server, rather
    than read as an empty object (a plain web server answering `{}` would pass for a set)."""
    try:
        document = json.loads(response.data)
    except (ValueError, UnicodeDecodeError):
        document = None
    if isinstance(document, dict) and isinstance(document.get("kind"), str) and document["kind"] \
            and isinstance(document.get("apiVersion"), str) and document["apiVersion"]:
        return document
    what = ("an empty body" if not response.data else "JSON without kind and apiVersion"
            if isinstance(document, dict) else "something that is not a JSON object")
    kind = response.headers.get("Content-Type") if hasattr(response.headers, "get") else None
    raise NotAnApiServer(f"the server at {server} is not a Kubernetes API server: it answered {method} {path} "
                         f"with {what}{f' ({kind})' if kind else ''}; are --kubeconfig and --context right?")


# What the API server's YAML reader refuses raw (C1 controls, DEL, non-characters, lone
# surrogates) or reads as a line break (U+0085, U+2028, U+2029: folded inside quotes).
# Compiled on first use (re caches it): milliseconds, and only writes need it.
_YAML_UNSAFE = "[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]"


def apply_body(obj: Mapping[str, Any]) -> bytes:
    """An apply patch (`application/apply-patch+yaml`) the API server reads back as `obj`.

    ASCII-only JSON writes characters beyond U+FFFF as surrogate-pair escapes, which the
    server's YAML reader refuses ("invalid Unicode character escape code"): an emoji in an
    annotation would fail the request. Raw UTF-8 reads fine, and the few characters YAML
    refuses or folds raw are escaped.
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return re.sub(_YAML_UNSAFE, lambda match: f"\\u{ord(match.group()):04x}", text).encode()


def holds(stored: object, sent: object) -> bool:
    """Whether `stored` (an object read back) has every field `sent` gave it, at the same value
    (the server adds fields and defaults, never drops what was sent; resourceVersion moves)."""
    if isinstance(sent, Mapping):
        return isinstance(stored, Mapping) and all(
            key == "resourceVersion" or (key in stored and holds(stored[key], value)) for key, value in sent.items())
    return stored == sent


def patched(stored: object, operations: Sequence[Mapping[str, Any]]) -> bool:
    """Whether `stored` holds what the JSON patch `operations` write (add, replace: the value
    at the path; remove: nothing there)."""
    for op in operations:
        if op.get("op") not in ("add", "replace", "remove"):
            continue
        found, value = _at_pointer(stored, op.get("path", ""))
        if op["op"] == "remove" and found or op["op"] != "remove" and not (found and holds(value, op.get("value"))):
            return False
    return True


def _at_pointer(document: object, pointer: str) -> tuple[bool, object]:
    """(found, value) at an RFC 6901 JSON pointer."""
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(document, Mapping) and token in document:
            document = document[token]
        elif isinstance(document, list) and token.isdigit() and int(token) < len(document):
            document = document[int(token)]
        else:
            return False, None
    return True, document


def with_kind(item: JsonObject, resource: Resource) -> JsonObject:
    """List items of built-in kinds come without apiVersion and kind: put them back."""
    api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
    return {"apiVersion": api_version, "kind": resource.kind, **item}
