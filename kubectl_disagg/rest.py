"""The REST client: one API server's resources, read and written as plain JSON.

Built on the `kubernetes` client (imported when a client is made, so `render` and `validate`
never pay for it), without its typed models: slow for a thousand objects, and lossy. Every
request goes through `transport` (a benchmark may wrap it to count them), has a bounded wait,
and fails as a readable `UserError` (see api_errors).
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from kubectl_disagg import __version__, naming
from kubectl_disagg.api_errors import ClientFailure, Gone, api_error, connection_error

FIELD_MANAGER = naming.MANAGER
# kubectl sets no timeout at all; a CLI that can hang forever on a half-open connection is
# worse. Connect fast, but give a LIST of a thousand objects time to arrive.
REQUEST_TIMEOUT = (10, 120)
WATCH_READ_SLACK = 10  # the server ends a watch at timeoutSeconds; allow it that much lateness

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
    """Requests to one API server (`server`, as people may see it: no credentials in it)."""

    def __init__(self, configuration: Any, server: str):
        from kubernetes import client

        self.server = server
        self._api_client = client.ApiClient(configuration)
        self._api_client.user_agent = f"kubectl-disagg/{__version__}"
        self._custom = client.CustomObjectsApi(self._api_client)
        self._core = client.CoreV1Api(self._api_client)

    @property
    def transport(self) -> Any:
        """What every request goes through: an object whose `request(method, url, ...)` sends it."""
        return self._api_client.rest_client

    def close(self) -> None:
        self._api_client.close()

    def watch(self, resource: Resource, namespace: str, label_selector: str, resource_version: str,
              timeout: float) -> bool:
        """Block until an object changes after `resource_version`: True, or False on timeout.

        One WATCH request, ended by the server after `timeout` (rounded up to whole seconds,
        the API's unit): no polling.
        """
        from kubernetes import watch

        if timeout <= 0:
            return False
        seconds = max(1, math.ceil(timeout))
        events = watch.Watch().stream(
            self._custom.list_namespaced_custom_object, resource.group, resource.version, namespace,
            resource.plural, label_selector=label_selector, resource_version=resource_version,
            timeout_seconds=seconds,
            _request_timeout=(REQUEST_TIMEOUT[0], seconds + WATCH_READ_SLACK),
        )
        try:
            with self._errors(resource.collection(namespace)):
                return next(events, None) is not None
        except Gone:
            return True  # too old to watch from: plenty has changed, read everything again
        finally:
            events.close()

    def list(self, resource: Resource, namespace: str, label_selector: str) -> dict:
        with self._errors(resource.collection(namespace)):
            if resource is SERVICE:
                response = self._core.list_namespaced_service(
                    namespace, label_selector=label_selector, **_raw())
            else:
                response = self._custom.list_namespaced_custom_object(
                    resource.group, resource.version, namespace, resource.plural,
                    label_selector=label_selector, **_raw())
            return _json(response)

    def get(self, resource: Resource, namespace: str, name: str) -> dict:
        with self._errors(resource.subject(name)):
            return _json(self._custom.get_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, name, **_raw()))

    def create(self, resource: Resource, namespace: str, body: Mapping) -> dict:
        with self._errors(resource.subject(body["metadata"]["name"])):
            return _json(self._custom.create_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, dict(body),
                field_manager=FIELD_MANAGER, **_raw()))

    def replace(self, resource: Resource, namespace: str, body: Mapping) -> dict:
        """PUT: the body's metadata.resourceVersion makes it conditional."""
        name = body["metadata"]["name"]
        with self._errors(resource.subject(name)):
            return _json(self._custom.replace_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, name, dict(body),
                field_manager=FIELD_MANAGER, **_raw()))

    def apply(self, resource: Resource, namespace: str, body: Mapping) -> None:
        self.patch(resource, namespace, body["metadata"]["name"], body, APPLY_PATCH, force=False)

    def patch(self, resource: Resource, namespace: str, name: str, body: Mapping | list, content_type: str,
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

    def patch_status(self, resource: Resource, namespace: str, name: str, status: Mapping) -> None:
        """Merge `status` into a custom object's status subresource."""
        with self._errors(resource.subject(name) + "/status"):
            _discard(self._custom.patch_namespaced_custom_object_status(
                resource.group, resource.version, namespace, resource.plural, name, {"status": dict(status)},
                field_manager=FIELD_MANAGER, _content_type=MERGE_PATCH, **_raw()))

    def delete(self, resource: Resource, namespace: str, name: str, uid: str, resource_version: str) -> None:
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
                raise connection_error(self.server, ClientFailure(err.reason)) from None
            raise api_error(subject, err.status, err.reason, err.body) from None
        except HTTPError as err:
            raise connection_error(self.server, err) from None


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


def with_kind(item: dict, resource: Resource) -> dict:
    """List items of built-in kinds come without apiVersion and kind: put them back."""
    api_version = f"{resource.group}/{resource.version}" if resource.group else resource.version
    return {"apiVersion": api_version, "kind": resource.kind, **item}
