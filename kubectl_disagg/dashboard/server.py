"""The dashboard's HTTP server: the page, its document and its live stream, and the actions.

Standard library only (`http.server.ThreadingHTTPServer`): the page is one document pushed to a
handful of tabs on the operator's own machine, which a thread per connection serves with room
to spare, and nothing is added to the plugin's dependencies or to the start-up of its other
commands (this module is imported by `rollout dashboard` alone).

Safe by default: it listens on loopback (another address only when the command is told so,
with a warning); every request but the static assets carries the run's token (`?token=`,
compared in constant time), and every request names this server in its Host header (a DNS
rebinding attack names another), else it is refused before anything is read or done. An
action is a POST with a JSON body, the run's CSRF token in a header of its own (a cross-site
form can set neither; a cross-origin script setting it needs a CORS preflight, never
answered) and, where the browser says one, an Origin naming this server. The page carries no
credential of the cluster: only the document the view makes (views/dashboard.py), whose text
the page sets as text. Responses forbid framing, sniffing, referrers and any script or style
not served from here (a Content-Security-Policy).
"""

from __future__ import annotations

import hmac
import json
import pkgutil
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.manifests.source import JsonObject

ASSETS = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
CSRF_HEADER = "X-Disagg-CSRF"
KEEPALIVE_SECONDS = 15.0  # a comment line on a quiet stream, so a dead tab is noticed
MAX_BODY = 16 * 1024


@dataclass(frozen=True)
class Answer:
    """What an action came to: the HTTP status and the words for the page."""

    status: int
    message: str


Act = Callable[[str, str, str, str, str], Answer]  # namespace, name, verb, reason, stateVersion → answer


class Model:
    """The page's document, made again on every change of the hub (`make`), numbered; the
    streams wait on it (`wait`)."""

    def __init__(self, make: Callable[[], JsonObject]):
        self.make = make
        self.sequence = 0
        document = make()
        self.text, self._compared = json.dumps(document), _compared(document)
        self._changed = threading.Condition()

    def refresh(self) -> None:
        """Make the document again; the streams are woken only when more than its time moved."""
        document = self.make()
        compared = _compared(document)
        with self._changed:
            if compared != self._compared:
                self.text, self._compared = json.dumps(document), compared
                self.sequence += 1
                self._changed.notify_all()

    def wait(self, after: int, timeout: float) -> tuple[int, str]:
        with self._changed:
            self._changed.wait_for(lambda: self.sequence != after, timeout)
            return self.sequence, self.text


def _compared(document: JsonObject) -> str:
    return json.dumps({key: value for key, value in document.items() if key != "now"})


class Dashboard:
    """One run of the dashboard: its tokens, its model and what it may do."""

    def __init__(self, model: Model, act: Act | None, *, token: str | None = None, csrf: str | None = None,
                 clock: Clock = SYSTEM_CLOCK):
        self.model, self.act, self.clock = model, act, clock
        self.token = token or secrets.token_urlsafe(32)
        self.csrf = csrf or secrets.token_urlsafe(32)
        self.hosts: set[str] = set()
        self.server: ThreadingHTTPServer | None = None

    def bind(self, address: str, port: int) -> ThreadingHTTPServer:
        dashboard = self

        class Handler(_Handler):
            owner = dashboard

        class Server(ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in address else socket.AF_INET

        server = Server((address, port), Handler)
        server.daemon_threads = True
        bound = server.server_address[1]
        named = f"[{address}]" if ":" in address else address
        names = {"127.0.0.1", "localhost", "[::1]"} | ({named} if address not in ("0.0.0.0", "::") else set())
        self.hosts = {f"{name}:{bound}" for name in names}
        self.server = server
        return server

    def url(self) -> str:
        assert self.server is not None
        address, port = self.server.server_address[:2]
        host = str(address, "ascii") if isinstance(address, bytes) else str(address)
        host = "127.0.0.1" if host in ("0.0.0.0", "::") else f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/?token={self.token}"


class _Handler(BaseHTTPRequestHandler):
    owner: Dashboard
    protocol_version = "HTTP/1.1"
    server_version = "kubectl-disagg-dashboard"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
        return

    # --- the checks every request passes -------------------------------------------------------

    def _refused(self, asset: bool = False) -> bool:
        if self.headers.get("Host", "") not in self.owner.hosts:
            self._send(421, b"misdirected request: this server answers to its own address only\n", "text/plain")
            return True
        if asset:
            return False
        given = (parse_qs(urlsplit(self.path).query).get("token") or [""])[0]
        if not hmac.compare_digest(given.encode(), self.owner.token.encode()):
            self._send(403, b"forbidden: the URL's token is missing or wrong\n", "text/plain")
            return True
        return False

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self._security_headers()
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _security_headers(self) -> None:
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")

    # --- GET --------------------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path.startswith("/assets/"):
            name = path.removeprefix("/assets/")
            if self._refused(asset=True):
                return
            if name not in ASSETS:
                self._send(404, b"not found\n", "text/plain")
                return
            self._send(200, _asset(name), ASSETS[name])
            return
        if self._refused():
            return
        if path == "/":
            page = _asset("index.html").replace(b"{{csrf}}", self.owner.csrf.encode())
            self._send(200, page, "text/html; charset=utf-8")
        elif path == "/api/model":
            self._send(200, self.owner.model.text.encode(), "application/json")
        elif path == "/api/stream":
            self._stream()
        else:
            self._send(404, b"not found\n", "text/plain")

    def _stream(self) -> None:
        """Server-sent events: the document now, then each new one as the hub moves."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self._security_headers()
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sequence, text = -1, self.owner.model.text
        try:
            self.wfile.write(b"retry: 1000\n\n")
            while True:
                if sequence != self.owner.model.sequence or sequence < 0:
                    sequence, text = self.owner.model.sequence, self.owner.model.text
                    self.wfile.write(f"id: {sequence}\nevent: model\ndata: {text}\n\n".encode())
                else:
                    self.wfile.write(b": still here\n\n")
                self.wfile.flush()
                self.owner.model.wait(sequence, KEEPALIVE_SECONDS)
        except (BrokenPipeError, ConnectionResetError, OSError):
            return  # the tab went away

    # --- POST: the actions ------------------------------------------------------------------------

    def do_POST(self) -> None:
        if self._refused():
            return
        if urlsplit(self.path).path != "/api/action":
            self._send(404, b"not found\n", "text/plain")
            return
        origin = self.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc not in self.owner.hosts:
            self._json(403, {"ok": False, "message": "refused: the request comes from another origin"})
            return
        if not hmac.compare_digest(self.headers.get(CSRF_HEADER, "").encode(), self.owner.csrf.encode()):
            self._json(403, {"ok": False, "message": "refused: the request lacks this page's CSRF token"})
            return
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            self._json(415, {"ok": False, "message": "refused: an action is a JSON body"})
            return
        if self.owner.act is None:
            self._json(403, {"ok": False, "message": "refused: this dashboard is read-only"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._json(413, {"ok": False, "message": "refused: too large"})
            return
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            fields = [str(body[key]) for key in ("namespace", "name", "verb", "reason", "stateVersion")]
        except (ValueError, KeyError, TypeError):
            self._json(400, {"ok": False, "message": "refused: the body names namespace, name, verb, reason "
                                                      "and stateVersion"})
            return
        answer = self.owner.act(*fields)
        self._json(answer.status, {"ok": answer.status == 200, "message": answer.message})

    def _json(self, status: int, document: JsonObject) -> None:
        self._send(status, json.dumps(document).encode(), "application/json")


def _asset(name: str) -> bytes:
    """A file of the page, shipped in the package (and in the zipapp) as data: never a command's input."""
    data = pkgutil.get_data("kubectl_disagg.dashboard", f"assets/{name}")
    assert data is not None  # the package's own loader always answers
    return data
