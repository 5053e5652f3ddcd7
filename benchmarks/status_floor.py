"""The least a CPython process can do to answer what `rollout status -f FILE -o json` answers:
a yardstick for start-up, not a tool.

    python benchmarks/status_floor.py KUBECONFIG CONTEXT FILE [--click]

It reads the set's YAML and the kubeconfig with the product's reader (`reader.load_plain`, the
first document only), opens one TLS connection (TCP_NODELAY: without it the first
request waits 40 ms on a delayed ACK), sends the same two LISTs over HTTP/1.1 and prints both
answers as JSON. No validation, no defaults, no revision, no status: whatever `rollout status`
takes beyond this process's wall time is the price of the product itself; what this process
takes is the price of Python, ssl and reading the YAML. Only what the local control plane's
kubeconfig uses is handled (a CA file and a token).

With `--click` it first imports click, the one argument parser every kubectl-disagg command
goes through (issue 25): the least a process can do that parses its flags as the product must.
"""

import json
import socket
import ssl
import sys

from kubectl_disagg.manifests.reader import load_plain  # the installed package, as the command runs it


def _yaml(path: str) -> object:
    """The first document of a YAML file."""
    with open(path, "rb") as f:
        return load_plain(f.read())


def _named(entries: list, name: str) -> dict:
    return next(e for e in entries if e["name"] == name)


def _get(stream, sock: socket.socket, host: str, path: str, token: str) -> dict:
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                 f"Accept: application/json\r\n\r\n".encode())
    stream.readline()  # status line
    length, chunked = 0, False
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.lower() == "content-length":
            length = int(value)
        elif name.lower() == "transfer-encoding":
            chunked = "chunked" in value.lower()
    if not chunked:
        return json.loads(stream.read(length))
    body = bytearray()
    while size := int(stream.readline().split(b";")[0], 16):
        body += stream.read(size)
        stream.readline()
    while stream.readline() not in (b"\r\n", b""):  # trailers
        pass
    return json.loads(body)


def main() -> None:
    kubeconfig_path, context_name, filename = sys.argv[1:4]
    if "--click" in sys.argv[4:]:
        import click  # noqa: F401  the parser's import is the price measured here
    document = _yaml(filename)
    kubeconfig = _yaml(kubeconfig_path)
    context = _named(kubeconfig["contexts"], context_name)["context"]
    cluster = _named(kubeconfig["clusters"], context["cluster"])["cluster"]
    user = _named(kubeconfig["users"], context["user"])["user"]
    tls = ssl.create_default_context(cafile=cluster["certificate-authority"])
    host, _, port = cluster["server"].removeprefix("https://").partition(":")
    raw = socket.create_connection((host, int(port or 443)))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with tls.wrap_socket(raw, server_hostname=host) as sock, sock.makefile("rb") as stream:
        namespace = document["metadata"].get("namespace") or context.get("namespace") or "default"
        selector = f"labelSelector=disaggregatedset.x-k8s.io/name={document['metadata']['name']}"
        answers = [_get(stream, sock, host, f"{prefix}/namespaces/{namespace}/{plural}?{selector}", user["token"])
                   for prefix, plural in (("/apis/leaderworkerset.x-k8s.io/v1", "leaderworkersets"),
                                          ("/api/v1", "services"))]
    sys.stdout.write(json.dumps(answers, indent=2) + "\n")


if __name__ == "__main__":
    main()
