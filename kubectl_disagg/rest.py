"""The REST client: one API server's resources, read and written as plain JSON.

Requests go over urllib3 (TLS, proxies, a pool of kept-alive connections) with bodies encoded
here, once: no Kubernetes client package, whose import alone outweighed everything else a
`rollout status` of a small set does (BENCHMARKS.md). Every request goes through `transport` (a
benchmark may wrap it to count them), has a bounded wait, is retried while the server says
"later", and fails as a readable `UserError` (see api_errors).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import re
import ssl
import tempfile
import time
from urllib.parse import quote, urlencode, urlsplit
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from kubectl_disagg import __version__, naming
from kubectl_disagg.api_errors import Gone, api_error, connection_error
from kubectl_disagg.errors import UserError
from kubectl_disagg.kubeconfig import redact_url
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


class ErrorAnswer(Exception):
    """A non-2xx answer, raw: status, HTTP reason, body (a metav1.Status, usually) and headers."""

    def __init__(self, status: int, reason: str | None, body: bytes, headers: Mapping[str, str]):
        super().__init__(f"{status} {reason or ''}".strip())
        self.status, self.reason, self.body, self.headers = status, reason, body, headers


class Transport:
    """Sends requests to one API server: TLS as the kubeconfig says, the user's credential in
    each request, connections pooled (concurrent writes share up to `POOLED_CONNECTIONS`)."""

    def __init__(self, connection: Any, credentials: Any):
        import urllib3

        self._connection, self._credentials = connection, credentials
        self.base = connection.server
        self._pool = self._pool_manager(urllib3)
        self.user_agent = f"kubectl-disagg/{__version__}"

    def request(self, method: str, url: str, body: bytes | None = None, headers: Mapping[str, str] | None = None,
                *, read_timeout: float = REQUEST_TIMEOUT[1], stream: bool = False) -> Any:
        """One HTTP request; the urllib3 response (its body read whole unless `stream`)."""
        import urllib3

        sent = {"User-Agent": self.user_agent, **(headers or {})}
        authorization = self._credentials.authorization()
        if authorization:
            sent["Authorization"] = authorization
        return self._pool.request(
            method, url, body=body, headers=sent, preload_content=not stream, redirect=False,
            timeout=urllib3.Timeout(connect=REQUEST_TIMEOUT[0], read=read_timeout),
            # Connections that fail to open are tried again; a request that may have reached the
            # server is tried again only when idempotent (urllib3's default methods: not POST, PATCH).
            retries=urllib3.Retry(total=2, connect=2, read=1, status=0, redirect=0, other=0, raise_on_status=False))

    def rejected(self) -> bool:
        """After a 401: whether a fresh credential may help (see `Credentials.rejected`)."""
        return self._credentials.rejected()

    def close(self) -> None:
        self._pool.clear()

    def _pool_manager(self, urllib3: Any) -> Any:
        options: dict[str, Any] = {"maxsize": POOLED_CONNECTIONS, "block": False}
        if self.base.startswith("https://"):
            options["ssl_context"] = self._ssl_context()
            if self._connection.tls_server_name:
                options["server_hostname"] = self._connection.tls_server_name
            if self._connection.insecure:
                urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        proxy = _proxy_for(self._connection.proxy_url, self.base)
        if proxy is None:
            return urllib3.PoolManager(num_pools=2, **options)
        if not proxy.startswith(("http://", "https://")):
            raise UserError(f"{self._connection.whose}: proxy {redact_url(proxy)} is not supported "
                            "(http and https proxies are)")
        return urllib3.ProxyManager(proxy, num_pools=2, **options)

    def _ssl_context(self) -> ssl.SSLContext:
        whose = self._connection.whose
        if self._connection.insecure:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            try:
                ca = self._connection.ca_pem
                context = ssl.create_default_context(cadata=ca.decode("ascii", "replace") if ca else None)
            except (ssl.SSLError, ValueError):
                raise UserError(f"{whose}: the cluster's certificate authority is not a PEM certificate") from None
        certificate = self._credentials.client_certificate
        if certificate is not None:
            _load_client_certificate(context, *certificate, whose)
        return context


def _load_client_certificate(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes, whose: str) -> None:
    """Load a client certificate held in memory: `ssl` reads them only from files, so they go
    through anonymous in-memory files (Linux), else a private temporary directory, gone at once."""
    def load(cert_path: str, key_path: str) -> None:
        try:
            context.load_cert_chain(cert_path, key_path)
        except (ssl.SSLError, OSError):
            raise UserError(f"{whose}: the client certificate and key do not load (not PEM, or not a pair)") from None

    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fds = [os.memfd_create("kubectl-disagg-cert"), os.memfd_create("kubectl-disagg-key")]
        try:
            for fd, data in zip(fds, (cert_pem, key_pem)):
                os.write(fd, data)
            load(*(f"/proc/self/fd/{fd}" for fd in fds))
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory() as private:  # mode 0700
        paths = [os.path.join(private, "cert.pem"), os.path.join(private, "key.pem")]
        for path, data in zip(paths, (cert_pem, key_pem)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(data)
        load(*paths)


def _proxy_for(configured: str | None, server: str) -> str | None:
    """The proxy for `server`: the kubeconfig's proxy-url, else HTTPS_PROXY/HTTP_PROXY unless
    NO_PROXY names the host, as Go's ProxyFromEnvironment decides (loopback never proxied)."""
    if configured:
        return configured
    scheme, host = urlsplit(server).scheme, (urlsplit(server).hostname or "").lower()
    names = ("https_proxy", "HTTPS_PROXY") if scheme == "https" else ("http_proxy", "HTTP_PROXY")
    proxy = next((os.environ[n] for n in names if os.environ.get(n)), None)
    if not proxy or host in ("localhost", "::1") or host.startswith("127."):
        return None
    no_proxy = os.environ.get("no_proxy") or os.environ.get("NO_PROXY") or ""
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        entry = entry.rsplit(":", 1)[0] if entry.count(":") == 1 else entry  # a port does not matter here
        if entry == "*" or (entry and (host == entry.lstrip(".") or host.endswith("." + entry.lstrip(".")))) \
                or (entry and "/" in entry and _in_cidr(host, entry)):
            return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _in_cidr(host: str, cidr: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


class RestClient:
    """Requests to one API server (`server`, as people may see it: no credentials in it)."""

    def __init__(self, connection: Any, server: str):
        from kubectl_disagg.credentials import Credentials

        self.server = server
        self.transport = Transport(connection, Credentials(connection))

    def close(self) -> None:
        self.transport.close()

    def watch(self, resource: Resource, namespace: str, label_selector: str, resource_version: str,
              timeout: float, field_selector: str | None = None) -> bool:
        """Block until an object changes after `resource_version`: True, or False on timeout.

        One WATCH request, ended by the server after `timeout` (rounded up to whole seconds,
        the API's unit): no polling.
        """
        if timeout <= 0:
            return False
        seconds = max(1, math.ceil(timeout))
        query = {"watch": "true", "labelSelector": label_selector, "resourceVersion": resource_version,
                 "timeoutSeconds": str(seconds)}
        if field_selector:
            query["fieldSelector"] = field_selector
        subject = resource.collection(namespace)
        try:
            with self._errors(subject):
                response = self.send("GET", path_of(resource, namespace), query, stream=True,
                                     read_timeout=seconds + WATCH_READ_SLACK)
                try:
                    event = _first_event(response)
                finally:
                    response.close()  # a watch cut short must not go back to the pool mid-stream
                    response.release_conn()
        except Gone:
            return True  # too old to watch from: plenty has changed, read everything again
        if event is None:
            return False
        if event.get("type") == "ERROR":
            status = event.get("object") or {}
            if status.get("code") == 410:
                return True  # too old to watch from: plenty has changed, read everything again
            raise api_error(subject, int(status.get("code") or 500), status.get("reason"), json.dumps(status))
        return True

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

    def create(self, resource: Resource, namespace: str, body: Mapping) -> dict:
        with self._errors(resource.subject(body["metadata"]["name"])):
            return _json(self.send("POST", path_of(resource, namespace), {"fieldManager": FIELD_MANAGER}, body))

    def replace(self, resource: Resource, namespace: str, body: Mapping) -> dict:
        """PUT: the body's metadata.resourceVersion makes it conditional."""
        name = body["metadata"]["name"]
        with self._errors(resource.subject(name)):
            return _json(self.send("PUT", path_of(resource, namespace, name), {"fieldManager": FIELD_MANAGER}, body))

    def apply(self, resource: Resource, namespace: str, body: Mapping) -> None:
        """Server-side apply of `body`, never forced: fields another manager owns are a conflict."""
        name = body["metadata"]["name"]
        with self._errors(resource.subject(name)):
            self.send("PATCH", path_of(resource, namespace, name), {"fieldManager": FIELD_MANAGER, "force": "false"},
                      apply_body(body), APPLY_PATCH)

    def patch(self, resource: Resource, namespace: str, name: str, body: Mapping | list, content_type: str) -> None:
        with self._errors(resource.subject(name)):
            self.send("PATCH", path_of(resource, namespace, name), {"fieldManager": FIELD_MANAGER}, body, content_type)

    def patch_status(self, resource: Resource, namespace: str, name: str, status: Mapping) -> None:
        """Merge `status` into a custom object's status subresource."""
        with self._errors(resource.subject(name) + "/status"):
            self.send("PATCH", path_of(resource, namespace, name) + "/status", {"fieldManager": FIELD_MANAGER},
                      {"status": dict(status)}, MERGE_PATCH)

    def delete(self, resource: Resource, namespace: str, name: str, uid: str, resource_version: str) -> None:
        # Background: the LWS's StatefulSets and pods go through the garbage collector, the
        # same as `kubectl delete`; the preconditions make a stale delete fail with 409.
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background",
                   "preconditions": {"uid": uid, "resourceVersion": resource_version}}
        with self._errors(resource.subject(name)):
            self.send("DELETE", path_of(resource, namespace, name), None, options)

    def send(self, method: str, path: str, query: Mapping[str, str] | None = None, body: Any = None,
             content_type: str = "application/json", *, stream: bool = False,
             read_timeout: float = REQUEST_TIMEOUT[1]) -> Any:
        """One request (retried while the server says "later"); the urllib3 response, 2xx only.

        `body` is sent as it is when bytes, else as JSON. Any other answer raises `ErrorAnswer`;
        a 401 is retried once with a fresh credential when one can be had (exec plugin, token
        file). Network failures are urllib3 exceptions (see `_errors`).
        """
        url = self.transport.base + path + (("?" + urlencode(query)) if query else "")
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
            response.release_conn()
            if response.status == 401 and not refreshed and self.transport.rejected():
                refreshed = True
                return once()
            raise answer

        return retrying(once)

    @contextlib.contextmanager
    def _errors(self, subject: str) -> Iterator[None]:
        """Turn failed requests about `subject` into UserErrors people can read."""
        from urllib3.exceptions import HTTPError

        try:
            yield
        except ErrorAnswer as err:
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
    for attempt in itertools.count():
        try:
            return call()
        except ErrorAnswer as err:
            wait = retry_after(err.status, err.headers, attempt)
            if wait is None:
                raise
            sleep(wait)


def path_of(resource: Resource, namespace: str, name: str | None = None) -> str:
    """The URL path of a namespaced collection, or of one object in it."""
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    path = f"{base}/namespaces/{quote(namespace, safe='')}/{resource.plural}"
    return path if name is None else f"{path}/{quote(name, safe='')}"


def _json(response: Any) -> dict:
    """A read response's body (urllib3 has read it whole and returned its connection to the pool)."""
    return json.loads(response.data) if response.data else {}


def _first_event(response: Any) -> dict | None:
    """The first event of a watch stream (one JSON document per line), or None if it ended empty."""
    pending = b""
    for chunk in response.stream(64 * 1024, decode_content=True):
        pending += chunk
        line, newline, _ = pending.partition(b"\n")
        if newline and line.strip():
            return json.loads(line)
    return json.loads(pending) if pending.strip() else None


# What the API server's YAML reader refuses raw (C1 controls, DEL, non-characters, lone
# surrogates) or reads as a line break (U+0085, U+2028, U+2029: folded inside quotes).
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


def apply_body(obj: Mapping) -> bytes:
    """An apply patch (`application/apply-patch+yaml`) the API server reads back as `obj`.

    ASCII-only JSON writes characters beyond U+FFFF as surrogate-pair escapes, which the
    server's YAML reader refuses ("invalid Unicode character escape code"): an emoji in an
    annotation would fail the request. Raw UTF-8 reads fine, and the few characters YAML
    refuses or folds raw are escaped.
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return _YAML_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text).encode()


def with_kind(item: dict, resource: Resource) -> dict:
    """List items of built-in kinds come without apiVersion and kind: put them back."""
    api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
    return {"apiVersion": api_version, "kind": resource.kind, **item}
