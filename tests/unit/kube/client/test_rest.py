"""Requests sent again as client-go's rest client sends them: answers that say "later" after the
server's wait; requests that got no answer when sending twice is safe, within a budget; a write
whose resend its own precondition refuses recognised as landed (the policy alone: test_retry).
The socket tests run the real client against the scripted servers of test_transport."""

from __future__ import annotations

import json

import pytest

from kubectl_disagg.errors import Conflict, Unreachable
from kubectl_disagg.kube.client import retry
from kubectl_disagg.kube.client.api_errors import AlreadyExists, NotFound
from kubectl_disagg.kube.client.kubeconfig import Connection
from kubectl_disagg.kube.client.rest import JSON_PATCH, LEASE, LWS, ROLLOUT_STATE, NotAnApiServer, RestClient, holds, patched
from kubectl_disagg.kube.client.retry import MAX_RETRIES
from tests.fakes.servers import OK, Peer, Server
from tests.support.cli import run
from tests.support.kube import write_kubeconfig


def test_holds_and_patched():
    stored = {"metadata": {"name": "x", "resourceVersion": "9", "uid": "u"}, "spec": {"replicas": 2, "a": [1]}}
    assert holds(stored, {"metadata": {"name": "x", "resourceVersion": "3"}, "spec": {"replicas": 2}})
    assert not holds(stored, {"spec": {"replicas": 3}}) and not holds(stored, {"spec": {"b": 1}})
    assert patched(stored, [{"op": "test", "path": "/spec/replicas", "value": 1},
                            {"op": "replace", "path": "/spec/replicas", "value": 2},
                            {"op": "remove", "path": "/spec/b"}, {"op": "add", "path": "/spec/a/0", "value": 1}])
    assert not patched(stored, [{"op": "replace", "path": "/spec/replicas", "value": 1}])
    assert not patched(stored, [{"op": "remove", "path": "/spec/a"}])


# --- against a scripted server -------------------------------------------------------------------


def status(code: int, reason: str, message: str = "") -> bytes:
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
                       "message": message}).encode()
    return b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        code, reason.encode(), len(body), body)


def ok(obj: dict) -> bytes:
    body = json.dumps({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", **obj}).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def lost(peer: Peer) -> None:
    """The request arrives whole (it may land), then the connection drops without an answer."""
    peer.request()


def one(*answers: bytes):
    def script(peer: Peer) -> None:
        for data in answers:
            peer.request()
            peer.send(data)
        peer.request()
    return script


@pytest.fixture
def client_of():
    made = []

    def make(*scripts) -> tuple[Server, RestClient]:
        server = Server(*scripts)
        client = RestClient(Connection(server=f"http://127.0.0.1:{server.port}", whose="the test", token="t"),
                            "the test server")
        made.append((server, client))
        return server, client

    yield make
    for server, client in made:
        client.close()
        server.close()


def methods(server: Server) -> list[str]:
    return [head.split()[0] for head in server.heads]


def test_a_read_cut_off_goes_again_on_a_fresh_connection(client_of):
    server, client = client_of(lost, lost, one(ok({"kind": "LeaderWorkerSet", "metadata": {"name": "x"}})))
    assert client.get(LWS, "ns", "x")["metadata"]["name"] == "x"
    assert methods(server) == ["GET", "GET", "GET"]


def test_a_read_that_never_gets_an_answer_names_the_attempts(client_of):
    server, client = client_of(*[lost] * (MAX_RETRIES + 1))
    original, retry.backoff = retry.backoff, lambda attempt: 0.0
    try:
        with pytest.raises(Unreachable) as raised:
            client.get(LWS, "ns", "x")
    finally:
        retry.backoff = original
    assert f"(gave up after {MAX_RETRIES + 1} attempts over" in str(raised.value)
    assert "the test server" in str(raised.value) and len(server.heads) == MAX_RETRIES + 1


SCALE = [{"op": "test", "path": "/spec/replicas", "value": 1}, {"op": "replace", "path": "/spec/replicas", "value": 2}]
REJECTED = status(422, "Invalid", "the server rejected our request due to an error in our request")


def test_a_guarded_patch_whose_answer_was_lost_and_whose_resend_is_refused_landed(client_of):
    server, client = client_of(lost, one(REJECTED, ok({"spec": {"replicas": 2}})))
    client.patch(LWS, "ns", "x", SCALE, JSON_PATCH)  # no error: the first sending landed
    assert methods(server) == ["PATCH", "PATCH", "GET"]


def test_a_guarded_patch_refused_on_its_resend_by_someone_elses_change_is_refused(client_of):
    server, client = client_of(lost, one(REJECTED, ok({"spec": {"replicas": 5}})))
    with pytest.raises(Exception, match="rejected our request"):
        client.patch(LWS, "ns", "x", SCALE, JSON_PATCH)
    assert methods(server) == ["PATCH", "PATCH", "GET"]


def test_a_guarded_patch_refused_on_its_first_sending_is_not_read_back(client_of):
    server, client = client_of(one(REJECTED))
    with pytest.raises(Exception, match="rejected our request"):
        client.patch(LWS, "ns", "x", SCALE, JSON_PATCH)
    assert methods(server) == ["PATCH"]


def test_a_json_patch_without_a_test_is_not_sent_twice(client_of):
    server, client = client_of(lost, one(OK))
    with pytest.raises(Unreachable):
        client.patch(LWS, "ns", "x", [{"op": "add", "path": "/spec/a/-", "value": 1}], JSON_PATCH)
    assert methods(server) == ["PATCH"]


def test_a_delete_resent_and_not_found_is_done(client_of):
    server, client = client_of(lost, one(status(404, "NotFound")))
    client.delete(LWS, "ns", "x", "uid-1", "7")
    assert methods(server) == ["DELETE", "DELETE"]
    server, client = client_of(one(status(404, "NotFound")))
    with pytest.raises(NotFound):
        client.delete(LWS, "ns", "x", "uid-1", "7")


LEASE_BODY = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l", "namespace": "ns"},
              "spec": {"holderIdentity": "me", "leaseDurationSeconds": 30}}


def test_a_create_resent_and_already_there_as_sent_is_ours(client_of):
    stored = {**LEASE_BODY, "metadata": {**LEASE_BODY["metadata"], "uid": "u", "resourceVersion": "4"}}
    server, client = client_of(lost, one(status(409, "AlreadyExists"), ok(stored)))
    assert client.create(LEASE, "ns", LEASE_BODY)["metadata"]["uid"] == "u"
    assert methods(server) == ["POST", "POST", "GET"]


def test_a_create_resent_and_already_there_as_someone_elses_is_refused(client_of):
    theirs = {**LEASE_BODY, "spec": {"holderIdentity": "them", "leaseDurationSeconds": 30}}
    server, client = client_of(lost, one(status(409, "AlreadyExists"), ok(theirs)))
    with pytest.raises(AlreadyExists):
        client.create(LEASE, "ns", LEASE_BODY)


def test_a_replace_resent_and_conflicting_is_ours_when_the_stored_object_is_what_was_sent(client_of):
    sent = {**LEASE_BODY, "metadata": {**LEASE_BODY["metadata"], "resourceVersion": "4",
                                       "managedFields": [{"manager": "m", "time": "2026-01-01T00:00:00Z"}]}}
    stored = {**LEASE_BODY, "metadata": {**LEASE_BODY["metadata"], "resourceVersion": "5",
                                         "managedFields": [{"manager": "m", "time": "2026-01-01T00:00:09Z"}]}}
    server, client = client_of(lost, one(status(409, "Conflict"), ok(stored)))
    assert client.replace(LEASE, "ns", sent)["metadata"]["resourceVersion"] == "5"
    server, client = client_of(one(status(409, "Conflict")))
    with pytest.raises(Conflict):
        client.replace(LEASE, "ns", sent)


def chunked_watch(*events: dict, close: bool = False):
    def script(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        for event in events:
            line = json.dumps(event).encode() + b"\n"
            peer.send(b"%x\r\n%s\r\n" % (len(line), line))
        if close:
            return  # cut before the end: the connection closes in the middle of the answer
        peer.send(b"0\r\n\r\n")
        peer.request()
    return script


def test_a_watch_cut_before_its_first_event_starts_again_from_the_same_version(client_of):
    event = {"type": "MODIFIED", "object": {"metadata": {"name": "x", "resourceVersion": "8"}}}
    server, client = client_of(chunked_watch(close=True), chunked_watch(event))
    assert client.next_events(LWS, "ns", "a=b", "7", timeout=5, linger=0) == [event]
    assert len(server.heads) == 2 and all("resourceVersion=7" in head for head in server.heads)


@pytest.mark.parametrize(("body", "what"), [
    (b"{}", "JSON without kind and apiVersion"),
    (b"", "an empty body"),
    (b"<html>welcome</html>", "something that is not a JSON object"),
])
def test_an_answer_that_is_not_an_api_object_names_the_server(client_of, body, what):
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    _, client = client_of(one(answer))
    with pytest.raises(NotAnApiServer) as raised:
        client.get(LWS, "ns", "x")
    assert raised.value.lines() == [
        "the server at the test server is not a Kubernetes API server: it answered GET "
        f"/apis/leaderworkerset.x-k8s.io/v1/namespaces/ns/leaderworkersets/x with {what} (text/plain); "
        "are --kubeconfig and --context right?"]


def test_serves_reads_the_group_versions_discovery(client_of):
    # A group version not served answers 404 with no Status (the API server's plain "page not
    # found"); one served lists its resources, the kind among them or not.
    page_not_found = b"404 page not found\n"
    not_served = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (
        len(page_not_found), page_not_found)
    server, client = client_of(one(not_served, ok({"resources": [{"name": "rolloutstates"}]}),
                                   ok({"resources": [{"name": "others"}]})))
    assert [client.serves(ROLLOUT_STATE) for _ in range(3)] == [False, True, False]
    assert [head.split()[1] for head in server.heads] == ["/apis/kubectl-disagg.x-k8s.io/v1alpha1"] * 3


# --- an answer that is not an API object ----------------------------------------------------------


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
