"""`validate --server`'s one request: a server-side apply dry run of one rendered object.

Kept apart from the cluster module's read/write paths: it asks the API server whether it would
accept an object, stores nothing, and returns the refusal as data instead of raising it.
"""

from __future__ import annotations

from typing import Any, Mapping

from kubectl_disagg.kube.client.api_errors import api_error, connection_error, status_of
from kubectl_disagg.kube.client.rest import APPLY_PATCH, BY_KIND, FIELD_MANAGER, RestClient, apply_body, path_of
from kubectl_disagg.kube.client.retry import ErrorAnswer
from kubectl_disagg.kube.client.transport import NetworkError
from kubectl_disagg.manifests.source import JsonObject


def dry_run_apply(client: RestClient, obj: Mapping[str, Any]) -> JsonObject | None:
    """Server-side apply of one rendered object with dryRun=All and strict field validation.

    Nothing is stored. Returns None when the API server would accept the object, else the refusal
    (its metav1.Status: message, details.causes). Ownership conflicts are forced, since only
    validity is asked; an unreachable server or rejected credentials raise UserError.
    """
    resource = BY_KIND[obj["kind"]]
    name, namespace = obj["metadata"]["name"], obj["metadata"]["namespace"]
    query = {"dryRun": "All", "fieldValidation": "Strict", "force": "true", "fieldManager": FIELD_MANAGER}
    try:
        client.send("PATCH", path_of(resource, namespace, name), query, apply_body(obj), APPLY_PATCH,
                    repeatable=True)  # stores nothing: as safe to send again as a read
    except ErrorAnswer as answer:
        if answer.status == 401:
            raise api_error(resource.subject(name), answer.status, answer.reason, answer.body) from None
        return status_of(answer.body) or {"message": f"{answer.status} {answer.reason or ''}".strip()}
    except NetworkError as err:
        raise connection_error(client.server, err, getattr(err, "attempts", 1), getattr(err, "elapsed", 0.0)) from None
    return None
