"""The floor of `rollout status -f FILE -o json`: the least a CPython process can do to fetch
what the command reads. A yardstick for the budgets (issue 30), not a tool.

    python benchmarks/status_floor.py KUBECONFIG CONTEXT FILE

It imports click and PyYAML (the argument parser every kubectl-disagg command goes through and
the library its YAML reader is built on), reads the set and the kubeconfig with PyYAML's
LibYAML loader (the first document only), opens one TLS connection (TCP_NODELAY: without it the
first request waits 40 ms on a delayed ACK), sends the same two LISTs the command sends over
HTTP/1.1 (gzip accepted, as the command's transport asks) and reads both answers whole,
decompressed, raw: no JSON decoding, no validation, no revision, no
status, no output but the byte count. Only what the local control plane's kubeconfig uses is
handled (a CA file and a token); `write_floor.py` connects the same way (`connect`).
"""

import socket
import ssl
import sys
import zlib

import click  # noqa: F401  the argument parser's import is part of the floor
import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: str) -> object:
    """The first document of a YAML file."""
    with open(path, "rb") as f:
        return next(yaml.load_all(f, Loader=LOADER))


def _named(entries: list, name: str) -> dict:
    return next(e for e in entries if e["name"] == name)


def connect(kubeconfig_path: str, context_name: str) -> tuple:
    """(socket factory, host, token, the context's namespace) for the kubeconfig's context."""
    kubeconfig = read_yaml(kubeconfig_path)
    context = _named(kubeconfig["contexts"], context_name)["context"]
    cluster = _named(kubeconfig["clusters"], context["cluster"])["cluster"]
    user = _named(kubeconfig["users"], context["user"])["user"]
    tls = ssl.create_default_context(cafile=cluster["certificate-authority"])
    host, _, port = cluster["server"].removeprefix("https://").partition(":")

    def open_socket() -> ssl.SSLSocket:
        raw = socket.create_connection((host, int(port or 443)))
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return tls.wrap_socket(raw, server_hostname=host)

    return open_socket, host, user["token"], context.get("namespace")


def read_answer(stream) -> tuple[int, bytes]:
    """(status, body) of one HTTP/1.1 answer, Content-Length or chunked, gzip undone."""
    status = int(stream.readline().split()[1])
    length, chunked, gzipped = 0, False, False
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.lower() == "content-length":
            length = int(value)
        elif name.lower() == "transfer-encoding":
            chunked = "chunked" in value.lower()
        elif name.lower() == "content-encoding":
            gzipped = value.strip().lower() == "gzip"
    if not chunked:
        body = stream.read(length)
        return status, zlib.decompress(body, wbits=31) if gzipped else body
    body = bytearray()
    while size := int(stream.readline().split(b";")[0], 16):
        body += stream.read(size)
        stream.readline()
    while stream.readline() not in (b"\r\n", b""):  # trailers
        pass
    return status, zlib.decompress(body, wbits=31) if gzipped else bytes(body)


def main() -> None:
    kubeconfig_path, context_name, filename = sys.argv[1:4]
    document = read_yaml(filename)
    open_socket, host, token, context_namespace = connect(kubeconfig_path, context_name)
    namespace = document["metadata"].get("namespace") or context_namespace or "default"
    selector = f"labelSelector=disaggregatedset.x-k8s.io%2Fname%3D{document['metadata']['name']}"
    read = 0
    with open_socket() as sock, sock.makefile("rb") as stream:
        for prefix, plural in (("/apis/leaderworkerset.x-k8s.io/v1", "leaderworkersets"), ("/api/v1", "services")):
            sock.sendall(f"GET {prefix}/namespaces/{namespace}/{plural}?{selector} HTTP/1.1\r\nHost: {host}\r\n"
                         f"Authorization: Bearer {token}\r\nAccept: application/json\r\nAccept-Encoding: gzip\r\n\r\n"
                         .encode())
            status, body = read_answer(stream)
            if status != 200:
                sys.exit(f"status_floor: LIST {plural}: HTTP {status}: {body[:200]!r}")
            read += len(body)
    sys.stdout.write(f"{read}\n")


if __name__ == "__main__":
    main()
