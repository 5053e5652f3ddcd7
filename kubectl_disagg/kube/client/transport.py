"""HTTP to one API server: TLS as the kubeconfig says, a proxy when one applies, kept-alive
connections shared by concurrent requests, the user's credential on each request.

About 800 lines on purpose: it is the HTTP client itself, written on `socket` and `ssl`
because an HTTP package costs every cluster command its import. Measured, CPU of a process
that only imports (median of 15, interleaved, load average 7): the interpreter alone 39 ms;
with `ssl`, `socket`, `zlib` and `select`, what this module uses, 57 ms; with `http.client`
and `ssl` 78 ms; with `urllib3` 154 ms; with the official client (`kubernetes.client`, median
of 7) 558 ms. So the parts a library would hold are here: HTTP/1.1 requests and answers
(lengths, chunks, gzip, streamed watches), a pool of kept-alive connections shared by threads,
TLS from the kubeconfig's material with client certificates rotated, and the three proxies
kubectl speaks (`http://` CONNECT, `https://` with the API server's TLS inside the proxy's,
`socks5://` with user name and password). They share the pool and the connection's life, so
they stay one module. `RestClient` (rest.py) builds the requests; this module only carries them.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import select
import socket
import ssl
import tempfile
import threading
import urllib.parse
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

from kubectl_disagg import __version__
from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.errors import UserError
import kubectl_disagg.kube.client.verbosity as verbosity
from kubectl_disagg.kube.client.kubeconfig import Connection, redact_url

if TYPE_CHECKING:
    from kubectl_disagg.wait import Deadline

_T = TypeVar("_T")

CONNECT_TIMEOUT = 10.0
POOLED_CONNECTIONS = 64  # at least write_scheduler.MAX_IN_FLIGHT_LIMIT: concurrent writes reuse connections
_RECEIVE_SIZE = 65536
_MAX_LINE = 65536  # a status, header or chunk-size line longer than this is not an answer
_MAX_HEADERS = 100
_HEX_DIGITS = b"0123456789abcdefABCDEF"


class _Disconnected(ConnectionResetError):
    """The server closed the connection before the status line: a kept-alive connection it had
    already given up on."""


class NetworkError(Exception):
    """A request that got no HTTP answer; the socket or TLS error is its __cause__.

    `sent`: whether the request left whole (the server may have acted on it, its answer lost);
    False when it failed connecting, in the TLS handshake or while being sent: the API server
    acts on no request it did not receive whole, so any request may go again. `reused`: it went
    on a kept-alive connection (the server most often closed it just as it was reused).
    """

    def __init__(self, message: str, *, sent: bool = True, reused: bool = False):
        super().__init__(message)
        self.sent, self.reused = sent, reused

    @property
    def lasting(self) -> bool:
        """A failure that sending again will not cure: nothing listens (connection refused), the
        name does not resolve, the certificate does not verify. client-go does not resend these
        either (only resets, EOFs and timeouts)."""
        return isinstance(self.__cause__, (ConnectionRefusedError, socket.gaierror, ssl.SSLCertVerificationError))


class _Malformed(Exception):
    """What came back is not an HTTP/1.x answer (or stops in the middle of one)."""


class Headers:
    """An answer's header fields: names compare without case; a repeated field keeps every value."""

    def __init__(self, fields: list[tuple[str, str]]):
        self._fields = fields

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of the field `name`."""
        name = name.lower()
        return next((value for key, value in self._fields if key.lower() == name), default)

    def get_all(self, name: str) -> list[str]:
        name = name.lower()
        return [value for key, value in self._fields if key.lower() == name]

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields)

    def keys(self) -> list[str]:
        return [key for key, _ in self._fields]

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._fields)

    def __repr__(self) -> str:
        return f"Headers({self._fields!r})"


class Response:
    """An answer whose body has been read whole (the connection is back in the pool)."""

    def __init__(self, status: int, reason: str, headers: Headers, data: bytes):
        self.status, self.reason, self.headers, self.data = status, reason, headers, data


class StreamedResponse:
    """An answer read as it arrives, line by line (a watch); its connection is never reused."""

    def __init__(self, answer: _Answer, connection: _Connection):
        self.status, self.reason, self.headers = answer.status, answer.reason, answer.headers
        self._body, self._connection = answer.body, connection
        self._inflate = _inflater(answer.headers)

    @property
    def data(self) -> bytes:
        """The whole body (for an error answer)."""
        try:
            data = self._body.read_all()
            return self._inflate(data) if self._inflate else data
        except (OSError, _Malformed):
            return b""
        finally:
            self.close()

    def set_read_timeout(self, seconds: float) -> None:
        """How long the next read may wait for data (a watch lingering for more events)."""
        try:
            self._connection.sock.settimeout(seconds)
        except OSError:
            pass  # closed: the next read says so

    def lines(self) -> Iterator[bytes]:
        """The body's non-blank lines, each with its line ending, as soon as each is whole."""
        partial: list[bytes] = []  # the line being read, in pieces (an event may span many chunks)
        while True:
            try:
                piece = self._body.read_some()
                if self._inflate is not None and piece:
                    piece = self._inflate(piece)
            except (OSError, _Malformed) as err:
                raise NetworkError(str(err) or type(err).__name__) from err
            if not piece and self._body.done:
                break
            if b"\n" not in piece:
                partial.append(piece)
                continue
            *whole, rest = b"".join((*partial, piece)).split(b"\n")
            partial = [rest] if rest else []
            for line in whole:
                if line.strip():
                    yield line + b"\n"
        last = b"".join(partial)
        if last.strip():
            yield last

    def close(self) -> None:
        self._connection.close()


def _inflater(headers: Headers) -> Callable[[bytes], bytes] | None:
    """What undoes the answer's Content-Encoding: gzip (asked for with Accept-Encoding, as
    client-go does: the API server compresses answers over 128 KiB, a large LIST), or None for
    an answer sent as it is. Pieces go through one after another (a stream)."""
    encoding = _tokens(headers.get("Content-Encoding"))
    if not encoding or encoding == ["identity"]:
        return None
    if encoding != ["gzip"]:
        raise _Malformed(f"an answer in {headers.get('Content-Encoding')!r}, which was not asked for")
    inflater = zlib.decompressobj(wbits=31)

    def inflate(piece: bytes) -> bytes:
        try:
            return inflater.decompress(piece)
        except zlib.error as err:
            raise _Malformed(f"a gzip answer that does not decompress ({err})") from None

    return inflate


class _Reader:
    """Buffered reads from one socket; while `until` (a wait.Deadline) is set, no receive waits
    past it, however slowly the answer trickles in (each waits at most `most` seconds)."""

    def __init__(self, sock: _Socket):
        self._sock, self._buffer = sock, bytearray()
        self.until: Deadline | None = None
        self.most = 0.0

    def _receive(self, size: int) -> bytes:
        if self.until is not None:
            left = self.until.remaining()
            if left <= 0:
                raise TimeoutError("timed out")
            self._sock.settimeout(min(self.most, left))
        return self._sock.recv(size)

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def line(self) -> bytes:
        """The next line with its ending; at the end of the stream what is left (b"" when nothing)."""
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end >= 0:
                line = bytes(self._buffer[:end + 1])
                del self._buffer[:end + 1]
                return line
            if len(self._buffer) > _MAX_LINE:
                raise _Malformed("a line of the answer is longer than 64 KiB")
            start = len(self._buffer)
            data = self._receive(_RECEIVE_SIZE)
            if not data:
                line = bytes(self._buffer)
                self._buffer.clear()
                return line
            self._buffer += data

    def some(self, most: int) -> bytes:
        """Up to `most` bytes: what is buffered, else what one receive brings (b"" at the end)."""
        if not self._buffer:
            return self._receive(min(most, _RECEIVE_SIZE))
        piece = bytes(self._buffer[:most])
        del self._buffer[:most]
        return piece


class _Body:
    """One answer's body, framed as its headers say: Content-Length, chunked, or up to the close."""

    def __init__(self, reader: _Reader, length: int | None, chunked: bool):
        self._reader, self._left, self._chunked = reader, length, chunked
        self._chunk_left: int | None = None  # in the current chunk; None before the first
        self.done = length == 0 and not chunked

    def read_some(self) -> bytes:
        """The next piece of the body, as soon as some has arrived; b"" once it is all read."""
        if self.done:
            return b""
        if self._chunked:
            if not self._chunk_left:
                if self._chunk_left == 0:
                    self._line_end()  # the CRLF closing the previous chunk, read only now: a
                    # watch event is handed over without waiting for what follows it
                    self._chunk_left = None  # read: a timeout below must not make it read again
                self._chunk_left = self._chunk_size()
                if self._chunk_left == 0:
                    self._trailers()
                    self.done = True
                    return b""
            piece = self._reader.some(self._chunk_left)
            if not piece:
                raise _Malformed("the connection closed in the middle of the answer")
            self._chunk_left -= len(piece)
            return piece
        if self._left is None:  # up to the close
            piece = self._reader.some(_RECEIVE_SIZE)
            self.done = not piece
            return piece
        piece = self._reader.some(self._left)
        if not piece:
            raise _Malformed("the connection closed in the middle of the answer")
        self._left -= len(piece)
        self.done = self._left == 0
        return piece

    def read_all(self) -> bytes:
        pieces = []
        while piece := self.read_some():
            pieces.append(piece)
        return b"".join(pieces)

    def _chunk_size(self) -> int:
        line = self._reader.line()
        if not line.endswith(b"\n"):
            raise _Malformed("the connection closed in the middle of the answer")
        size = line.split(b";", 1)[0].strip()  # a chunk extension is ignored
        if not size or size.translate(None, _HEX_DIGITS):
            raise _Malformed(f"bad chunk size {line[:40]!r}")
        return int(size, 16)

    def _line_end(self) -> None:
        if self._reader.line() not in (b"\r\n", b"\n"):
            raise _Malformed("a chunk does not end where its size says")

    def _trailers(self) -> None:
        for _ in range(_MAX_HEADERS + 1):
            line = self._reader.line()
            if not line.endswith(b"\n"):
                raise _Malformed("the connection closed in the middle of the answer")
            if line in (b"\r\n", b"\n"):
                return
        raise _Malformed(f"more than {_MAX_HEADERS} trailer fields")


class _Answer:
    """The status line and header fields of an answer, and how its body comes."""

    def __init__(self, reader: _Reader, method: str):
        while True:
            version, self.status, self.reason, self.headers = _read_head(reader)
            if not (100 <= self.status < 200) or self.status == 101:
                break  # a 1xx but 101 is an interim answer: the real one follows
        self.will_close = version == "HTTP/1.0" or self.status == 101 \
            or "close" in _tokens(self.headers.get("Connection"))
        length, chunked = None, False
        if method == "HEAD" or self.status < 200 or self.status in (204, 304):
            length = 0
        elif self.headers.get("Transfer-Encoding") is not None:
            chunked = _tokens(self.headers.get("Transfer-Encoding"))[-1:] == ["chunked"]
        elif self.headers.get("Content-Length") is not None:
            length = _content_length(self.headers.get_all("Content-Length"))
        if length is None and not chunked:
            self.will_close = True  # the body ends when the connection does
        self.body = _Body(reader, length, chunked)


def _read_head(reader: _Reader) -> tuple[str, int, str, Headers]:
    """An answer's status line and header fields: HTTP version, status, reason, headers."""
    line = reader.line()
    if not line:
        raise _Disconnected("Remote end closed connection without response")
    text = line.decode("iso-8859-1").rstrip("\r\n")
    version, _, rest = text.partition(" ")
    code, _, reason = rest.partition(" ")
    if not line.endswith(b"\n") or version not in ("HTTP/1.0", "HTTP/1.1") \
            or not (len(code) == 3 and code.isascii() and code.isdigit() and code[0] != "0"):
        raise _Malformed(f"not an HTTP/1.x status line: {text[:80]!r}")
    fields: list[tuple[str, str]] = []
    while True:
        line = reader.line()
        if not line.endswith(b"\n"):
            raise _Malformed("the connection closed in the middle of the answer's header")
        if line in (b"\r\n", b"\n"):
            break
        field = line.decode("iso-8859-1").rstrip("\r\n")
        if field[:1] in (" ", "\t") and fields:  # an obsolete folded continuation line
            name, value = fields.pop()
            fields.append((name, f"{value} {field.strip()}"))
            continue
        name, colon, value = field.partition(":")
        if not colon or not name or name != name.strip():
            raise _Malformed(f"not an HTTP header field: {field[:80]!r}")
        if len(fields) == _MAX_HEADERS:
            raise _Malformed(f"more than {_MAX_HEADERS} header fields")
        fields.append((name, value.strip()))
    return version, int(code), reason.strip(), Headers(fields)


def _tokens(value: str | None) -> list[str]:
    return [token.strip().lower() for token in (value or "").split(",") if token.strip()]


def _content_length(values: list[str]) -> int:
    if len(set(values)) != 1 or not (values[0].isascii() and values[0].isdigit()):
        raise _Malformed(f"bad Content-Length {values!r}")
    return int(values[0])


class _Connection:
    """One kept-alive connection: the socket (TLS already set up) and what was read ahead on it."""

    def __init__(self, sock: _Socket):
        self.sock, self.reader = sock, _Reader(sock)

    def close(self) -> None:
        self.sock.close()


class Authorizing(Protocol):
    """What a `Transport` asks of its credentials (credentials.Credentials; an identity
    provider's, oidc.py, none)."""

    certificate_issue: int

    @property
    def client_certificate(self) -> tuple[bytes, bytes] | None: ...

    def authorization(self) -> str | None: ...

    def rejected(self) -> bool: ...


class Transport:
    """Requests to the API server of one `Connection` (kubeconfig.py) with one `Credentials`."""

    def __init__(self, connection: Connection, credentials: Authorizing, clock: Clock = SYSTEM_CLOCK):
        self._connection, self._credentials, self._clock = connection, credentials, clock
        self.base = connection.server  # paths are appended to it: a server URL may carry a path prefix
        url = _Url(connection.server, connection.whose)
        self._origin_length = len(url.origin)
        self._certificate_issue = credentials.certificate_issue
        self._tls = self._ssl_context() if url.scheme == "https" else None
        self._dial = (url.host, url.port)
        self._host_field = _authority(url.host, url.port, url.default_port)
        self._tunnel: Callable[[socket.socket], None] | None = None  # through the proxy, on a new socket
        self._proxy_tls: str | None = None  # the https:// proxy's host name, for TLS to it
        proxy = _proxy_for(connection.proxy_url, connection.server)
        if proxy is not None:
            self._dial, self._tunnel = _proxy_route(proxy, url.host, url.port, connection.whose)
            if proxy.lower().startswith("https://"):
                self._proxy_tls = self._dial[0]
        self._server_name = _for_socket(connection.tls_server_name or url.host)
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self.user_agent = f"kubectl-disagg/{__version__}"

    def request(self, method: str, url: str, body: bytes | None = None, headers: Mapping[str, str] | None = None,
                *, read_timeout: float, stream: bool = False,
                deadline: Deadline | None = None) -> Response | StreamedResponse:
        """One request to `url` (this server's base URL + path and query); raises NetworkError
        when no answer came. A `deadline` (wait.Deadline) bounds it whole: the connection, the
        TLS handshake, the sending and every receive of a (not streamed) answer."""
        request_target = url[self._origin_length:] or "/"
        if any(c <= " " or c == "\x7f" for c in request_target):
            raise UserError(f"{self._connection.whose}: a request URL can't contain control characters or spaces: "
                            f"{request_target!r}")
        sent = {"User-Agent": self.user_agent, "Accept-Encoding": "gzip", **(headers or {})}
        authorization = self._credentials.authorization()  # may run an exec plugin again: a new certificate
        if authorization:
            sent["Authorization"] = authorization
        if self._tls is not None and self._certificate_issue != self._credentials.certificate_issue:
            self._rotate()
        if body is not None:
            sent["Content-Length"] = str(len(body))
        # Impersonate-Group may repeat
        fields = (("Host", self._host_field), *sent.items(), *self._connection.impersonate)
        message = _message(f"{method} {request_target} HTTP/1.1", fields) + (body or b"")
        started = self._clock.monotonic()
        try:
            response = self._round_trip(method, message, read_timeout, stream, deadline)
        except NetworkError as err:
            verbosity.round_trip(method, url, list(fields), body, f"(no answer: {err})", started, self._clock)
            raise
        verbosity.round_trip(method, url, list(fields), body, f"{response.status} {response.reason}".strip(), started,
                             self._clock, None if stream else response.data)
        return response

    def _round_trip(self, method: str, message: bytes, read_timeout: float,
                    stream: bool, deadline: Deadline | None = None) -> Response | StreamedResponse:
        if deadline is not None:
            read_timeout = min(read_timeout, deadline.remaining())
            if read_timeout <= 0:
                raise NetworkError("timed out", sent=False) from TimeoutError("timed out")
        connection = self._checkout()
        reused, sending = connection is not None, True
        try:
            if connection is None:
                connection = self._connect(CONNECT_TIMEOUT if deadline is None else read_timeout)
            connection.sock.settimeout(read_timeout)
            connection.sock.sendall(message)
            sending = False
            if not stream:
                connection.reader.until, connection.reader.most = deadline, read_timeout
            answer = _Answer(connection.reader, method)
            if stream:
                return StreamedResponse(answer, connection)
            data = answer.body.read_all()
            connection.reader.until = None
            inflate = _inflater(answer.headers)
            if inflate is not None:
                data = inflate(data)
        except ssl.SSLError as err:
            self._lost(connection)
            raise NetworkError(str(err), sent=not sending, reused=reused) from err
        except (OSError, _Malformed) as err:
            self._lost(connection)
            raise NetworkError(str(err) or type(err).__name__, sent=not sending, reused=reused) from err
        if answer.will_close or connection.reader.buffered:
            connection.close()  # more than the answer came: the connection is out of step
        else:
            self._checkin(connection)
        return Response(answer.status, answer.reason, answer.headers, data)

    def _rotate(self) -> None:
        """The exec plugin issued a new client certificate: new connections present it, and the
        kept-alive ones, made with the old one, are closed (those in use close when they fail)."""
        with self._lock:
            if self._certificate_issue == self._credentials.certificate_issue:
                return  # another request rotated it
            self._certificate_issue = self._credentials.certificate_issue
            self._tls = self._ssl_context()
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def rejected(self) -> bool:
        """After a 401: whether a fresh credential may help (see `Credentials.rejected`)."""
        return self._credentials.rejected()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _lost(self, connection: _Connection | None) -> None:
        """A connection failed mid-request: close it and every idle one. Whatever cut it (a
        proxy, a restarting server, the network) has most likely cut them too, and a write sent
        on one of them would fail the same way after the server may have acted on it."""
        if connection is not None:
            connection.close()
        self.close()

    def _checkout(self) -> _Connection | None:
        """An idle connection the server has not closed meanwhile (most often it closed one that
        sat idle too long: its socket then reads as ready, at end of file), else None."""
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None or not _readable(connection.sock):
                return connection
            connection.close()

    def _connect(self, most: float = CONNECT_TIMEOUT) -> _Connection:
        """A new connection: TCP without Nagle's delay (with the server's delayed ACK it would
        hold a request's last segment back 40 ms), through the proxy's tunnel, then TLS; each
        of those waits at most CONNECT_TIMEOUT (or `most`, when less)."""
        host, port = self._dial
        # getaddrinfo takes a host name as bytes (see `_for_socket`); typeshed allows only str
        sock = socket.create_connection((_for_socket(host), port),  # type: ignore[arg-type]
                                        timeout=min(CONNECT_TIMEOUT, most))
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._proxy_tls is not None:
                # Go's transport speaks TLS to an https:// proxy with the API server's TLS
                # settings (its CA, the insecure flag, the client certificate), named as the proxy
                sock = (self._tls or ssl.create_default_context()).wrap_socket(
                    sock, server_hostname=_for_socket(self._proxy_tls))
            if self._tunnel is not None:
                self._tunnel(sock)
            stream: _Socket = sock
            if self._tls is not None:
                if isinstance(sock, ssl.SSLSocket):  # TLS inside the proxy's TLS
                    stream = _TlsInTls(sock, self._tls, self._server_name)
                else:
                    stream = sock = self._tls.wrap_socket(sock, server_hostname=self._server_name)
        except BaseException:
            sock.close()
            raise
        return _Connection(stream)

    def _checkin(self, connection: _Connection) -> None:
        with self._lock:
            if len(self._idle) < POOLED_CONNECTIONS:
                self._idle.append(connection)
                return
        connection.close()

    def _ssl_context(self) -> ssl.SSLContext:
        whose = self._connection.whose
        if self._connection.insecure:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            try:
                ca = self._connection.ca_pem
                context = ssl.create_default_context(cadata=ca.decode("ascii", "replace") if ca else None)
            except (ssl.SSLError, ValueError):
                raise UserError(f"{whose}: the cluster's certificate authority is not a PEM certificate") from None
        certificate = self._credentials.client_certificate
        if certificate is not None:
            _load_client_certificate(context, *certificate, whose)
        return context


def _message(start_line: str, fields: Iterable[tuple[str, str]]) -> bytes:
    """A request's start line and header fields, as sent (Latin-1, as HTTP/1.1 allows)."""
    lines = [start_line]
    for name, value in fields:
        if not name or any(c in name for c in ":\r\n\t ") or any(c in value for c in "\r\n"):
            raise ValueError(f"invalid HTTP header field {name!r}")  # never sent: it would split the request
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class _TlsInTls:
    """TLS to the API server inside the TLS to an https:// proxy: `ssl` wraps only a socket of
    its own, so the inner TLS runs on memory buffers (an SSLObject) over the outer TLS socket.
    Offers what `_Connection` and `_Reader` use of a socket."""

    def __init__(self, outer: ssl.SSLSocket, context: ssl.SSLContext, server_name: str | bytes):
        self._outer, self._incoming, self._outgoing = outer, ssl.MemoryBIO(), ssl.MemoryBIO()
        name = server_name.decode() if isinstance(server_name, bytes) else server_name
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_hostname=name)
        self._run(self._tls.do_handshake)

    def _run(self, operation: Callable[..., _T], *args: object) -> _T:
        while True:
            try:
                result = operation(*args)
            except ssl.SSLWantReadError:
                self._flush()
                data = self._outer.recv(_RECEIVE_SIZE)
                if data:
                    self._incoming.write(data)
                else:
                    self._incoming.write_eof()
                continue
            self._flush()
            return result

    def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            self._outer.sendall(data)

    def recv(self, size: int) -> bytes:
        try:
            return self._run(self._tls.read, size)
        except ssl.SSLZeroReturnError:  # the server closed its TLS cleanly
            return b""

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[self._run(self._tls.write, view):]

    def settimeout(self, seconds: float | None) -> None:
        self._outer.settimeout(seconds)

    def fileno(self) -> int:
        return self._outer.fileno()

    def close(self) -> None:
        self._outer.close()


def _open_tunnel(sock: socket.socket, authority: str, proxy_headers: dict[str, str]) -> None:
    """Ask the HTTP proxy at the other end of `sock` for a tunnel to `authority` (host:port)."""
    sock.sendall(_message(f"CONNECT {authority} HTTP/1.1", (("Host", authority), *proxy_headers.items())))
    reader = _Reader(sock)
    try:
        _, status, reason, _ = _read_head(reader)
    except _Malformed as err:
        raise OSError(f"Tunnel connection failed: {err}") from None
    if status != 200:
        raise OSError(f"Tunnel connection failed: {status} {reason}".rstrip())
    if reader.buffered:  # the server speaks only after us; anything here would be lost under TLS
        raise OSError("Tunnel connection failed: the proxy sent more than its answer")


def _readable(sock: _Socket) -> bool:
    """Whether an idle connection's socket has something to read: nothing should be there but
    the server's close (or garbage), so the connection must not be reused."""
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _load_client_certificate(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes, whose: str) -> None:
    """Load a client certificate held in memory: `ssl` reads them only from files, so they go
    through anonymous in-memory files (Linux), else a private temporary directory, gone at once."""
    def load(cert_path: str, key_path: str) -> None:
        try:
            context.load_cert_chain(cert_path, key_path)
        except (ssl.SSLError, OSError):
            raise UserError(f"{whose}: the client certificate and key do not load (not PEM, or not a pair)") from None

    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fds = [os.memfd_create("kubectl-disagg-cert"), os.memfd_create("kubectl-disagg-key")]
        try:
            for fd, data in zip(fds, (cert_pem, key_pem)):
                os.write(fd, data)
            load(*(f"/proc/self/fd/{fd}" for fd in fds))
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory() as private:  # mode 0700
        paths = [os.path.join(private, "cert.pem"), os.path.join(private, "key.pem")]
        for path, data in zip(paths, (cert_pem, key_pem)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(data)
        load(*paths)


class _Url:
    """The parts of an absolute http(s) URL this module needs, read as urllib's urlsplit reads them."""

    def __init__(self, url: str, whose: str):
        scheme, _, rest = url.partition("://")
        self.scheme = scheme.lower()
        netloc = rest
        for end in "/?#":
            netloc = netloc.split(end, 1)[0]
        self.origin = f"{scheme}://{netloc}"
        userinfo, at, hostport = netloc.rpartition("@")
        self.username = self.password = None
        if at:
            self.username, colon, password = userinfo.partition(":")
            self.password = password if colon else None
        if hostport.startswith("["):
            host, _, after = hostport[1:].partition("]")
            port = after[1:] if after.startswith(":") else ""
        else:
            host, _, port = hostport.partition(":")
        self.host = host.lower()
        self.default_port = 443 if self.scheme == "https" else 80
        if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
            raise UserError(f"{whose}: {redact_url(url)} has a bad port number")
        self.port = int(port) if port else self.default_port


def _authority(host: str, port: int, default_port: int) -> str:
    """`host:port` as the Host field and CONNECT name it: IPv6 in brackets (without a zone),
    an international name in its ASCII form, the port left out when it is the scheme's own."""
    host = host.split("%", 1)[0] if ":" in host else host
    host = host if host.isascii() else host.encode("idna").decode("ascii")
    host = f"[{host}]" if ":" in host else host
    return host if port == default_port else f"{host}:{port}"


def _for_socket(host: str) -> str | bytes:
    """A host name for getaddrinfo and TLS: ASCII as bytes, which they take as it is, where a
    str would load the IDNA codec first (4 ms); an international name stays a str."""
    return host.encode("ascii") if host.isascii() else host


def _proxy_for(configured: str | None, server: str) -> str | None:
    """The proxy for `server`: the kubeconfig's proxy-url, else HTTPS_PROXY/HTTP_PROXY unless
    NO_PROXY names the host, as Go's ProxyFromEnvironment decides (loopback never proxied)."""
    if configured:
        return configured
    url = _Url(server, server)
    scheme, host = url.scheme, url.host
    names = ("https_proxy", "HTTPS_PROXY") if scheme == "https" else ("http_proxy", "HTTP_PROXY")
    proxy = next((os.environ[n] for n in names if os.environ.get(n)), None)
    if not proxy or host in ("localhost", "::1") or host.startswith("127."):
        return None
    no_proxy = os.environ.get("no_proxy") or os.environ.get("NO_PROXY") or ""
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        entry = entry.rsplit(":", 1)[0] if entry.count(":") == 1 else entry  # a port does not matter here
        if entry == "*" or (entry and (host == entry.lstrip(".") or host.endswith("." + entry.lstrip(".")))) \
                or (entry and "/" in entry and _in_cidr(host, entry)):
            return None
    return proxy if "://" in proxy else f"http://{proxy}"


def _proxy_route(proxy: str, host: str, port: int, whose: str) -> tuple[tuple[str, int],
                                                                          Callable[[socket.socket], None]]:
    """Where to dial for `proxy`, and how to open the way through it to host:port on the new
    socket: an HTTP CONNECT tunnel (http://; https://, inside TLS to the proxy), or a SOCKS5
    CONNECT (socks5://, socks5h://: the proxy resolves the name, as Go's SOCKS dialer has it
    do), with the proxy URL's user info."""
    url = _Url(proxy, whose) if "://" in proxy else None
    if url is None or url.scheme not in ("http", "https", "socks5", "socks5h") or not url.host:
        raise UserError(f"{whose}: proxy {redact_url(proxy)} is not supported (an http://, https:// or socks5:// "
                        "proxy is)")
    user = None if url.username is None else (urllib.parse.unquote(url.username), urllib.parse.unquote(url.password or ""))
    if url.scheme.startswith("socks5"):
        dial = (url.host, url.port if ":" in _after_host(proxy) else 1080)
        return dial, lambda sock: _socks5_connect(sock, host, port, user)
    headers = {}
    if user is not None:
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
    authority = _authority(host, port, 0)
    return (url.host, url.port), lambda sock: _open_tunnel(sock, authority, headers)


def _after_host(url: str) -> str:
    """What follows the host in a URL's authority (":port" or nothing)."""
    netloc = url.partition("://")[2].split("/", 1)[0].rpartition("@")[2]
    return netloc.rpartition("]")[2] if netloc.startswith("[") else netloc


_SOCKS_REPLIES = {1: "general SOCKS server failure", 2: "connection not allowed by ruleset",
                  3: "network unreachable", 4: "host unreachable", 5: "connection refused", 6: "TTL expired",
                  7: "command not supported", 8: "address type not supported"}


def _socks5_connect(sock: socket.socket, host: str, port: int, user: tuple[str, str] | None) -> None:
    """Ask the SOCKS5 proxy at the other end of `sock` to connect to host:port (RFC 1928; a
    user name and password as RFC 1929 sends them)."""
    def take(count: int) -> bytes:
        data = b""
        while len(data) < count:
            piece = sock.recv(count - len(data))
            if not piece:
                raise OSError("SOCKS5 proxy closed the connection")
            data += piece
        return data

    sock.sendall(b"\x05\x01" + (b"\x02" if user else b"\x00"))
    version, method = take(2)
    if version != 5 or method != (2 if user else 0):
        raise OSError("SOCKS5 proxy refused every authentication method offered")
    if user:
        name, password = (part.encode() for part in user)
        if len(name) > 255 or len(password) > 255:
            raise OSError("SOCKS5 user name or password longer than 255 bytes")
        sock.sendall(b"\x01" + bytes([len(name)]) + name + bytes([len(password)]) + password)
        if take(2)[1] != 0:
            raise OSError("SOCKS5 proxy refused the user name and password")
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
        address_field = (b"\x01" if address.version == 4 else b"\x04") + address.packed
    except ValueError:
        name = host.encode("idna") if not host.isascii() else host.encode()
        address_field = b"\x03" + bytes([len(name)]) + name
    sock.sendall(b"\x05\x01\x00" + address_field + port.to_bytes(2, "big"))
    version, reply, _, kind = take(4)
    if version != 5 or reply != 0:
        raise OSError(f"SOCKS5 proxy could not connect: {_SOCKS_REPLIES.get(reply, f'reply {reply}')}")
    take({1: 4, 4: 16}.get(kind) or take(1)[0])  # the address it bound, unused
    take(2)


def _in_cidr(host: str, cidr: str) -> bool:
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


# What a connection reads and writes: a socket, or the API server's TLS inside a proxy's.
_Socket = socket.socket | _TlsInTls
