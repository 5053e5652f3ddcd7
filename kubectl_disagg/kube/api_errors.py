"""API answers and network failures as errors people can act on (pure: no client calls).

`api_error` maps an HTTP status and its metav1.Status body to a typed `UserError`, so callers
can tell "read again and retry" (`Conflict`) from "give up"; `connection_error` names the
network failure behind a request that got no answer.
"""

from __future__ import annotations

import json
import socket
import ssl

from kubectl_disagg.errors import Conflict, Unreachable, UserError

PATCH_REJECTED_MESSAGE = "the server rejected our request due to an error in our request"


class NotFound(UserError):
    pass


class AlreadyExists(UserError):
    pass


class Gone(UserError):
    """A watch asked for a resourceVersion the server has already compacted away."""


class PatchRejected(UserError):
    """422 without details: what the API server answers when a JSON patch `test` (or a path it
    names) does not hold against the stored object."""


def api_error(subject: str, status: int, reason: str | None, body: str | bytes | None) -> UserError:
    """A readable error for an API answer about `subject` (e.g. "leaderworkerset/x").

    Pure: the status code, the HTTP reason and the body (a metav1.Status, usually) in, one
    line out, typed so callers can tell "read again and retry" from "give up". The error keeps
    the answer (see `answer_of`): a server dry run traces an invalid object's causes to FILE:LINE.
    """
    status_object = status_of(body)
    error = _error_for(subject, status, reason, status_object)
    error.answer = {**status_object, "code": status}  # type: ignore[attr-defined]
    return error


def answer_of(error: UserError) -> dict | None:
    """The API server's answer (its metav1.Status) behind `error`, or None when no answer came."""
    return getattr(error, "answer", None)


def _error_for(subject: str, status: int, reason: str | None, status_object: dict) -> UserError:
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


def connection_error(server: str, error: BaseException, attempts: int = 1, elapsed: float = 0.0) -> Unreachable:
    """A readable error for a request that never got an HTTP answer (after `attempts` sendings
    over `elapsed` seconds: the retries that were given up)."""
    tried = f" (gave up after {attempts} attempts over {elapsed:.0f} s)" if attempts > 1 else ""
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


def status_of(body: str | bytes | None) -> dict:
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
