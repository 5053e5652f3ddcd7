"""API answers and network failures as errors people can act on (pure: no client calls).

`api_error` maps an HTTP status and its metav1.Status body to an `ApiError`, which keeps the
answer as data (status code, reason, the decoded Status, the request) and reads as one line,
typed so callers can tell "read again and retry" (`ApiConflict`, a `Conflict`) from "give up";
`connection_error` names the network failure behind a request that got no answer.
"""

from __future__ import annotations

import json
import socket
import ssl

from kubectl_disagg.core.api.durations import format_duration
from kubectl_disagg.errors import Conflict, Unreachable, UserError
from kubectl_disagg.manifests.source import JsonObject

PATCH_REJECTED_MESSAGE = "the server rejected our request due to an error in our request"


class ApiError(UserError):
    """The API server answered a request with something other than a success.

    What it answered is data: `status` (the HTTP status code), `reason` (the Status's reason,
    `NotFound`, `Invalid`..., else the HTTP reason), `answer` (the decoded metav1.Status with its
    `code`; empty of anything else when the body was not one), `subject` (the object or
    collection asked about, `leaderworkerset/x`) and `request` (`PATCH /apis/...`, when known).
    `resent`: the request had gone again after a lost answer (see `rest.RestClient.send`). Its
    text is the one line people read.
    """

    STATUS, REASON = 500, "InternalError"  # a kind's own status and reason, when none is given

    def __init__(self, message: str, *, status: int | None = None, reason: str | None = None,
                 answer: JsonObject | None = None, subject: str = "", request: str = "", resent: bool = False):
        self.status = self.STATUS if status is None else status
        self.reason = self.REASON if reason is None else reason
        self.answer = {"code": self.status} if answer is None else answer
        self.subject, self.request, self.resent = subject, request, resent
        super().__init__(message)


class NotFound(ApiError):
    STATUS, REASON = 404, "NotFound"


class AlreadyExists(ApiError):
    STATUS, REASON = 409, "AlreadyExists"


class Gone(ApiError):
    """A watch asked for a resourceVersion the server has already compacted away."""

    STATUS, REASON = 410, "Expired"


class PatchRejected(ApiError):
    """422 without details: what the API server answers when a JSON patch `test` (or a path it
    names) does not hold against the stored object."""

    STATUS, REASON = 422, "Invalid"


class ApiConflict(ApiError, Conflict):
    """409: what was read has changed since (a resourceVersion or uid precondition failed): a
    `Conflict`, read again and act again."""

    STATUS, REASON = 409, "Conflict"


def api_error(subject: str, status: int, reason: str | None, body: str | bytes | None, *,
              request: str = "") -> ApiError:
    """A readable error for an API answer about `subject` (e.g. "leaderworkerset/x").

    Pure: the status code, the HTTP reason and the body (a metav1.Status, usually) in, one
    line out, typed so callers can tell "read again and retry" from "give up". The error keeps
    the answer: a server dry run traces an invalid object's causes to FILE:LINE.
    """
    status_object = status_of(body)
    message = str(status_object.get("message") or "").strip() or (reason or "").strip() or "no details given"
    api_reason = str(status_object.get("reason") or reason or "").strip()
    kind, text = _error_for(subject, status, api_reason, message, status_object)
    return kind(text, status=status, reason=api_reason, answer={**status_object, "code": status},
                subject=subject, request=request)


def _error_for(subject: str, status: int, api_reason: str, message: str,
               status_object: JsonObject) -> tuple[type[ApiError], str]:
    code = f"{status} {api_reason}".strip()
    if status == 409 and api_reason == "AlreadyExists":
        return AlreadyExists, f"{subject} already exists ({code})"
    if status == 409 and message.startswith("Apply failed"):
        # Server-side apply found fields another manager owns; forcing would silently take
        # them over, which is exactly what a stepper must not do.
        return ApiError, (f"{subject}: {message} ({code}); kubectl-disagg never forces field "
                          "ownership: find out who else manages this object")
    if status == 409:
        return ApiConflict, f"{subject} changed since it was read ({code})"
    if status == 404:
        details = status_object.get("details") or {}
        if details.get("kind") == "namespaces":  # e.g. creating the Lease in a namespace that is not there
            return NotFound, f"namespace {details.get('name', '?')} not found ({code})"
        return NotFound, f"{subject} not found ({code})"
    if status == 410:
        return Gone, f"{subject}: {message} ({code})"
    if status == 403:
        return ApiError, f"{subject}: forbidden: {_after(message, 'forbidden: ')}"
    if status == 401:
        return ApiError, (f"{subject}: unauthorized ({code}): the API server rejected the credentials "
                          "of this kubeconfig context; log in again or choose another --context")
    if status == 422 and message == PATCH_REJECTED_MESSAGE and not status_object.get("details"):
        return PatchRejected, f"{subject} is invalid ({code}): {message}"
    if status == 422:
        return ApiError, f"{subject} is invalid ({code}): {message}"
    return ApiError, f"{subject}: the API server answered {code}: {message}"


def connection_error(server: str, error: BaseException, attempts: int = 1, elapsed: float = 0.0) -> Unreachable:
    """A readable error for a request that never got an HTTP answer (after `attempts` sendings
    over `elapsed` seconds: the retries that were given up)."""
    tried = f" (gave up after {attempts} attempts over {format_duration(elapsed)})" if attempts > 1 else ""
    return Unreachable(f"cannot reach the API server at {server}: {network_detail(error)}{tried}; "
                       "is the cluster up, and are --kubeconfig and --context right?")


def network_detail(error: BaseException) -> str:
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
    """The innermost cause: the transport's NetworkError holds the socket or TLS error as its cause."""
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


def status_of(body: str | bytes | None) -> JsonObject:
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
