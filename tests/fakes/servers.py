"""Local servers that answer the HTTP client's tests as scripted (or never: a hung Prometheus)."""

from __future__ import annotations

import http.server
import socket
import ssl
import threading

from kubectl_disagg.kube.client.credentials import Credentials
from kubectl_disagg.kube.client.kubeconfig import Connection
from kubectl_disagg.kube.client.transport import Transport


TIMEOUT = 5.0


class Peer:
    """The server's end of one connection."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buffer = sock, b""

    def request(self) -> tuple[str, bytes]:
        """The next request: its head as text, its body; ("", b"") when the client closed."""
        while b"\r\n\r\n" not in self.buffer:
            data = self.sock.recv(65536)
            if not data:
                return "", b""
            self.buffer += data
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        text = head.decode("latin-1")
        length = next((int(line.split(":", 1)[1]) for line in text.split("\r\n")
                       if line.lower().startswith("content-length:")), 0)
        while len(self.buffer) < length:
            self.buffer += self.sock.recv(65536)
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return text, body

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)


class Server:
    """Accepts one connection per script, in order; each script runs in its own thread."""

    def __init__(self, *scripts, tls: ssl.SSLContext | None = None):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.scripts, self.tls = list(scripts), tls
        self.heads: list[str] = []  # every request head received, in order
        self.accepted = 0
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        for script in self.scripts:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            thread = threading.Thread(target=self._run, args=(script, sock), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _run(self, script, sock: socket.socket) -> None:
        try:
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_side=True)
            peer = Peer(sock)
            original = peer.request

            def recording() -> tuple[str, bytes]:
                head, body = original()
                if head:
                    self.heads.append(head)
                return head, body

            peer.request = recording
            script(peer)
        except (OSError, ssl.SSLError) as err:
            self.errors.append(err)
        finally:
            sock.close()

    def close(self) -> None:
        self.listener.close()
        for thread in self.threads[1:]:
            thread.join(TIMEOUT)


def transport_to(server: str, **fields) -> Transport:
    connection = Connection(server=server, whose="the test", token="t0ken", **fields)
    return Transport(connection, Credentials(connection))


def answering(*answers: bytes, then_close: bool = False):
    """A script: read a request and send the next answer, for each answer in turn."""
    def script(peer: Peer) -> None:
        for answer in answers:
            if not peer.request()[0]:
                return
            peer.send(answer)
        if not then_close:
            peer.request()  # keep the connection open until the client closes it
    return script


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


class Silent:
    """A local server that accepts every connection and never answers (or, `trickle`, sends
    one byte of an endless header every `trickle` seconds): a hung Prometheus."""

    def __init__(self, trickle: float | None = None):
        import socket
        import threading
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.accepted, self.closed = [], threading.Event()
        self.trickle = trickle
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        import threading
        while not self.closed.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.accepted.append(connection)
            if self.trickle is not None:
                threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection):
        try:
            connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not self.closed.wait(self.trickle):
                connection.sendall(b"a")
        except OSError:
            pass

    def close(self):
        self.closed.set()
        self.listener.close()
        for connection in self.accepted:
            connection.close()


class Answers:
    """A local HTTP server answering each GET with the next (status, headers, body) of its
    script, then with `then` for every later one (None: the script must not run out)."""

    def __init__(self, *answers, then: tuple | None = None):
        self.answers, self.paths = list(answers), []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.paths.append(self.path)
                status, headers, body = outer.answers.pop(0) if outer.answers or then is None else then
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()
