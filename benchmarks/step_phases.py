"""`kubectl-disagg` with a timeline of what a stepper does: for bench_reaction.py's breakdown.

    python benchmarks/step_phases.py TRACE rollout step ...

Runs the installed CLI's `main` in this process with the stepper's steps wrapped: each call of
the wrapped functions appends `{"what": ..., "start": ..., "end": ...}` (time.monotonic(), which
every process on the machine shares) to TRACE as one JSON line; a watch also when it starts
(`"end": null`), so a reader can tell that the stepper is waiting. The product carries no tracing of
its own; what is wrapped is named in WRAPPED.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time

WRAPPED = [
    # (module, attribute path, label)
    ("kubectl_disagg.kube.session", "Session.wait_for_change", "watch"),
    ("kubectl_disagg.kube.session", "Session.snapshot", "snapshot"),
    ("kubectl_disagg.kube.client.rest", "RestClient.list", "list"),
    ("kubectl_disagg.kube.client.rest", "api_object", "decode"),
    ("kubectl_disagg.rollout.stepper", "reconcile_for_step", "reconcile"),
    ("kubectl_disagg.kube.executor", "ClusterExecutor.authorize", "authorize"),
    ("kubectl_disagg.kube.client.rest", "RestClient.allowed", "access review"),
    ("kubectl_disagg.kube.lease", "Lease.renew", "lease renewal"),
    ("kubectl_disagg.kube.executor", "ClusterExecutor.execute", "write"),
]


def main() -> int:
    trace_path, argv = sys.argv[1], sys.argv[2:]
    out = open(trace_path, "a", buffering=1)
    lock = threading.Lock()

    def traced(function, label):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            start = time.monotonic()
            if label == "watch":  # its start too: the stepper is idle from here (bench_reaction waits for that)
                with lock:
                    out.write(json.dumps({"what": label, "start": start, "end": None}) + "\n")
            try:
                return function(*args, **kwargs)
            finally:
                line = json.dumps({"what": label, "start": start, "end": time.monotonic()})
                with lock:
                    out.write(line + "\n")
        return wrapper

    import importlib

    for module_name, path, label in WRAPPED:
        owner = importlib.import_module(module_name)
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        if hasattr(owner, name):  # a renamed function just goes untimed
            setattr(owner, name, traced(getattr(owner, name), label))

    from kubectl_disagg.cli import main as cli

    sys.argv = ["kubectl-disagg", *argv]
    return cli()


if __name__ == "__main__":
    sys.exit(main())
