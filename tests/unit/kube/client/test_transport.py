"""The transport's own HTTP/1.1 client against tiny local servers written here: each accepted
connection runs one scripted function, so every framing, close and failure is exact."""

from __future__ import annotations

import base64
import pathlib
import socket
import ssl
import subprocess
import threading

import pytest

from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client.credentials import Credentials
from kubectl_disagg.kube.client.kubeconfig import Connection
from kubectl_disagg.kube.client.transport import NetworkError, Transport
from tests.fakes.servers import OK, Peer, Server, TIMEOUT, answering, transport_to
from tests.support.cli import run
from tests.support.kube import get
from tests.support.kube import write_kubeconfig
from tests.support.paths import CERTS, EXAMPLES


CA, CA_KEY = CERTS / "unit-test-client.crt", CERTS / "unit-test-client.key"
SERVER_CERT, SERVER_KEY = CERTS / "unit-test-server.crt", CERTS / "unit-test-server.key"  # DNS:server.unit-test


# --- bodies ---------------------------------------------------------------------------------------


def test_a_chunked_body_with_trailers_is_read_whole_and_the_connection_reused(serve):
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5\r\nhello\r\n6;name=value\r\n world\r\n0\r\nX-Checksum: 1\r\nX-Other: 2\r\n\r\n")
    server, transport = serve(answering(chunked, OK))
    first, second = get(transport), get(transport)
    assert (first.status, first.reason, first.data) == (200, "OK", b"hello world")
    assert second.data == b"{}" and server.accepted == 1


def test_a_content_length_body_is_read_exactly_and_the_connection_reused(serve):
    server, transport = serve(answering(b"HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nabcde", OK))
    first = get(transport, method="POST", body=b"{}")
    assert (first.status, first.reason, first.data) == (201, "Created", b"abcde")
    assert get(transport).data == b"{}" and server.accepted == 1


def test_a_body_without_length_is_read_until_the_close_and_the_connection_not_reused(serve):
    server, transport = serve(answering(b"HTTP/1.1 200 OK\r\n\r\nall of it, then the close", then_close=True),
                              answering(OK))
    assert get(transport).data == b"all of it, then the close"
    assert get(transport).data == b"{}" and server.accepted == 2


@pytest.mark.parametrize(("method", "answer"), [
    ("HEAD", b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"),
    ("GET", b"HTTP/1.1 204 No Content\r\n\r\n"),
    ("GET", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 1000\r\n\r\n"),
    ("GET", b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"),
])
def test_answers_without_a_body_do_not_wait_for_one(serve, method, answer):
    server, transport = serve(answering(answer, OK))
    first = get(transport, method=method)
    assert first.data == b"" and first.status in (200, 204, 304)
    assert get(transport).data == b"{}" and server.accepted == 1  # the connection stayed in step


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 2\r\n\r\n{}",
    b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",
])
def test_a_connection_the_server_closes_is_not_reused(serve, answer):
    server, transport = serve(answering(answer), answering(OK))  # the first stays open: the client must not use it
    assert get(transport).data == b"{}" and get(transport).data == b"{}"
    assert server.accepted == 2 and len(server.heads) == 2  # nothing went to the first connection again


# --- stale connections ----------------------------------------------------------------------------


def closing_before_the_second_answer(peer: Peer) -> None:
    peer.request()
    peer.send(OK)
    peer.request()  # received whole, then closed without a word: a kept-alive connection given up on


def test_a_kept_alive_connection_closed_after_the_request_says_it_was_sent_on_a_reused_one(serve):
    server, transport = serve(closing_before_the_second_answer, answering(OK))
    get(transport)
    with pytest.raises(NetworkError) as caught:
        get(transport, method="POST", body=b'{"kind":"x"}')
    assert "closed connection without response" in str(caught.value)
    assert (caught.value.sent, caught.value.reused, caught.value.lasting) == (True, True, False)
    assert server.accepted == 1 and [h.split()[0] for h in server.heads] == ["GET", "POST"]
    assert get(transport).data == b"{}" and server.accepted == 2  # the next request: a fresh connection


def test_a_fresh_connection_closed_before_the_status_line_is_a_network_error(serve):
    def closing(peer: Peer) -> None:
        peer.request()

    server, transport = serve(closing, answering(OK))
    with pytest.raises(NetworkError) as caught:
        get(transport)
    assert server.accepted == 1 and (caught.value.sent, caught.value.reused) == (True, False)


def test_a_refused_connection_was_not_sent_and_is_lasting():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    with pytest.raises(NetworkError) as caught:
        get(transport_to(f"http://127.0.0.1:{port}"))
    assert (caught.value.sent, caught.value.lasting) == (False, True)


# --- malformed answers ----------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [
    b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
    b"HTTP/1.1 2000 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\ncut short",
    b"HTTP/1.1 200 OK\r\nContent-Le",
])
def test_a_malformed_answer_is_a_network_error(serve, answer):
    server, transport = serve(answering(answer, then_close=True), answering(OK))
    with pytest.raises(NetworkError):
        get(transport)
    assert get(transport).data == b"{}" and server.accepted == 2  # the broken connection was dropped


def test_header_fields_are_found_whatever_their_case_and_repeated_ones_kept(serve):
    answer = (b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 3\r\nCONTENT-TYPE: application/json\r\n"
              b"Warning: 299 - \"first\"\r\nwarning: 299 - \"second\"\r\nX-Folded: a\r\n  b\r\n"
              b"Content-Length: 2\r\n\r\n{}")
    _, transport = serve(answering(answer))
    headers = get(transport).headers
    assert headers.get("Retry-After") == "3" and headers["retry-after"] == "3"
    assert headers.get("content-type") == "application/json" and "Content-Type" in headers
    assert headers.get_all("WARNING") == ['299 - "first"', '299 - "second"']
    assert headers.get("x-folded") == "a b" and headers.get("Missing") is None
    from kubectl_disagg.kube.client.retry import retry_after
    assert retry_after(429, headers, 0) == 3.0


# --- compression ----------------------------------------------------------------------------------


def gzipped(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data)


def test_a_gzip_answer_is_decompressed_and_the_connection_reused(serve):
    plain = b'{"items":[' + b",".join(b'{"n":%d}' % n for n in range(2000)) + b"]}"
    body = gzipped(plain)
    answer = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    server, transport = serve(answering(answer, OK))
    assert get(transport).data == plain and get(transport).data == b"{}" and server.accepted == 1


def test_a_gzip_stream_yields_lines_as_they_decompress(serve):
    import zlib

    packer = zlib.compressobj(wbits=31)
    first = packer.compress(b'{"a":1}\n') + packer.flush(zlib.Z_SYNC_FLUSH)
    rest = packer.compress(b'{"b":2}\n') + packer.flush()

    def watch(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
        for piece in (first[:5], first[5:], rest):
            peer.send(b"%x\r\n%s\r\n" % (len(piece), piece))
        peer.send(b"0\r\n\r\n")
        peer.request()

    _, transport = serve(watch)
    response = get(transport, "/api?watch=true", stream=True)
    assert list(response.lines()) == [b'{"a":1}\n', b'{"b":2}\n']
    response.close()


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nnotgz",
    b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\n{}",
])
def test_an_answer_that_does_not_decompress_is_a_network_error(serve, answer):
    _, transport = serve(answering(answer, then_close=True))
    with pytest.raises(NetworkError, match="gzip|not asked for"):
        get(transport)


# --- streams --------------------------------------------------------------------------------------


def test_a_stream_yields_each_line_once_whole_across_chunk_boundaries(serve):
    first_read = threading.Event()

    def watch(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"4\r\n{\"a\"\r\n7\r\n:1}\n{\"b\r\n")
        assert first_read.wait(TIMEOUT)  # the first line came before the rest was even sent
        peer.send(b"4\r\n\":2}\r\n3\r\n\n\n\n\r\n6\r\n{\"c\":3\r\n1\r\n}\r\n0\r\n\r\n")
        peer.request()

    _, transport = serve(watch)
    response = get(transport, "/api?watch=true", stream=True)
    lines = response.lines()
    assert next(lines) == b'{"a":1}\n'
    first_read.set()
    assert list(lines) == [b'{"b":2}\n', b'{"c":3}']
    response.close()


def test_a_stream_read_timeout_ends_the_wait(serve):
    def quiet(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"a\":1}\n\r\n")
        peer.request()  # then nothing until the client goes

    _, transport = serve(quiet)
    response = get(transport, "/api?watch=true", stream=True)
    lines = response.lines()
    assert next(lines) == b'{"a":1}\n'
    response.set_read_timeout(0.05)
    with pytest.raises(NetworkError, match="timed out"):
        next(lines)
    response.close()


def test_a_chunked_body_reads_on_after_a_timeout_between_chunks():
    """A read that times out waiting for the next chunk's size has already taken the previous
    chunk's CRLF: reading again must not take the size line for it."""
    from kubectl_disagg.kube.client.transport import _Body, _Reader

    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.settimeout(0.05)
        theirs.sendall(b'8\r\n{"a":1}\n\r\n')
        body = _Body(_Reader(ours), None, True)
        assert body.read_some() == b'{"a":1}\n'
        with pytest.raises(TimeoutError):
            body.read_some()
        theirs.sendall(b'8\r\n{"b":2}\n\r\n0\r\n\r\n')
        assert body.read_all() == b'{"b":2}\n' and body.done


def test_a_streamed_error_answer_gives_its_body(serve):
    _, transport = serve(answering(b"HTTP/1.1 410 Gone\r\nContent-Length: 7\r\n\r\n{\"a\":1}"))
    response = get(transport, stream=True)
    assert (response.status, response.data) == (410, b'{"a":1}')


# --- what is sent ---------------------------------------------------------------------------------


def test_the_request_head_as_sent(serve):
    server, transport = serve(answering(OK), prefix="/prefix",
                              impersonate=(("Impersonate-Group", "a"), ("Impersonate-Group", "b")))
    get(transport, "/api/v1/pods?x=1", method="PUT", body=b"{}")
    lines = server.heads[0].split("\r\n")
    assert lines[0] == "PUT /prefix/api/v1/pods?x=1 HTTP/1.1"
    assert lines[1] == f"Host: 127.0.0.1:{server.port}"
    fields = [tuple(line.split(": ", 1)) for line in lines[2:]]
    assert ("Authorization", "Bearer t0ken") in fields and ("Content-Length", "2") in fields
    assert [v for k, v in fields if k == "Impersonate-Group"] == ["a", "b"]
    assert ("Accept-Encoding", "gzip") in fields  # as client-go asks: large answers come compressed
    idle = transport._idle[0].sock
    assert idle.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)  # no Nagle delay on requests


@pytest.mark.parametrize(("server", "host"), [
    ("https://Example.test", "example.test"),
    ("https://example.test:6443/prefix", "example.test:6443"),
    ("http://example.test:80", "example.test"),
    ("https://[FD00::1]:6443", "[fd00::1]:6443"),
    ("https://[fd00::1]", "[fd00::1]"),
])
def test_the_host_field(server, host):
    assert transport_to(server)._host_field == host


def test_a_bad_port_is_a_readable_error():
    from kubectl_disagg.errors import UserError
    with pytest.raises(UserError, match="bad port"):
        transport_to("https://example.test:64k")


# --- proxies --------------------------------------------------------------------------------------


def test_a_proxy_tunnel_carries_the_requests():
    def proxy(peer: Peer) -> None:
        peer.request()  # CONNECT
        peer.send(b"HTTP/1.1 200 Connection established\r\nVia: test\r\n\r\n")
        peer.request()  # then, through the tunnel, the API request; this proxy answers it itself
        peer.send(OK)
        peer.request()

    server = Server(proxy)
    try:
        transport = transport_to("http://[fd00::1]:8080/p", proxy_url=f"http://us%40er:p%3Ass@127.0.0.1:{server.port}")
        assert get(transport).data == b"{}"
        transport.close()
    finally:
        server.close()
    connect, request = (head.split("\r\n") for head in server.heads)
    assert connect[0] == "CONNECT [fd00::1]:8080 HTTP/1.1" and "Host: [fd00::1]:8080" in connect
    assert f"Proxy-Authorization: Basic {base64.b64encode(b'us@er:p:ss').decode()}" in connect
    assert request[0] == "GET /p/api HTTP/1.1" and request[1] == "Host: [fd00::1]:8080"
    assert not any(line.startswith("Proxy-Authorization") for line in request)


def test_a_proxy_refusing_the_tunnel_is_a_network_error():
    server = Server(answering(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"))
    try:
        transport = transport_to("https://example.test:6443", proxy_url=f"http://127.0.0.1:{server.port}")
        with pytest.raises(NetworkError, match="Tunnel connection failed: 407 Proxy Authentication Required"):
            get(transport)
    finally:
        server.close()


def socks5_proxy(seen: list, reply: int = 0):
    """A script: a SOCKS5 proxy that takes user name and password, records what it was asked
    to connect to, then answers the request sent through it itself."""
    def script(peer: Peer) -> None:
        def take(count: int) -> bytes:
            data = b""
            while len(data) < count:
                data += peer.sock.recv(count - len(data))
            return data

        version, count = take(2)
        seen.append(("methods", list(take(count))))
        peer.send(b"\x05\x02")
        _, length = take(2)
        name = take(length)
        password = take(take(1)[0])
        seen.append(("user", name, password))
        peer.send(b"\x01\x00")
        _, command, _, kind = take(4)
        address = take(take(1)[0]) if kind == 3 else take(4 if kind == 1 else 16)
        seen.append(("connect", command, kind, address, int.from_bytes(take(2), "big")))
        peer.send(bytes([5, reply, 0, 1, 127, 0, 0, 1, 0, 80]))
        if reply == 0:
            peer.request()
            peer.send(OK)
            peer.request()
    return script


def test_a_socks5_proxy_carries_the_requests_and_resolves_the_name():
    seen: list = []
    server = Server(socks5_proxy(seen))
    try:
        transport = transport_to("https://api.example.test:6443", insecure=True,
                                 proxy_url=f"socks5://us%40er:pw@127.0.0.1:{server.port}")
        transport._tls = None  # this proxy answers the request itself, in the clear
        assert get(transport).data == b"{}"
        transport.close()
    finally:
        server.close()
    assert seen == [("methods", [2]), ("user", b"us@er", b"pw"), ("connect", 1, 3, b"api.example.test", 6443)]
    assert server.heads[0].startswith("GET /api HTTP/1.1\r\nHost: api.example.test:6443")


def test_a_socks5_proxy_refusing_the_connection_is_a_network_error():
    server = Server(socks5_proxy([], reply=5))
    try:
        transport = transport_to("http://10.0.0.1:8080", proxy_url=f"socks5://u:p@127.0.0.1:{server.port}")
        with pytest.raises(NetworkError, match="SOCKS5 proxy could not connect: connection refused"):
            get(transport)
    finally:
        server.close()


def test_an_https_proxy_carries_tls_to_the_api_server_inside_its_own_tls():
    import threading

    target = Server(answering(OK, OK), tls=server_tls())

    def https_proxy(peer: Peer) -> None:  # TLS to the proxy; then the bytes piped to the API server
        head, _ = peer.request()
        assert head.startswith(f"CONNECT 127.0.0.1:{target.port} HTTP/1.1")
        peer.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
        upstream = socket.create_connection(("127.0.0.1", target.port))

        def pipe(source, sink) -> None:
            try:
                while data := source.recv(65536):
                    sink.sendall(data)
            except OSError:
                pass
            for end in (source, sink):  # shutdown wakes the other direction's blocked recv
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        back = threading.Thread(target=pipe, args=(upstream, peer.sock), daemon=True)
        back.start()
        pipe(peer.sock, upstream)
        back.join(TIMEOUT)
        upstream.close()

    proxy = Server(https_proxy, tls=server_tls())
    try:
        transport = transport_to(f"https://127.0.0.1:{target.port}", insecure=True,
                                 proxy_url=f"https://127.0.0.1:{proxy.port}")
        assert get(transport).data == b"{}" and get(transport).data == b"{}"  # kept alive, inside both
        transport.close()
    finally:
        proxy.close()
        target.close()
    assert proxy.accepted == 1 and target.accepted == 1 and len(target.heads) == 2
    assert target.heads[0].startswith(f"GET /api HTTP/1.1\r\nHost: 127.0.0.1:{target.port}")


def test_an_https_proxys_certificate_is_verified_as_the_api_servers_is():
    proxy = Server(lambda peer: peer.request(), tls=server_tls())  # a certificate for server.unit-test
    try:
        transport = transport_to("https://server.unit-test:6443", ca_pem=CA.read_bytes(),
                                 proxy_url=f"https://127.0.0.1:{proxy.port}")
        with pytest.raises(NetworkError) as caught:
            get(transport)  # dialled the proxy as 127.0.0.1: not the name its certificate holds
    finally:
        proxy.close()
    assert isinstance(caught.value.__cause__, ssl.SSLCertVerificationError) and caught.value.lasting


@pytest.mark.parametrize(("proxy", "message"), [
    ("ftp://proxy.example", "the test: proxy ftp://proxy.example is not supported (an http://, https:// or "
                            "socks5:// proxy is)"),
    ("socks4://proxy.example", "the test: proxy socks4://proxy.example is not supported (an http://, https:// or "
                               "socks5:// proxy is)"),
])
def test_other_proxies_are_refused_clearly(proxy, message):
    with pytest.raises(UserError) as raised:
        transport_to("https://example.test:6443", proxy_url=proxy)
    assert raised.value.lines() == [message]


# --- TLS ------------------------------------------------------------------------------------------


def server_tls(client_ca: pathlib.Path | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(SERVER_CERT, SERVER_KEY)
    if client_ca is not None:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def test_tls_checks_the_tls_server_name_and_presents_the_client_certificate(serve):
    def who(peer: Peer) -> None:
        peer.request()
        subject = dict(field[0] for field in peer.sock.getpeercert()["subject"])
        body = subject["commonName"].encode()
        peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        peer.request()

    _, transport = serve(who, tls=server_tls(client_ca=CA), ca_pem=CA.read_bytes(),
                         tls_server_name="server.unit-test",
                         client_cert_pem=CA.read_bytes(), client_key_pem=CA_KEY.read_bytes())
    assert get(transport).data == b"kubectl-disagg unit-test CA"


def test_tls_refuses_a_certificate_for_another_name_unless_insecure(serve):
    server, transport = serve(lambda peer: peer.request(), tls=server_tls(), ca_pem=CA.read_bytes())
    with pytest.raises(NetworkError) as caught:
        get(transport)  # dialled 127.0.0.1; the certificate names server.unit-test
    assert isinstance(caught.value.__cause__, ssl.SSLCertVerificationError)
    _, insecure = serve(answering(OK), tls=server_tls(), insecure=True)
    assert get(insecure).data == b"{}"


def self_signed(directory: pathlib.Path, name: str) -> tuple[pathlib.Path, pathlib.Path]:
    """A client certificate of its own (openssl, as any machine with Python's ssl has it)."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "2", "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def test_an_exec_issued_client_certificate_is_rotated_when_it_expires(tmp_path, monkeypatch):
    import json

    from kubectl_disagg.kube.client import credentials as credentials_module
    from kubectl_disagg.kube.client.kubeconfig import ExecPlugin

    pairs = [self_signed(tmp_path, name) for name in ("first", "second")]
    (tmp_path / "trusted.pem").write_bytes(b"".join(cert.read_bytes() for cert, _ in pairs))
    for index, (cert, key) in enumerate(pairs, 1):
        status = {"clientCertificateData": cert.read_text(), "clientKeyData": key.read_text(),
                  "expirationTimestamp": "2999-01-01T00:00:00Z"}
        (tmp_path / f"credential-{index}.json").write_text(json.dumps(
            {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}))
    script = tmp_path / "issue"
    script.write_text(f"#!/bin/sh\necho run >> {tmp_path / 'runs'}\n"
                      f"cat {tmp_path}/credential-$(wc -l < {tmp_path / 'runs'} | tr -d ' ').json\n")
    script.chmod(0o755)

    def who(peer: Peer) -> None:  # answers with the common name of each connection's client certificate
        while peer.request()[0]:
            subject = dict(field[0] for field in peer.sock.getpeercert()["subject"])
            body = subject["commonName"].encode()
            peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    server = Server(who, who, tls=server_tls(client_ca=tmp_path / "trusted.pem"))
    connection = Connection(server=f"https://127.0.0.1:{server.port}", whose="the test", ca_pem=CA.read_bytes(),
                            tls_server_name="server.unit-test", kubeconfig="k", user_name="u",
                            exec_plugin=ExecPlugin(command=str(script), interactive_mode="Never"))
    transport = Transport(connection, Credentials(connection))
    try:
        assert get(transport).data == b"first" and get(transport).data == b"first"  # one connection, kept
        monkeypatch.setattr(credentials_module, "EXPIRY_MARGIN_SECONDS", 1e12)  # now it counts as expired
        assert get(transport).data == b"second"  # the plugin ran again; a new connection presents its certificate
        monkeypatch.setattr(credentials_module, "EXPIRY_MARGIN_SECONDS", 10.0)
        assert get(transport).data == b"second"
    finally:
        transport.close()
        server.close()
    assert server.accepted == 2 and (tmp_path / "runs").read_text().count("run") == 2


# --- through the command line ---------------------------------------------------------------------


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
