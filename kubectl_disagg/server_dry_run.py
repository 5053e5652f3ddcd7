"""`validate --server`'s one request: a server-side apply dry run of one rendered object.

Kept apart from the cluster module's read/write paths: it asks the API server whether it would
accept an object, stores nothing, and returns the refusal as data instead of raising it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from kubectl_disagg.api_errors import api_error, connection_error, status_of
from kubectl_disagg.rest import APPLY_PATCH, BY_KIND, FIELD_MANAGER, REQUEST_TIMEOUT
from kubectl_disagg.errors import UserError

# What the API server's YAML reader refuses raw (C1 controls, DEL, non-characters), reads as a line
# break (U+0085, U+2028, U+2029: folded inside quotes) or refuses as an escape (JSON's surrogate
# pairs for characters beyond U+FFFF).
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def apply_body(obj: Mapping) -> bytes:
    """An apply patch (`application/apply-patch+yaml`) the API server reads back as `obj`.

    The client's own encoding (`json.dumps`, ASCII only) writes characters beyond U+FFFF as
    surrogate-pair escapes, which the server's YAML reader refuses ("invalid Unicode character
    escape code"): an emoji in an annotation would fail the request. Raw UTF-8 reads fine, and
    the few characters YAML refuses or folds raw are escaped.
    """
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return _YAML_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text).encode()


def dry_run_apply(api_client: Any, server: str, obj: Mapping) -> dict | None:
    """Server-side apply of one rendered object with dryRun=All and strict field validation.

    `api_client` is the session's kubernetes ApiClient, `server` its redacted URL for messages.
    Nothing is stored. Returns None when the API server would accept the object, else the refusal
    (its metav1.Status: message, details.causes). Ownership conflicts are forced, since only
    validity is asked; an unreachable server or rejected credentials raise UserError.
    """
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    resource = BY_KIND[obj["kind"]]
    name, namespace = obj["metadata"]["name"], obj["metadata"]["namespace"]
    prefix = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    try:
        # The generic call: the typed methods take only dicts, which the client encodes in a way
        # the server refuses (see apply_body).
        method, url, headers, body, _ = api_client.param_serialize(
            method="PATCH", resource_path=f"{prefix}/namespaces/{{namespace}}/{resource.plural}/{{name}}",
            path_params={"namespace": namespace, "name": name},
            query_params=[("dryRun", "All"), ("fieldValidation", "Strict"), ("force", "true"),
                          ("fieldManager", FIELD_MANAGER)],
            header_params={"Content-Type": APPLY_PATCH, "Accept": "application/json"},
            body=apply_body(obj), auth_settings=["BearerToken"])
        response = api_client.call_api(method, url, header_params=headers, body=body,
                                       _request_timeout=REQUEST_TIMEOUT)
    except ApiException as err:  # raised only when no answer came (TLS, mostly)
        lines = [line for line in str(err.reason or "").splitlines() if line.strip()]
        raise connection_error(server, OSError(lines[-1] if lines else "the request failed")) from None
    except HTTPError as err:
        raise connection_error(server, err) from None
    try:
        payload = response.read()  # read whole before the connection goes back to the pool
    finally:
        response.response.release_conn()
    if 200 <= response.status < 300:
        return None
    if response.status == 401:
        error: UserError = api_error(resource.subject(name), response.status, response.reason, payload)
        raise error
    return status_of(payload) or {"message": f"{response.status} {response.reason or ''}".strip()}
