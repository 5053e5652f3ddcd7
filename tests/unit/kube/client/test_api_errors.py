"""`api_errors`: the API server's answers, and the failures to get one, as errors people read:
what to retry (a `Conflict`), what is its own type, the server's explanation kept once, and
the answer kept as data on the `ApiError` (status, reason, the Status, the request)."""

from __future__ import annotations

import json
import socket
import ssl

import pytest

from kubectl_disagg.errors import Conflict
from kubectl_disagg.kube.client.api_errors import (AlreadyExists, ApiConflict, ApiError, Gone, NotFound, PatchRejected,
                                                api_error, connection_error)
from kubectl_disagg.kube.client.transport import NetworkError
from kubectl_disagg.errors import UserError

SUBJECT = "leaderworkerset/llm-0-abc-prefill"


def status_body(code: int, reason: str, message: str) -> str:
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                       "reason": reason, "message": message})


# --- API errors -----------------------------------------------------------------------------------


def test_stale_write_is_a_conflict_to_retry():
    body = status_body(409, "Conflict", 'Operation cannot be fulfilled on leaderworkersets.leaderworkerset.x-k8s.io '
                       '"llm-0-abc-prefill": the object has been modified; please apply your changes to the latest '
                       'version and try again')
    error = api_error(SUBJECT, 409, "Conflict", body)
    assert isinstance(error, Conflict) and type(error) is ApiConflict
    assert str(error) == f"{SUBJECT} changed since it was read (409 Conflict); run the step again"
    assert error.what == f"{SUBJECT} changed since it was read (409 Conflict)"
    assert (error.status, error.reason, error.subject) == (409, "Conflict", SUBJECT)


def test_failed_delete_precondition_is_a_conflict_too():
    body = status_body(409, "Conflict", "Precondition failed: UID in precondition: a, UID in object meta: b")
    assert isinstance(api_error(SUBJECT, 409, "Conflict", body), Conflict)


def test_apply_conflict_is_not_retried_and_says_why():
    body = status_body(409, "Conflict", 'Apply failed with 1 conflict: conflict with "helm" using '
                       'leaderworkerset.x-k8s.io/v1: .spec.replicas')
    error = api_error(SUBJECT, 409, "Conflict", body)
    assert type(error) is ApiError and not isinstance(error, Conflict)
    assert 'conflict with "helm"' in str(error) and "never forces field ownership" in str(error)


def test_already_exists_is_its_own_type():
    body = status_body(409, "AlreadyExists", 'leases.coordination.k8s.io "kubectl-disagg-llm" already exists')
    error = api_error("lease/kubectl-disagg-llm", 409, "Conflict", body)
    assert isinstance(error, AlreadyExists) and not isinstance(error, Conflict)


def test_forbidden_keeps_the_servers_explanation_once():
    body = status_body(403, "Forbidden", 'leaderworkersets.leaderworkerset.x-k8s.io "llm-0-abc-prefill" is '
                       'forbidden: User "viewer" cannot patch resource "leaderworkersets" in API group '
                       '"leaderworkerset.x-k8s.io" in the namespace "default"')
    assert str(api_error(SUBJECT, 403, "Forbidden", body)) == (
        f'{SUBJECT}: forbidden: User "viewer" cannot patch resource "leaderworkersets" in API group '
        '"leaderworkerset.x-k8s.io" in the namespace "default"')


@pytest.mark.parametrize(("code", "reason", "kind", "expected"), [
    (404, "NotFound", NotFound, f"{SUBJECT} not found (404 NotFound)"),
    (410, "Expired", Gone, f"{SUBJECT}: too old resource version: 1 (410 Expired)"),
    (401, "Unauthorized", ApiError, "the API server rejected the credentials of this kubeconfig context"),
    (422, "Invalid", ApiError, f"{SUBJECT} is invalid (422 Invalid): too old resource version: 1"),
    (500, "InternalError", ApiError, f"{SUBJECT}: the API server answered 500 InternalError: too old"),
])
def test_other_statuses(code, reason, kind, expected):
    error = api_error(SUBJECT, code, reason, status_body(code, reason, "too old resource version: 1"))
    assert type(error) is kind
    assert expected in str(error)
    assert isinstance(error, ApiError) and isinstance(error, UserError)  # printed as every error is
    assert (error.status, error.reason) == (code, reason)


def test_the_answer_is_kept_as_data():
    """What the server said stays on the error for those who read it (a dry run traces an
    invalid object's causes to FILE:LINE; a stepper waits out a 429 or a 5xx): the decoded
    Status with its code, and which request it answered."""
    body = json.dumps({"kind": "Status", "code": 422, "reason": "Invalid", "message": "spec.replicas: Invalid value",
                       "details": {"causes": [{"field": "spec.replicas"}]}})
    error = api_error(SUBJECT, 422, "Unprocessable Entity", body, request="PATCH /apis/x/v1/namespaces/d/y/z")
    assert error.answer == json.loads(body)
    assert (error.status, error.reason, error.subject) == (422, "Invalid", SUBJECT)
    assert error.request == "PATCH /apis/x/v1/namespaces/d/y/z" and error.resent is False


def test_a_patch_test_refused_is_its_own_type():
    body = status_body(422, "Invalid", "the server rejected our request due to an error in our request")
    assert type(api_error(SUBJECT, 422, "Unprocessable Entity", body)) is PatchRejected


def test_an_answer_that_is_no_status_keeps_the_http_reason_and_code():
    error = api_error(SUBJECT, 502, "Bad Gateway", b"<html>")
    assert (error.status, error.reason, error.answer) == (502, "Bad Gateway", {"code": 502})


def test_a_body_that_is_not_a_status_falls_back_to_the_http_reason():
    error = api_error(SUBJECT, 503, "Service Unavailable", b"<html>upstream down</html>")
    assert str(error) == f"{SUBJECT}: the API server answered 503 Service Unavailable: Service Unavailable"


# --- network errors -------------------------------------------------------------------------------


def _wrapped(cause: Exception) -> NetworkError:
    """How the transport reports a failed connection: the socket error as the cause."""
    try:
        try:
            raise cause
        except OSError as err:
            raise NetworkError(str(err)) from err
    except NetworkError as err:
        return err


def test_connection_refused_names_the_server():
    error = connection_error("https://10.0.0.1:6443", _wrapped(ConnectionRefusedError(111, "Connection refused")))
    assert str(error) == ("cannot reach the API server at https://10.0.0.1:6443: connection refused; "
                          "is the cluster up, and are --kubeconfig and --context right?")


def test_tls_and_dns_failures_are_named():
    bad_cert = ssl.SSLCertVerificationError(1, "certificate verify failed")
    bad_cert.verify_message = "self-signed certificate"
    assert "TLS certificate verification failed (self-signed certificate)" in str(
        connection_error("https://x", _wrapped(bad_cert)))
    assert "cannot resolve the host name (Name or service not known)" in str(
        connection_error("https://x", _wrapped(socket.gaierror(-2, "Name or service not known"))))
