"""The dashboard's server (dashboard/server.py) is safe by default: a request without the run's
token, naming another Host (DNS rebinding) or, for an action, without the CSRF token or from
another Origin changes nothing; the page and its stream carry the document, never more."""

from __future__ import annotations

import http.client
import json
import threading

import pytest

from kubectl_disagg.dashboard.server import CSP, CSRF_HEADER, Answer, Dashboard, Model

DOCUMENT = {"now": "2026-01-01T00:00:00Z", "sets": [{"key": "ns/<b>x</b>", "name": "<b>x</b>"}], "behind": []}


@pytest.fixture
def served():
    acted: list[tuple[str, ...]] = []

    def act(*fields: str) -> Answer:
        acted.append(fields)
        return Answer(200, "promoted")

    dashboard = Dashboard(Model(lambda: DOCUMENT), act, token="tok", csrf="csrf")
    server = dashboard.bind("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield dashboard, acted
    server.shutdown()
    server.server_close()


def request(dashboard, method, path, body=None, headers=None, host=None):
    port = dashboard.server.server_address[1]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    sent = {"Host": host or f"127.0.0.1:{port}", **(headers or {})}
    connection.request(method, path, body=body, headers=sent)
    response = connection.getresponse()
    return response.status, dict(response.getheaders()), response.read()


ACTION = json.dumps({"namespace": "ns", "name": "x", "verb": "promote", "reason": "ok", "stateVersion": "7"})


def test_the_page_and_the_document_need_the_token(served):
    dashboard, _ = served
    assert request(dashboard, "GET", "/")[0] == 403
    assert request(dashboard, "GET", "/?token=wrong")[0] == 403
    assert request(dashboard, "GET", "/api/model")[0] == 403
    status, headers, body = request(dashboard, "GET", "/api/model?token=tok")
    assert status == 200 and json.loads(body) == DOCUMENT
    status, headers, page = request(dashboard, "GET", "/?token=tok")
    assert status == 200 and b'content="csrf"' in page and headers["Content-Security-Policy"] == CSP
    assert headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "no-referrer"
    assert b"tok" not in page  # the token stays in the URL the user was given; the page repeats it nowhere


def test_a_foreign_host_is_refused_even_with_the_token(served):
    dashboard, acted = served
    assert request(dashboard, "GET", "/?token=tok", host="evil.example:80")[0] == 421
    assert request(dashboard, "GET", "/assets/app.js", host="evil.example")[0] == 421
    status, _, _ = request(dashboard, "POST", "/api/action?token=tok", ACTION,
                           {"Content-Type": "application/json", CSRF_HEADER: "csrf"}, host="evil.example")
    assert status == 421 and acted == []


def test_an_action_needs_the_token_the_csrf_token_json_and_its_own_origin(served):
    dashboard, acted = served
    port = dashboard.server.server_address[1]
    good = {"Content-Type": "application/json", CSRF_HEADER: "csrf"}
    assert request(dashboard, "POST", "/api/action", ACTION, good)[0] == 403
    assert request(dashboard, "POST", "/api/action?token=tok", ACTION, {"Content-Type": "application/json"})[0] == 403
    assert request(dashboard, "POST", "/api/action?token=tok", ACTION, {**good, CSRF_HEADER: "nope"})[0] == 403
    assert request(dashboard, "POST", "/api/action?token=tok", ACTION,
                   {**good, "Origin": "http://evil.example"})[0] == 403
    assert request(dashboard, "POST", "/api/action?token=tok", ACTION,
                   {**good, "Content-Type": "application/x-www-form-urlencoded"})[0] == 415
    assert acted == []
    status, _, body = request(dashboard, "POST", "/api/action?token=tok", ACTION,
                              {**good, "Origin": f"http://127.0.0.1:{port}"})
    assert status == 200 and json.loads(body) == {"ok": True, "message": "promoted"}
    assert acted == [("ns", "x", "promote", "ok", "7")]


def test_read_only_refuses_every_action():
    dashboard = Dashboard(Model(lambda: DOCUMENT), None, token="tok", csrf="csrf")
    server = dashboard.bind("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        status, _, body = request(dashboard, "POST", "/api/action?token=tok", ACTION,
                                  {"Content-Type": "application/json", CSRF_HEADER: "csrf"})
        assert status == 403 and b"read-only" in body
    finally:
        server.shutdown()
        server.server_close()


def test_the_stream_sends_the_document_then_each_new_one(served):
    dashboard, _ = served
    port = dashboard.server.server_address[1]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request("GET", "/api/stream?token=tok", headers={"Host": f"127.0.0.1:{port}"})
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"

    def next_model():
        data = None
        while True:
            line = response.fp.readline().decode()
            if line.startswith("data: "):
                data = json.loads(line[6:])
            elif line == "\n" and data is not None:
                return data

    assert next_model() == DOCUMENT
    dashboard.model.make = lambda: {**DOCUMENT, "now": "2026-01-01T00:00:01Z"}
    dashboard.model.refresh()
    assert dashboard.model.sequence == 0  # only the time moved: nothing is pushed
    DOCUMENT_2 = {**DOCUMENT, "now": "2026-01-01T00:00:02Z", "sets": []}
    dashboard.model.make = lambda: DOCUMENT_2
    dashboard.model.refresh()
    assert next_model() == DOCUMENT_2
    connection.close()


def test_the_assets_ship_in_the_package_and_set_cluster_text_as_text():
    from importlib import resources

    script = resources.files("kubectl_disagg.dashboard").joinpath("assets", "app.js").read_text()
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "eval(" not in script
    assert "textContent" in script
    page = resources.files("kubectl_disagg.dashboard").joinpath("assets", "index.html").read_text()
    assert "http" not in page.replace("http-equiv", "")  # nothing fetched from elsewhere
