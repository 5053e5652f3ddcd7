"""The pure edges of the imperative shell: error wording, request accounting, durations, the
session's configuration and `rollout step`'s flags and exit codes. No control plane needed."""

from __future__ import annotations

import datetime
import json
import pathlib
import re
import socket
import ssl
import threading
import time
from types import SimpleNamespace

import pytest
import yaml

from benchmarks.request_count import request_key
from kubectl_disagg.kube import kubeconfig as kubeconfig_module
from kubectl_disagg.kube.api_errors import AlreadyExists, Conflict, Gone, NotFound, api_error, connection_error
from kubectl_disagg.cli import main
from kubectl_disagg.kube.session import Session, side_by_side
from kubectl_disagg.commands.rollout_step import EXIT_ERROR, EXIT_OK, EXIT_REFUSED, EXIT_TIMEOUT, EXIT_USAGE
from kubectl_disagg.core.durations import format_duration
from kubectl_disagg.kube.transport import NetworkError
from kubectl_disagg.errors import UserError
from kubectl_disagg.core.model import namespace_for
from tests.conftest import EXAMPLES
from tests.unit.core.test_reconcile import make_set

UTC = datetime.timezone.utc
# A self-signed certificate made for these tests (its key beside it): any PEM will do as a CA.
TEST_CA = (pathlib.Path(__file__).parents[2] / "data" / "unit-test-client.crt").read_text()
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
    assert isinstance(error, Conflict)
    assert str(error) == f"{SUBJECT} changed since it was read (409 Conflict); run the step again"


def test_failed_delete_precondition_is_a_conflict_too():
    body = status_body(409, "Conflict", "Precondition failed: UID in precondition: a, UID in object meta: b")
    assert isinstance(api_error(SUBJECT, 409, "Conflict", body), Conflict)


def test_apply_conflict_is_not_retried_and_says_why():
    body = status_body(409, "Conflict", 'Apply failed with 1 conflict: conflict with "helm" using '
                       'leaderworkerset.x-k8s.io/v1: .spec.replicas')
    error = api_error(SUBJECT, 409, "Conflict", body)
    assert type(error) is UserError
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
    (401, "Unauthorized", UserError, "the API server rejected the credentials of this kubeconfig context"),
    (422, "Invalid", UserError, f"{SUBJECT} is invalid (422 Invalid): too old resource version: 1"),
    (500, "InternalError", UserError, f"{SUBJECT}: the API server answered 500 InternalError: too old"),
])
def test_other_statuses(code, reason, kind, expected):
    error = api_error(SUBJECT, code, reason, status_body(code, reason, "too old resource version: 1"))
    assert type(error) is kind
    assert expected in str(error)


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


def test_cli_reports_connection_refused_without_a_traceback(tmp_path, capsys):
    with socket.socket() as probe:  # a port nobody listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = write_kubeconfig(tmp_path, f"https://127.0.0.1:{port}")
    code, _, err = run(["rollout", "step", "-f", str(EXAMPLES / "prefill-decode.yaml"), "--dry-run",
                        "--kubeconfig", str(kubeconfig)], capsys)
    assert code == 1
    assert err.startswith(f"cannot reach the API server at https://127.0.0.1:{port}: connection refused")
    assert "Traceback" not in err

    code, _, err = run(["rollout", "step", "-f", str(EXAMPLES / "prefill-decode.yaml"), "--dry-run",
                        "--kubeconfig", str(kubeconfig), "--context", "up"], capsys)
    assert code == 1 and err.strip() == f'kubeconfig {kubeconfig}: context "up" not found (contexts: down)'


def test_cli_names_a_missing_kubeconfig(tmp_path, capsys):
    missing = tmp_path / "nope"
    code, _, err = run(["rollout", "step", "-f", str(EXAMPLES / "prefill-decode.yaml"),
                        "--kubeconfig", str(missing)], capsys)
    assert code == 1 and err.strip() == f"--kubeconfig {missing}: no such file"


# --- configuration --------------------------------------------------------------------------------


def test_namespace_comes_from_the_flag_then_the_document_then_the_context(tmp_path):
    kubeconfig = write_kubeconfig(tmp_path, "https://127.0.0.1:6443", namespace="team-a")
    with Session(str(kubeconfig)) as cluster:
        assert cluster.default_namespace == "team-a"
        assert cluster.server == "https://127.0.0.1:6443"
        in_document = make_set({"prefill": 1, "decode": 1})  # its document says "serving"
        fallback = cluster.default_namespace
        assert namespace_for(in_document, "serving", fallback) == "serving"
        assert namespace_for(in_document, None, fallback) == "serving"
        assert namespace_for(SimpleNamespace(namespace=None), None, fallback) == "team-a"  # none in the document
        assert namespace_for(SimpleNamespace(namespace=None), "flag", fallback) == "flag"


def test_in_a_pod_without_kubeconfig_the_service_account_is_used(tmp_path, monkeypatch):
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "namespace").write_text("inference\n")
    (account / "token").write_text("pod-token\n")
    (account / "ca.crt").write_text(TEST_CA)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setattr(kubeconfig_module, "SERVICE_ACCOUNT_DIR", str(account))
    with Session() as cluster:
        assert (cluster.server, cluster.default_namespace) == ("https://10.96.0.1:443", "inference")
        assert cluster.client.transport._credentials.authorization() == "Bearer pod-token"


# --- request accounting ---------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "url", "expected"), [
    ("GET", "https://h/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets?labelSelector=a%3Db",
     ("list", "leaderworkersets")),
    ("GET", "https://h/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets?watch=true&timeoutSeconds=5",
     ("watch", "leaderworkersets")),
    ("GET", "https://h/api/v1/namespaces/ns/services", ("list", "services")),
    ("GET", "https://h/api/v1/namespaces/ns", ("get", "namespaces")),
    ("PATCH", "https://h/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets/x/status",
     ("patch", "leaderworkersets/status")),
    ("POST", "https://h/apis/coordination.k8s.io/v1/namespaces/ns/leases?fieldManager=kubectl-disagg",
     ("create", "leases")),
    ("PUT", "https://h/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", ("update", "leases")),
    ("DELETE", "https://h/api/v1/namespaces/ns/services/s", ("delete", "services")),
])
def test_request_key(method, url, expected):
    assert request_key(method, url) == expected


# --- durations ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("seconds", "text"), [(3, "3s"), (1.5, "1.5s"), (0.25, "0.25s"), (60, "1m0s"),
                                               (1800, "30m0s"), (3900, "1h5m0s")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize("argv", [
    ["--dry-run", "--until-complete"],
    ["--until-complete", "--timeout", "soon"],
    ["--until-complete", "--timeout", "-5s"],
])
def test_usage_errors_exit_2_before_any_connection(argv, capsys):
    code, out, err = run(["rollout", "step", "-f", str(EXAMPLES / "prefill-decode.yaml"),
                          "--kubeconfig", "/nonexistent", *argv], capsys)
    assert code == 2 and out == ""


def test_help_documents_every_exit_code(capsys):
    code, out, _ = run(["rollout", "step", "--help"], capsys)
    assert code == 0
    live, gitops = out.split("Exit codes:")[1].split("Exit codes with --gitops")
    documented = [int(n) for n in re.findall(r"^ +(\d)  \w", live, re.MULTILINE)]
    assert documented == sorted({EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_REFUSED, EXIT_TIMEOUT}) == [0, 1, 2, 3, 4]
    assert [int(n) for n in re.findall(r"^ +(\d)  \w", gitops, re.MULTILINE)] == [0, 1, 2, 3, 4, 5, 6]


# --- helpers --------------------------------------------------------------------------------------


def write_kubeconfig(directory, server: str, namespace: str = "serving"):
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "down",
        "clusters": [{"name": "down", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "down", "context": {"cluster": "down", "user": "u", "namespace": namespace}}],
    }))
    return path


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_a_broken_kubeconfig_is_a_readable_error(tmp_path):
    from kubectl_disagg.kube.session import Session

    broken = tmp_path / "config"
    broken.write_text("apiVersion: v1\nclusters: [\n")
    with pytest.raises(UserError) as caught:
        Session(kubeconfig=str(broken))
    assert caught.value.lines()[0].startswith(f"kubeconfig {broken}: cannot be read")


def test_namespace_flag_may_not_contradict_the_document(tmp_path):
    from kubectl_disagg.core.sets import load_sets
    from tests.conftest import EXAMPLES

    (ds,) = load_sets([str(EXAMPLES / "prefill-decode.yaml")]).sets  # namespace: serving
    assert namespace_for(ds, None, "default") == "serving"
    assert namespace_for(ds, "serving", "default") == "serving"
    with pytest.raises(UserError) as caught:
        namespace_for(ds, "other", "default")
    assert 'does not match --namespace "other"' in caught.value.lines()[0]


def test_permissions_needed_by_a_pass_one_per_verb_and_resource():
    from kubectl_disagg.kube.executor import Forbidden, permissions_needed
    from kubectl_disagg.core.reconcile import Create, Delete, Scale
    from kubectl_disagg.kube.rest import LWS

    scale = Scale(name="a", from_replicas=1, to_replicas=2, resource_version="1", slice=0)
    actions = [Create(object={"kind": "Service", "metadata": {"name": "s"}}, slice=0), scale, scale,
               Delete(kind="LeaderWorkerSet", name="b", uid="u", resource_version="2", slice=0)]
    needed = [(verb, resource.plural) for verb, resource in permissions_needed(actions)]
    assert needed == [("create", "services"), ("patch", "services"), ("patch", "leaderworkersets"),
                      ("delete", "leaderworkersets"), ("update", "leases"), ("delete", "leases")]
    assert permissions_needed([]) == []
    message = str(Forbidden([("patch", LWS)], "serving"))
    assert "\n" not in message
    assert message.startswith("forbidden: this pass needs permission to patch "
                              "leaderworkersets.leaderworkerset.x-k8s.io in namespace serving")


def test_granted_permissions_are_remembered_for_one_term_per_namespace():
    from kubectl_disagg.kube.executor import GrantedPermissions
    from kubectl_disagg.kube.rest import LEASE, LWS

    now = [100.0]
    granted = GrantedPermissions(30, clock=lambda: now[0])
    wanted = [("patch", LWS), ("update", LEASE)]
    assert granted.unknown(wanted, "ns") == wanted  # nothing asked yet
    granted.grant("patch", LWS, "ns", now[0])
    assert granted.unknown(wanted, "ns") == [("update", LEASE)]
    assert granted.unknown(wanted, "other") == wanted  # a grant is per namespace
    assert granted.unknown([("delete", LWS)], "ns") == [("delete", LWS)]  # and per verb
    now[0] = 129.9
    assert granted.unknown(wanted, "ns") == [("update", LEASE)]
    now[0] = 130.0  # the term is over: ask again
    assert granted.unknown(wanted, "ns") == wanted


def test_a_permission_is_trusted_for_one_lease_term():
    from kubectl_disagg.kube.executor import PERMISSION_TERM_SECONDS
    from kubectl_disagg.kube.lease import DEFAULT_LEASE_SECONDS

    assert PERMISSION_TERM_SECONDS == DEFAULT_LEASE_SECONDS


def test_a_watched_lws_view_takes_events_in_order_and_refuses_what_it_does_not_know():
    from kubectl_disagg.kube.session import WatchedLWS

    def lws(name: str, version: str, replicas: int = 1) -> dict:
        return {"metadata": {"name": name, "resourceVersion": version,
                             "labels": {"disaggregatedset.x-k8s.io/name": "llm"}},
                "spec": {"replicas": replicas}, "status": {}}

    view = WatchedLWS.listed({"metadata": {"resourceVersion": "10"}, "items": [lws("b", "9"), lws("a", "8")]})
    before = view.live()
    assert [v.name for v in before] == ["a", "b"] and view.resource_version == "10"
    assert view.apply({"type": "MODIFIED", "object": lws("b", "11", replicas=3)})
    assert view.apply({"type": "ADDED", "object": lws("c", "12")})
    assert view.apply({"type": "DELETED", "object": lws("a", "13")})
    after = view.live()
    assert [v.name for v in after] == ["b", "c"] and view.resource_version == "13"
    assert after[0].replicas == 3 and after[0] is not before[1]
    assert view.live()[1] is after[1]  # unchanged objects are not parsed again
    assert not view.apply({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "14"}}})


def test_side_by_side_runs_calls_at_once_and_answers_in_call_order():
    both_running = threading.Barrier(2, timeout=5)  # each call waits for the other: they overlap

    def answer(value):
        both_running.wait()
        return value

    assert side_by_side(lambda: answer("a"), None, lambda: answer("b")) == ["a", None, "b"]
    assert side_by_side(None, lambda: threading.current_thread()) == [None, threading.current_thread()]  # one: here


def test_side_by_side_raises_the_first_error_in_call_order_once_every_call_ended():
    ended = []

    def fail_late():
        time.sleep(0.05)
        ended.append("late")
        raise Gone("first asked")

    def fail_early():
        ended.append("early")
        raise NotFound("second asked")

    with pytest.raises(Gone, match="first asked"):
        side_by_side(fail_late, fail_early, lambda: ended.append("fine"))
    assert sorted(ended) == ["early", "fine", "late"]


def test_a_plain_web_server_answering_empty_objects_is_named_not_read_as_a_set(tmp_path, capsys):
    import http.server
    import threading

    class Empty(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the handler's API
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Empty)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        code, out, err = run(["rollout", "status", "x", "--kubeconfig", str(write_kubeconfig(tmp_path, url))], capsys)
    finally:
        server.shutdown()
    assert code == 1 and out == ""
    assert err.splitlines() == [
        f"the server at {url} is not a Kubernetes API server: it answered GET "
        "/apis/disaggregatedset.x-k8s.io/v1/namespaces/serving/disaggregatedsets/x with JSON without kind and "
        "apiVersion (application/json); are --kubeconfig and --context right?"]


def test_a_sets_rollout_state_is_read_only_where_the_kind_is_served():
    calls = []

    class Client:
        def __init__(self, serves):
            self.answer = serves

        def serves(self, resource):
            calls.append(f"discovery {resource.group}/{resource.version}")
            return self.answer

        def get(self, resource, namespace, name):
            calls.append(f"get {resource.plural}/{name}")
            if name == "gone":
                raise NotFound(f"rolloutstate/{name} not found (404 NotFound)")
            return {"kind": resource.kind, "metadata": {"name": name}}

    def session(serves):
        cluster = Session.__new__(Session)  # no kubeconfig: only the reads under test
        cluster.client, cluster._serves_rollout_states = Client(serves), None
        return cluster

    served = session(True)
    assert served.rollout_state("llm", "serving") == {"kind": "RolloutState", "metadata": {"name": "llm"}}
    assert served.rollout_state("gone", "serving") is None  # none applied: the LWS alone tell
    assert calls == ["discovery kubectl-disagg.x-k8s.io/v1alpha1", "get rolloutstates/llm", "get rolloutstates/gone"]
    calls.clear()
    unserved = session(False)
    assert [unserved.rollout_state("llm", "serving") for _ in range(2)] == [None, None]
    assert calls == ["discovery kubectl-disagg.x-k8s.io/v1alpha1"]  # asked once, nothing read
