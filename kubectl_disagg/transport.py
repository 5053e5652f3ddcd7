"""HTTP to one API server: TLS as the kubeconfig says, a proxy when one applies, kept-alive
connections shared by concurrent requests, the user's credential on each request.

Built on the standard library's http.client: a cluster command of a small set spends most of
its time importing modules, and an HTTP library would cost more to import than the requests
take (BENCHMARKS.md). `RestClient` (rest.py) builds the requests; this module only carries them.
"""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import threading
from typing import Any, Iterator, Mapping
from urllib.parse import unquote, urlsplit

from kubectl_disagg import __version__
from kubectl_disagg.errors import UserError
from kubectl_disagg.kubeconfig import redact_url

CONNECT_TIMEOUT = 10.0
POOLED_CONNECTIONS = 64  # at least write_scheduler.MAX_IN_FLIGHT_LIMIT: concurrent writes reuse connections
# The server closing a kept-alive connection just as it is reused looks like this. A read goes
# again once on a fresh connection; a write only when it failed while being sent: after that the
# same error can mean it landed and the answer was lost, and sent twice its precondition would
# turn "landed" into a conflict.
_STALE_CONNECTION = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
_RETRIED_METHODS = ("GET", "HEAD")


class NetworkError(Exception):
    """A request that got no HTTP answer; the socket or TLS error is its __cause__."""


class Response:
    """An answer whose body has been read whole (the connection is back in the pool)."""

    def __init__(self, status: int, reason: str, headers: Mapping[str, str], data: bytes):
        self.status, self.reason, self.headers, self.data = status, reason, headers, data


class StreamedResponse:
    """An answer read as it arrives, line by line (a watch); its connection is never reused."""

    def __init__(self, response: http.client.HTTPResponse, connection: http.client.HTTPConnection):
        self.status, self.reason, self.headers = response.status, response.reason, response.headers
        self._response, self._connection = response, connection

    @property
    def data(self) -> bytes:
        """The whole body (for an error answer)."""
        try:
            return self._response.read()
        except (OSError, http.client.HTTPException):
            return b""
        finally:
            self.close()

    def set_read_timeout(self, seconds: float) -> None:
        """How long the next read may wait for data (a watch lingering for more events)."""
        if self._connection.sock is not None:
            self._connection.sock.settimeout(seconds)

    def lines(self) -> Iterator[bytes]:
        while True:
            try:
                line = self._response.readline()
            except (OSError, http.client.HTTPException) as err:
                raise NetworkError(str(err) or type(err).__name__) from err
            if not line:
                return
            if line.strip():
                yield line

    def close(self) -> None:
        self._connection.close()


class _Connection(http.client.HTTPConnection):
    """One TCP connection, through a proxy's CONNECT tunnel when there is one, then TLS.

    TLS is set up here rather than by HTTPSConnection so the name checked in the server's
    certificate can differ from the host dialled (the kubeconfig's tls-server-name).
    """

    def __init__(self, host: str, port: int, tls: ssl.SSLContext | None, server_name: str):
        super().__init__(host, port, timeout=CONNECT_TIMEOUT)
        self._tls, self._server_name = tls, server_name

    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls is not None:
            self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._server_name)


class Transport:
    """Requests to the API server of one `Connection` (kubeconfig.py) with one `Credentials`."""

    def __init__(self, connection: Any, credentials: Any):
        self._connection, self._credentials = connection, credentials
        self.base = connection.server  # paths are appended to it: a server URL may carry a path prefix
        parts = urlsplit(connection.server)
        https = parts.scheme == "https"
        self._origin_length = len(f"{parts.scheme}://{parts.netloc}")
        host = parts.hostname or ""
        port = parts.port or (443 if https else 80)
        self._tls = self._ssl_context() if https else None
        self._dial = (host, port)
        self._tunnel: tuple[str, int, dict[str, str]] | None = None
        proxy = _proxy_for(connection.proxy_url, connection.server)
        if proxy is not None:
            self._dial, self._tunnel = _proxy_route(proxy, host, port, connection.whose)
        self._server_name = connection.tls_server_name or host
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self.user_agent = f"kubectl-disagg/{__version__}"

    def request(self, method: str, url: str, body: bytes | None = None, headers: Mapping[str, str] | None = None,
                *, read_timeout: float, stream: bool = False) -> Response | StreamedResponse:
        """One request to `url` (this server's base URL + path and query); raises NetworkError
        when no answer came."""
        target = url[self._origin_length:] or "/"
        sent = {"User-Agent": self.user_agent, **(headers or {})}
        authorization = self._credentials.authorization()
        if authorization:
            sent["Authorization"] = authorization
        if body is not None:
            sent["Content-Length"] = str(len(body))
        impersonation = self._connection.impersonate
        for attempt in (1, 2):
            connection, reused = self._checkout()
            sending = True
            try:
                if connection.sock is None:
                    connection.connect()
                connection.sock.settimeout(read_timeout)
                connection.putrequest(method, target, skip_accept_encoding=True)
                for name, value in (*sent.items(), *impersonation):  # Impersonate-Group may repeat
                    connection.putheader(name, value)
                connection.endheaders(body)
                sending = False
                response = connection.getresponse()
                if stream:
                    return StreamedResponse(response, connection)
                data = response.read()
            except _STALE_CONNECTION as err:
                self._lost(connection)
                # Refused while sending on a kept-alive connection: the server had closed it, and
                # acts on no request it did not receive whole. Once sent, only reads go again.
                if reused and attempt == 1 and (sending or method in _RETRIED_METHODS):
                    continue
                raise NetworkError(str(err) or type(err).__name__) from err
            except ssl.SSLError as err:
                self._lost(connection)
                raise NetworkError(str(err)) from err
            except (OSError, http.client.HTTPException) as err:
                self._lost(connection)
                raise NetworkError(str(err) or type(err).__name__) from err
            if response.will_close:
                connection.close()
            else:
                self._checkin(connection)
            return Response(response.status, response.reason, response.headers, data)
        raise AssertionError("unreachable")  # pragma: no cover

    def rejected(self) -> bool:
        """After a 401: whether a fresh credential may help (see `Credentials.rejected`)."""
        return self._credentials.rejected()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _lost(self, connection: _Connection) -> None:
        """A connection failed mid-request: close it and every idle one. Whatever cut it (a
        proxy, a restarting server, the network) has most likely cut them too, and a write sent
        on one of them would fail the same way after the server may have acted on it."""
        connection.close()
        self.close()

    def _checkout(self) -> tuple[_Connection, bool]:
        """An idle connection the server has not closed meanwhile (most often it closed one that
        sat idle too long: its socket then reads as ready, at end of file), else a new one."""
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                break
            if connection.sock is not None and not _readable(connection.sock):
                return connection, True
            connection.close()
        connection = _Connection(*self._dial, self._tls, self._server_name)
        if self._tunnel is not None:
            host, port, proxy_headers = self._tunnel
            connection.set_tunnel(host, port, headers=proxy_headers)
        return connection, False

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


def _readable(sock: socket.socket) -> bool:
    """Whether an idle connection's socket has something to read: nothing should be there but
    the server's close (or garbage), so the connection must not be reused."""
    import select

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
    import tempfile

    with tempfile.TemporaryDirectory() as private:  # mode 0700
        paths = [os.path.join(private, "cert.pem"), os.path.join(private, "key.pem")]
        for path, data in zip(paths, (cert_pem, key_pem)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(data)
        load(*paths)


def _proxy_for(configured: str | None, server: str) -> str | None:
    """The proxy for `server`: the kubeconfig's proxy-url, else HTTPS_PROXY/HTTP_PROXY unless
    NO_PROXY names the host, as Go's ProxyFromEnvironment decides (loopback never proxied)."""
    if configured:
        return configured
    parts = urlsplit(server)
    scheme, host = parts.scheme, (parts.hostname or "").lower()
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


def _proxy_route(proxy: str, host: str, port: int, whose: str) -> tuple[tuple[str, int], tuple[str, int, dict]]:
    """Where to dial for `proxy`, and the CONNECT tunnel to ask it for."""
    parts = urlsplit(proxy)
    if parts.scheme != "http" or not parts.hostname:
        raise UserError(f"{whose}: proxy {redact_url(proxy)} is not supported (an http:// proxy is)")
    headers = {}
    if parts.username is not None:
        import base64

        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(pair).decode()
    return (parts.hostname, parts.port or 80), (host, port, headers)


def _in_cidr(host: str, cidr: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False
