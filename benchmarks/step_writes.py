"""`kubectl-disagg` with every write to the set's objects recorded: what `write_floor.py` replays.

    python benchmarks/step_writes.py WRITES rollout step ...

Runs the installed CLI's `main` in this process with the REST transport's `request` wrapped:
each request that is not a GET and goes to leaderworkersets or services (not the Lease, not
access reviews or events) is appended to WRITES as one JSON line, in the order answered:
`{"method", "target" (path and query), "headers", "body" (latin-1 text), "sent", "answered"}`
(the last two: seconds since this process started, so a reader can tell the time before the
first write from the time the writes took). The writes do happen:
record on a set deployed for the purpose. The product carries no recording of its own.
"""

from __future__ import annotations

import functools
import importlib
import json
import sys
import threading
import time

T0 = time.perf_counter()

# Where the transport lives; the first that imports is wrapped.
TRANSPORTS = ("kubectl_disagg.kube.client.transport", "kubectl_disagg.kube.transport")
OBJECTS = ("/leaderworkersets", "/services")


def main() -> int:
    writes_path, argv = sys.argv[1], sys.argv[2:]
    out = open(writes_path, "w", buffering=1)
    lock = threading.Lock()
    for name in TRANSPORTS:
        try:
            transport = importlib.import_module(name).Transport
            break
        except ImportError:
            continue
    else:
        sys.exit(f"step_writes: no transport among {', '.join(TRANSPORTS)}")
    send = transport.request

    @functools.wraps(send)
    def recorded(self, method, url, body=None, headers=None, **kwargs):
        target = url[len(self.base):] if url.startswith(self.base) else url
        if method == "GET" or not any(kind in target.split("?")[0] for kind in OBJECTS):
            return send(self, method, url, body, headers, **kwargs)
        sent = time.perf_counter() - T0
        try:
            return send(self, method, url, body, headers, **kwargs)
        finally:
            line = json.dumps({"method": method, "target": target, "headers": dict(headers or {}),
                               "body": (body or b"").decode("latin-1"), "sent": sent,
                               "answered": time.perf_counter() - T0})
            with lock:
                out.write(line + "\n")

    transport.request = recorded
    from kubectl_disagg.cli import main as cli

    sys.argv = ["kubectl-disagg", *argv]
    return cli()


if __name__ == "__main__":
    sys.exit(main())
