"""The one module that talks to the API server.

Reads a set's live objects into a `Snapshot`, executes the actions `reconcile` returns,
watches for the next change and holds the per-set Lease that keeps two steppers apart.
Everything else in kubectl-disagg is pure and never imports this.

Built on the `kubernetes` client, imported lazily (inside methods): `render` and `validate`
never pay for it. Errors from the API server or the network become `UserError` lines a person
can act on, never tracebacks.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import getpass
import json
import logging
import math
import os
import re
import secrets
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping
from urllib.parse import parse_qs, urlsplit

import yaml

from kubectl_disagg import __version__, naming
from kubectl_disagg.errors import UserError
from kubectl_disagg.reconcile import Action, Annotate, Create, Delete, Scale
from kubectl_disagg.render import DEFAULT_NAMESPACE
from kubectl_disagg.snapshot import Snapshot, lws_from_object, service_from_object

if TYPE_CHECKING:
    from kubectl_disagg.model import DisaggregatedSet

DEFAULT_KUBECONFIG = "~/.kube/config"
SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
FIELD_MANAGER = naming.MANAGER
LEASE_PREFIX = "kubectl-disagg-"
DEFAULT_LEASE_SECONDS = 30

# kubectl sets no timeout at all; a CLI that can hang forever on a half-open connection is
# worse. Connect fast, but give a LIST of a thousand objects time to arrive.
REQUEST_TIMEOUT = (10, 120)
WATCH_READ_SLACK = 10  # the server ends a watch at timeoutSeconds; allow it that much lateness

APPLY_PATCH = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
PATCH_REJECTED_MESSAGE = "the server rejected our request due to an error in our request"


# --- errors -----------------------------------------------------------------------------------


class Conflict(UserError):
    """The object changed or went away since it was read: read again, then act again."""

    def __init__(self, what: str):
        super().__init__(f"{what}; run the step again")
        self.what = what  # e.g. "leaderworkerset/x changed since it was read (409 Conflict)"


class NotFound(UserError):
    pass


class AlreadyExists(UserError):
    pass


class Gone(UserError):
    """A watch asked for a resourceVersion the server has already compacted away."""


class PatchRejected(UserError):
    """422 without details: what the API server answers when a JSON patch `test` (or a path it
    names) does not hold against the stored object."""


class LeaseHeld(UserError):
    """Another stepper holds the set's Lease: refuse, naming it and when it expires."""

    def __init__(self, lease: str, namespace: str, holder: str, expires: datetime.datetime | None,
                 now: datetime.datetime | None = None):
        self.holder, self.expires = holder, expires
        now = now or _utcnow()
        if expires is None:
            until = "with no expiry recorded"
        else:
            remaining = max(0, math.ceil((expires - now).total_seconds()))
            until = f"until {format_time(expires)} ({remaining}s from now, unless renewed)"
        super().__init__([
            f"lease/{lease} in {namespace} is held by {holder} {until}: another `rollout step` is "
            "acting on this DisaggregatedSet",
            "wait for it to finish (or for the lease to expire if it was killed), then run the step again",
        ])


class LeaseLost(UserError):
    """The Lease was taken over (or deleted) while we thought we held it: stop acting at once."""


def api_error(subject: str, status: int, reason: str | None, body: str | bytes | None) -> UserError:
    """A readable error for an API answer about `subject` (e.g. "leaderworkerset/x").

    Pure: the status code, the HTTP reason and the body (a metav1.Status, usually) in, one
    line out, typed so callers can tell "read again and retry" from "give up".
    """
    status_object = _status_object(body)
    message = str(status_object.get("message") or "").strip() or (reason or "").strip() or "no details given"
    api_reason = str(status_object.get("reason") or reason or "").strip()
    code = f"{status} {api_reason}".strip()
    if status == 409 and api_reason == "AlreadyExists":
        return AlreadyExists(f"{subject} already exists ({code})")
    if status == 409 and message.startswith("Apply failed"):
        # Server-side apply found fields another manager owns; forcing would silently take
        # them over, which is exactly what a stepper must not do.
        return UserError(f"{subject}: {message} ({code}); kubectl-disagg never forces field "
                         "ownership: find out who else manages this object")
    if status == 409:
        return Conflict(f"{subject} changed since it was read ({code})")
    if status == 404:
        details = status_object.get("details") or {}
        if details.get("kind") == "namespaces":  # e.g. creating the Lease in a namespace that is not there
            return NotFound(f"namespace {details.get('name', '?')} not found ({code})")
        return NotFound(f"{subject} not found ({code})")
    if status == 410:
        return Gone(f"{subject}: {message} ({code})")
    if status == 403:
        return UserError(f"{subject}: forbidden: {_after(message, 'forbidden: ')}")
    if status == 401:
        return UserError(f"{subject}: unauthorized ({code}): the API server rejected the credentials "
                         "of this kubeconfig context; log in again or choose another --context")
    if status == 422 and message == PATCH_REJECTED_MESSAGE and not status_object.get("details"):
        return PatchRejected(f"{subject} is invalid ({code}): {message}")
    if status == 422:
        return UserError(f"{subject} is invalid ({code}): {message}")
    return UserError(f"{subject}: the API server answered {code}: {message}")


def connection_error(server: str, error: BaseException) -> UserError:
    """A readable error for a request that never got an HTTP answer."""
    return UserError(f"cannot reach the API server at {server}: {_network_detail(error)}; "
                     "is the cluster up, and are --kubeconfig and --context right?")


def _network_detail(error: BaseException) -> str:
    cause = _root_cause(error)
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"TLS certificate verification failed ({cause.verify_message})"
    if isinstance(cause, ssl.SSLError):
        return f"TLS error ({cause.reason or cause})"
    if isinstance(cause, ConnectionRefusedError):
        return "connection refused"
    if isinstance(cause, socket.gaierror):
        return f"cannot resolve the host name ({cause.strerror or cause})"
    if isinstance(cause, (TimeoutError, socket.timeout)) or "timed out" in str(cause).lower():
        return "timed out"
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror[:1].lower() + cause.strerror[1:]
    return str(cause) or type(cause).__name__


def _root_cause(error: BaseException) -> BaseException:
    """The innermost cause: urllib3 wraps socket errors in NewConnectionError in MaxRetryError."""
    seen = set()
    while id(error) not in seen:
        seen.add(id(error))
        inner = getattr(error, "reason", None)
        if not isinstance(inner, BaseException):
            inner = error.__cause__ or error.__context__
        if inner is None:
            break
        error = inner
    return error


def _status_object(body: str | bytes | None) -> dict:
    if not body:
        return {}
    try:
        parsed = json.loads(body)
    except (ValueError, TypeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _after(text: str, marker: str) -> str:
    """`text` from just after `marker`, or all of it: the server's messages repeat the object name."""
    index = text.find(marker)
    return text[index + len(marker):] if index >= 0 else text


# --- what a request was, for the request counter ---------------------------------------------


def request_key(method: str, url: str) -> tuple[str, str]:
    """(verb, resource) of a REST call, as the API server's audit log would name them.

    `GET .../namespaces/ns/leaderworkersets?watch=true` → ("watch", "leaderworkersets");
    subresources keep their suffix: ("patch", "leaderworkersets/status").
    """
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if segments[:1] == ["api"]:
        segments = segments[2:]  # /api/v1
    elif segments[:1] == ["apis"]:
        segments = segments[3:]  # /apis/group/version
    if len(segments) >= 3 and segments[0] == "namespaces":
        segments = segments[2:]  # a namespaced resource, not the namespace itself
    resource = "/".join([segments[0], *segments[2:3]]) if segments else ""
    named = len(segments) >= 2
    method = method.upper()
    query = {k.lower(): v for k, v in parse_qs(parts.query).items()}
    if method == "GET":
        watching = query.get("watch", [""])[0].lower() in ("true", "1")
        verb = "watch" if watching else "get" if named else "list"
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if named else "deletecollection"}.get(method, method.lower())
    return verb, resource


# --- resources --------------------------------------------------------------------------------


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
_BY_KIND = {resource.kind: resource for resource in (LWS, SERVICE)}


# --- what a change sends ---------------------------------------------------------------------


def scale_patch(action: Scale) -> list[dict]:
    """RFC 6902: replicas from what was read to the new count, refused if they moved meanwhile."""
    return [{"op": "test", "path": "/spec/replicas", "value": action.from_replicas},
            {"op": "replace", "path": "/spec/replicas", "value": action.to_replicas}]


def annotate_patch(action: Annotate) -> list[dict]:
    """RFC 6902: add the annotations, pinned to the replicas they were computed from.

    `initial-replicas` records the replicas at the rollout's start, so it must not land on an
    LWS someone scaled after the read. A missing annotations map is added whole: JSON patch
    cannot add a key to a map that is not there.
    """
    operations: list[dict] = [{"op": "test", "path": "/spec/replicas", "value": action.replicas}]
    if action.has_annotations:
        operations += [{"op": "add", "path": "/metadata/annotations/" + _pointer_token(key), "value": value}
                       for key, value in sorted(action.annotations.items())]
    else:
        operations.append({"op": "add", "path": "/metadata/annotations", "value": dict(action.annotations)})
    return operations


def _pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _tested(operations: list[dict]) -> str:
    path = next((op["path"] for op in operations if op["op"] == "test"), "/")
    return ".".join(part for part in path.split("/") if part)


# --- the cluster ------------------------------------------------------------------------------


class Cluster:
    """One API server, reached like kubectl reaches it.

    Credentials come from `kubeconfig` (else $KUBECONFIG, else ~/.kube/config) and `context`
    (else the current one); inside a pod with no kubeconfig at all, from the service account.
    Use it as a context manager to close its connections.
    """

    def __init__(self, kubeconfig: str | None = None, context: str | None = None):
        from kubernetes import client

        configuration, self.default_namespace = _load_configuration(kubeconfig, context)
        self.server: str = redact_url(configuration.host)
        self._api_client = client.ApiClient(configuration)
        self._api_client.user_agent = f"kubectl-disagg/{__version__}"
        self._custom = client.CustomObjectsApi(self._api_client)
        self._core = client.CoreV1Api(self._api_client)
        self.requests: collections.Counter[tuple[str, str]] = collections.Counter()
        self._count_requests()
        # The raw objects behind the latest snapshot, for `--dry-run` diffs: (kind, name) → object.
        self.last_seen: dict[tuple[str, str], dict] = {}
        self._snapshot_namespace: str | None = None

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._api_client.close()

    def namespace_for(self, flag: str | None, ds: DisaggregatedSet) -> str:
        """-n, else the document's namespace, else the context's, else "default".

        Like kubectl, -n may not contradict the document: stepping a set into a namespace it
        does not name would start a second copy of it there.
        """
        if flag and ds.namespace and flag != ds.namespace:
            raise UserError(f'the namespace of disaggregatedset/{ds.name} ("{ds.namespace}") does not match '
                            f'--namespace "{flag}"; pass --namespace={ds.namespace} or leave it out')
        return flag or ds.namespace or self.default_namespace

    # -- reading -----------------------------------------------------------------------------

    def snapshot(self, set_name: str, namespace: str) -> Snapshot:
        """Every LWS and Service labelled with the set's name: one LIST each.

        The selector does not require managed-by: objects that merely carry the set's name must
        be seen, so reconcile can leave them alone and refuse to create over them.
        """
        selector = f"{naming.NAME_LABEL}={set_name}"
        lws_list = self._list(LWS, namespace, selector)
        service_list = self._list(SERVICE, namespace, selector)
        lws_items = [_with_kind(item, LWS) for item in lws_list.get("items") or []]
        service_items = [_with_kind(item, SERVICE) for item in service_list.get("items") or []]
        self.last_seen = {(o["kind"], o["metadata"]["name"]): o for o in (*lws_items, *service_items)}
        self._snapshot_namespace = namespace
        return Snapshot(
            namespace=namespace,
            lws=tuple(lws_from_object(item) for item in lws_items),
            services=tuple(service_from_object(item) for item in service_items),
            lws_resource_version=(lws_list.get("metadata") or {}).get("resourceVersion", ""),
        )

    def get_set(self, name: str, namespace: str) -> dict:
        """The DisaggregatedSet object stored in the cluster (its CRD installed, no controller)."""
        try:
            return self._get(DISAGGREGATED_SET, namespace, name)
        except NotFound:
            raise UserError(f"disaggregatedset/{name} not found in namespace {namespace}") from None

    def wait_for_change(self, set_name: str, namespace: str, resource_version: str, timeout: float) -> bool:
        """Block until an LWS of the set changes after `resource_version`: True, or False on timeout.

        One WATCH request, ended by the server after `timeout` (rounded up to whole seconds,
        the API's unit): no polling.
        """
        from kubernetes import watch

        if timeout <= 0:
            return False
        seconds = max(1, math.ceil(timeout))
        events = watch.Watch().stream(
            self._custom.list_namespaced_custom_object, LWS.group, LWS.version, namespace, LWS.plural,
            label_selector=f"{naming.NAME_LABEL}={set_name}", resource_version=resource_version,
            timeout_seconds=seconds,
            _request_timeout=(REQUEST_TIMEOUT[0], seconds + WATCH_READ_SLACK),
        )
        try:
            with self._errors(LWS.collection(namespace)):
                return next(events, None) is not None
        except Gone:
            return True  # too old to watch from: plenty has changed, read everything again
        finally:
            events.close()

    # -- writing -----------------------------------------------------------------------------

    def execute(self, action: Action, namespace: str | None = None) -> None:
        """Carry out one reconcile action, with the preconditions that make it safe to race.

        Create: server-side apply, never forced. Scale and Annotate: merge patches carrying the
        resourceVersion that was read, so the server refuses them (409) if anything changed.
        Delete: preconditions on uid and resourceVersion, for the same reason.
        `namespace` defaults to the namespace of the latest snapshot, the one `reconcile` saw.
        """
        namespace = namespace or self._snapshot_namespace
        if namespace is None:
            raise ValueError("execute() needs a namespace, or a snapshot() first")
        if isinstance(action, Create):
            self._apply(_BY_KIND[action.kind], namespace, action.object)
            return
        try:
            self._change(action, namespace)
        except NotFound:
            raise Conflict(f"{action.kind.lower()}/{action.name} was deleted since it was read "
                           "(404 NotFound)") from None

    def _change(self, action: Action, namespace: str) -> None:
        """Scale, Annotate, Delete: each conditional on what the decision read.

        A scale or an annotation is a JSON patch whose `test` pins `spec.replicas` to the value
        reconcile saw: the LWS controller writes status all the time, and a status write must
        not void a replica change (a resourceVersion precondition would). A delete keeps uid and
        resourceVersion preconditions: it only ever removes objects at 0 replicas.
        """
        if isinstance(action, Scale):
            self._json_patch(LWS, namespace, action.name, scale_patch(action))
        elif isinstance(action, Annotate):
            self._json_patch(LWS, namespace, action.name, annotate_patch(action))
        elif isinstance(action, Delete):
            self._delete(_BY_KIND[action.kind], namespace, action.name, action.uid, action.resource_version)
        else:  # pragma: no cover - reconcile returns nothing else
            raise TypeError(f"unknown action {action!r}")

    def _json_patch(self, resource: Resource, namespace: str, name: str, operations: list) -> None:
        try:
            self._patch(resource, namespace, name, operations, JSON_PATCH)
        except PatchRejected:
            raise Conflict(f"{resource.subject(name)} changed since it was read "
                           f"({_tested(operations)} is no longer what this step read)") from None

    def lease(self, set_name: str, namespace: str, holder: str | None = None,
              duration: int = DEFAULT_LEASE_SECONDS) -> Lease:
        """The set's Lease, acquired on `with` entry and released on exit (see `Lease`)."""
        return Lease(self, set_name, namespace, holder or default_holder(), duration)

    # -- the REST layer ----------------------------------------------------------------------

    def _list(self, resource: Resource, namespace: str, label_selector: str) -> dict:
        with self._errors(resource.collection(namespace)):
            if resource is SERVICE:
                response = self._core.list_namespaced_service(
                    namespace, label_selector=label_selector, **_raw())
            else:
                response = self._custom.list_namespaced_custom_object(
                    resource.group, resource.version, namespace, resource.plural,
                    label_selector=label_selector, **_raw())
            return _json(response)

    def _get(self, resource: Resource, namespace: str, name: str) -> dict:
        with self._errors(resource.subject(name)):
            return _json(self._custom.get_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, name, **_raw()))

    def _create(self, resource: Resource, namespace: str, body: Mapping) -> dict:
        with self._errors(resource.subject(body["metadata"]["name"])):
            return _json(self._custom.create_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, dict(body),
                field_manager=FIELD_MANAGER, **_raw()))

    def _replace(self, resource: Resource, namespace: str, body: Mapping) -> dict:
        """PUT: the body's metadata.resourceVersion makes it conditional."""
        name = body["metadata"]["name"]
        with self._errors(resource.subject(name)):
            return _json(self._custom.replace_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, name, dict(body),
                field_manager=FIELD_MANAGER, **_raw()))

    def _apply(self, resource: Resource, namespace: str, body: Mapping) -> None:
        self._patch(resource, namespace, body["metadata"]["name"], body, APPLY_PATCH, force=False)

    def _patch(self, resource: Resource, namespace: str, name: str, body: Mapping | list, content_type: str,
               **params: Any) -> None:
        body = list(body) if isinstance(body, list) else dict(body)
        with self._errors(resource.subject(name)):
            if resource is SERVICE:
                response = self._core.patch_namespaced_service(
                    name, namespace, body, field_manager=FIELD_MANAGER, _content_type=content_type,
                    **params, **_raw())
            else:
                response = self._custom.patch_namespaced_custom_object(
                    resource.group, resource.version, namespace, resource.plural, name, body,
                    field_manager=FIELD_MANAGER, _content_type=content_type, **params, **_raw())
            _discard(response)

    def _delete(self, resource: Resource, namespace: str, name: str, uid: str, resource_version: str) -> None:
        from kubernetes import client

        # Background: the LWS's StatefulSets and pods go through the garbage collector, the
        # same as `kubectl delete`; the preconditions make a stale delete fail with 409.
        options = client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid=uid, resource_version=resource_version),
            propagation_policy="Background",
        )
        with self._errors(resource.subject(name)):
            if resource is SERVICE:
                response = self._core.delete_namespaced_service(name, namespace, body=options, **_raw())
            else:
                response = self._custom.delete_namespaced_custom_object(
                    resource.group, resource.version, namespace, resource.plural, name, body=options, **_raw())
            _discard(response)

    @contextlib.contextmanager
    def _errors(self, subject: str) -> Iterator[None]:
        """Turn client exceptions about `subject` into UserErrors people can read."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            yield
        except ApiException as err:
            if not err.status:  # the client gave up before any answer (TLS, mostly)
                raise connection_error(self.server, _ClientFailure(err.reason)) from None
            raise api_error(subject, err.status, err.reason, err.body) from None
        except HTTPError as err:
            raise connection_error(self.server, err) from None

    def _count_requests(self) -> None:
        """Count every HTTP request by (verb, resource), at the one place they all go through."""
        rest = self._api_client.rest_client
        send = rest.request
        lock = threading.Lock()

        def counted(method: str, url: str, *args: Any, **kwargs: Any):
            with lock:
                self.requests[request_key(method, url)] += 1
            return send(method, url, *args, **kwargs)

        rest.request = counted


class _ClientFailure(Exception):
    """The text of an ApiException the client raised without an HTTP status."""

    def __init__(self, reason: Any):
        lines = [line for line in str(reason or "").splitlines() if line.strip()]
        super().__init__(lines[-1] if lines else "the request failed")


def _raw() -> dict:
    # The JSON as the API sends it: no typed models (slow for a thousand objects, and lossy),
    # and a bounded wait.
    return {"_preload_content": False, "_request_timeout": REQUEST_TIMEOUT}


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


def _with_kind(item: dict, resource: Resource) -> dict:
    """List items of built-in kinds come without apiVersion and kind: put them back."""
    api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
    return {"apiVersion": api_version, "kind": resource.kind, **item}


# --- configuration ----------------------------------------------------------------------------


def _load_configuration(kubeconfig: str | None, context: str | None):
    """A client Configuration and the context's namespace, found the way kubectl finds them."""
    from kubernetes import client, config

    configuration = client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    in_pod = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    if not kubeconfig and not os.environ.get("KUBECONFIG") and in_pod and not os.path.exists(
            os.path.expanduser(DEFAULT_KUBECONFIG)):
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException as err:
            raise UserError(f"in-cluster configuration: {err}") from None
        _check_credentials(configuration, "the service account", exec_command=None)
        return configuration, _service_account_namespace()
    if kubeconfig and not os.path.isfile(os.path.expanduser(kubeconfig)):
        raise UserError(f"--kubeconfig {kubeconfig}: no such file")
    try:
        contexts, current = config.list_kube_config_contexts(path)
        active = _find_context(contexts, context, current, path)
        with _client_log_silenced() as failures:
            config.load_kube_config(path, context=active["name"], client_configuration=configuration,
                                    persist_config=False)
    except config.ConfigException as err:
        raise UserError(f"kubeconfig {path}: {redact_url(str(err))}") from None
    except (OSError, yaml.YAMLError, ValueError, TypeError, AttributeError) as err:
        # A truncated or hand-broken file: the client lets these through as they are.
        raise UserError(f"kubeconfig {path}: cannot be read: {' '.join(redact_url(str(err)).split())}") from None
    user_name = (active.get("context") or {}).get("user") or "?"
    exec_command = _exec_command(path, user_name)
    if failures and exec_command is not None and not _has_credentials(configuration):
        raise UserError(_exec_failure(path, user_name, exec_command, failures))
    _check_credentials(configuration, f"user {user_name} in kubeconfig {path}", exec_command)
    namespace = (active.get("context") or {}).get("namespace") or DEFAULT_NAMESPACE
    return configuration, namespace


# --- credentials ------------------------------------------------------------------------------
# Nothing a kubeconfig holds in secret (tokens, passwords, a URL's user info, what an exec
# plugin prints) ever reaches a message: errors name the user and the kubeconfig instead.

_VISIBLE_ASCII = re.compile(r"[\x20-\x7e]*")
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@")


def redact_url(text: str) -> str:
    """`text` with the user info of every URL in it (`https://user:secret@host`) blanked out."""
    return _URL_USERINFO.sub(lambda m: m.group("scheme") + "***@", text)


def _check_credentials(configuration: Any, whose: str, exec_command: str | None) -> None:
    """Refuse credentials that cannot be sent as an HTTP header, without printing them.

    Python's HTTP client would raise on them mid-request (a traceback holding the token);
    client-go refuses them too.
    """
    header = configuration.api_key.get("BearerToken") or configuration.api_key.get("authorization") or ""
    if header and not _VISIBLE_ASCII.fullmatch(header):
        source = f"exec plugin {exec_command}" if exec_command else "token"
        problem = "a line break" if ("\n" in header or "\r" in header) else "characters outside printable ASCII"
        raise UserError(f"{whose}: the credential from its {source} contains {problem}, so it cannot be "
                        "sent in an HTTP header (it is not shown here); fix the token and try again")
    if configuration.host and _URL_USERINFO.match(configuration.host):
        # Go's HTTP client would send these as basic auth; here they would only leak into messages.
        raise UserError(f"{whose}: the server URL {redact_url(configuration.host)} carries a user name and "
                        "password; Kubernetes API servers do not accept basic authentication: use a token, "
                        "a client certificate or an exec plugin in the user entry instead")
    if header.startswith("Basic "):
        raise UserError(f"{whose}: username/password (basic authentication) is set, which Kubernetes API "
                        "servers do not accept since v1.19 (requests would run as system:anonymous); use a "
                        "token, a client certificate or an exec plugin")


def _has_credentials(configuration: Any) -> bool:
    return bool(configuration.api_key.get("BearerToken") or configuration.cert_file)


def _exec_command(path: str, user_name: str) -> str | None:
    """The command of the user's exec credential plugin, if it has one."""
    try:
        with open(os.path.expanduser(path.split(os.pathsep)[0]), "rb") as f:
            document = yaml.safe_load(f) or {}
        users = document.get("users") or []
        entry = next((u.get("user") or {} for u in users if isinstance(u, dict) and u.get("name") == user_name), {})
        command = (entry.get("exec") or {}).get("command")
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    return str(command) if command else None


def _exec_failure(path: str, user_name: str, command: str, failures: list[str]) -> list[str]:
    codes = [m.group(1) for text in failures if (m := re.search(r"process returned (\d+)", text))]
    how = f"exited with status {codes[0]}" if codes else "gave no usable credential"
    return [f"kubeconfig {path}: the exec credential plugin of user {user_name} ({command}) {how}; "
            "its output is not shown because it may hold credentials",
            f"run `{command}` yourself to see why, then try again"]


@contextlib.contextmanager
def _client_log_silenced() -> Iterator[list[str]]:
    """Keep the client's log lines (an exec plugin's stderr, tokens included) off the terminal.

    The client logs a failing exec plugin through the root logger and carries on without
    credentials; the lines are collected instead, so the caller can say what failed.
    """
    collected: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            collected.append(record.getMessage())

    root = logging.getLogger()
    handler = Collect()
    saved_handlers, saved_propagate = root.handlers[:], root.propagate
    root.handlers = [handler]
    try:
        yield collected
    finally:
        root.handlers = saved_handlers
        root.propagate = saved_propagate


def _find_context(contexts: list[dict] | None, wanted: str | None, current: dict | None, path: str) -> dict:
    if wanted is None:
        if not current:
            raise UserError(f"kubeconfig {path}: no current context; pass --context")
        return current
    for candidate in contexts or []:
        if candidate.get("name") == wanted:
            return candidate
    known = ", ".join(sorted(c.get("name", "") for c in contexts or [])) or "none"
    raise UserError(f'kubeconfig {path}: context "{wanted}" not found (contexts: {known})')


def _service_account_namespace() -> str:
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE_FILE) as f:
            return f.read().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


# --- the lease --------------------------------------------------------------------------------


def default_holder() -> str:
    """user@host/pid/random: who holds a lease, readable by people and unique per process."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a container user without a passwd entry
        user = "unknown"
    return f"{user}@{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(3)}"


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def format_time(moment: datetime.datetime) -> str:
    """metav1.MicroTime: RFC 3339 with exactly six fractional digits, as the API demands."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def lease_expiry(spec: Mapping[str, Any]) -> datetime.datetime | None:
    """When a Lease lapses: last renewal (else acquisition) plus its duration."""
    renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime"))
    duration = spec.get("leaseDurationSeconds")
    if renewed is None or not isinstance(duration, int):
        return None
    return renewed + datetime.timedelta(seconds=duration)


def lease_is_free(spec: Mapping[str, Any], now: datetime.datetime) -> bool:
    """Released (no holder) or expired. A lease with a holder but no expiry is never free."""
    if not spec.get("holderIdentity"):
        return True
    expiry = lease_expiry(spec)
    return expiry is not None and expiry <= now


class Lease:
    """A coordination.k8s.io/v1 Lease that lets one stepper at a time act on a set.

    Acquire creates it; an existing one is taken over only once it has expired, with its
    resourceVersion as precondition so two takers cannot both win. Release deletes it (with
    uid and resourceVersion preconditions: never someone else's). Expiry compares the holder's
    renewTime with our clock, as client-go's leader election does; clocks are assumed to agree
    within a fraction of the lease duration.
    """

    def __init__(self, cluster: Cluster, set_name: str, namespace: str, holder: str, duration: int):
        if duration < 1:
            raise ValueError("a lease lasts at least one second")
        self.name = LEASE_PREFIX + set_name
        self.namespace = namespace
        self.holder = holder
        self.duration = duration
        self._set_name = set_name
        self._cluster = cluster
        self._object: dict | None = None
        self._renewed = 0.0  # time.monotonic() of the latest successful write

    def __enter__(self) -> Lease:
        self.acquire()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.release()
        except UserError:
            if exc_type is None:
                raise
            # Already failing: that error matters more; an unreleased lease expires by itself.

    @property
    def held(self) -> bool:
        return self._object is not None

    def acquire(self) -> None:
        # Two rounds: the lease may vanish (released) between our create and our read.
        for _ in range(2):
            now = _utcnow()
            try:
                self._store(self._cluster._create(LEASE, self.namespace, self._manifest(now)))
                return
            except AlreadyExists:
                pass
            try:
                current = self._cluster._get(LEASE, self.namespace, self.name)
            except NotFound:
                continue
            self._take_over(current, now)
            return
        raise LeaseHeld(self.name, self.namespace, "another stepper", None)

    def renew(self) -> None:
        """Extend the lease; LeaseLost if it is no longer ours."""
        if self._object is None:
            raise LeaseLost(f"lease/{self.name} in {self.namespace} is not held")
        renewed = _replace_spec(self._object, renewTime=format_time(_utcnow()),
                                leaseDurationSeconds=self.duration)
        try:
            self._store(self._cluster._replace(LEASE, self.namespace, renewed))
        except (Conflict, NotFound):
            self._object = None
            raise LeaseLost(f"lease/{self.name} in {self.namespace} was taken over or deleted while this "
                            "stepper held it; stopped so that two steppers never act at once") from None

    def renew_if_due(self) -> None:
        """Renew once a third of the duration has passed, as client-go does: cheap to call often."""
        if time.monotonic() - self._renewed >= self.duration / 3:
            self.renew()

    def release(self) -> None:
        if self._object is None:
            return
        metadata = self._object["metadata"]
        try:
            self._cluster._delete(LEASE, self.namespace, self.name, metadata["uid"], metadata["resourceVersion"])
        except (Conflict, NotFound):
            pass  # someone took it over after it lapsed: it is theirs now, not ours to delete
        finally:
            self._object = None

    def _take_over(self, current: dict, now: datetime.datetime) -> None:
        spec = current.get("spec") or {}
        if not lease_is_free(spec, now):
            raise LeaseHeld(self.name, self.namespace, spec.get("holderIdentity", "?"), lease_expiry(spec), now)
        taken = _replace_spec(current, holderIdentity=self.holder, leaseDurationSeconds=self.duration,
                              acquireTime=format_time(now), renewTime=format_time(now),
                              leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
        try:
            self._store(self._cluster._replace(LEASE, self.namespace, taken))
        except (Conflict, NotFound):
            # Another stepper took the lapsed lease a moment before us.
            latest = self._cluster._get(LEASE, self.namespace, self.name).get("spec") or {}
            raise LeaseHeld(self.name, self.namespace, latest.get("holderIdentity", "?"),
                            lease_expiry(latest)) from None

    def _store(self, lease: dict) -> None:
        self._object = lease
        self._renewed = time.monotonic()

    def _manifest(self, now: datetime.datetime) -> dict:
        return {
            "apiVersion": f"{LEASE.group}/{LEASE.version}",
            "kind": LEASE.kind,
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {naming.NAME_LABEL: self._set_name, naming.MANAGED_BY_LABEL: naming.MANAGER},
            },
            "spec": {
                "holderIdentity": self.holder,
                "leaseDurationSeconds": self.duration,
                "acquireTime": format_time(now),
                "renewTime": format_time(now),
                "leaseTransitions": 0,
            },
        }


def _replace_spec(lease: Mapping, **changes: Any) -> dict:
    """A copy of `lease` with spec fields changed; metadata (resourceVersion included) kept."""
    return {**lease, "spec": {**(lease.get("spec") or {}), **changes}}
