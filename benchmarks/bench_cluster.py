"""API requests and client time of `rollout step` and of a status read, against a real API server.

Starts a local control plane (testenv.controlplane: kube-apiserver + etcd with
the upstream CRDs), then for a small set (1 slice x 2 roles) and a large one (100 slices x 10
roles = 1,000 LeaderWorkerSets + 1,000 Services):

1. deploys it with `rollout step` passes (render + server-side apply), the LWS simulator
   settling status between passes, until steady;
2. counts the API requests (request_count.RequestCounter, a wrapper around the session's transport) of one
   `rollout step` in steady state;
3. changes the pod template and counts the requests of the one `rollout step` that starts the
   rollout, checking that its writes are exactly the objects that change;
4. counts the requests of one status read (snapshot) and times its client side: snapshot
   (two LISTs, JSON decoding included), reconcile, derive_status and to_document.

Reads must not grow with the number of objects: two LISTs, whatever the size. The status read
target is < 1 s on the client side.

    python benchmarks/bench_cluster.py [--runs 5]

Figures are printed as Markdown tables for BENCHMARKS.md. Exit status 0 even when a target
is missed (misses say FAIL); 2 when a check fails (a count that is not what it must be).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from kubectl_disagg.kube.executor import ClusterExecutor  # noqa: E402
from kubectl_disagg.kube.session import OCCUPANT_GETS_MOST  # noqa: E402
from kubectl_disagg.core.delivery.sets import load_sets  # noqa: E402
from kubectl_disagg.manifests.reader import parse_stream  # noqa: E402
from kubectl_disagg.core.api.model import DisaggregatedSet  # noqa: E402
from kubectl_disagg.core.controller.reconcile import Annotate, Create, reconcile  # noqa: E402
from kubectl_disagg.core.delivery.status import derive_status, to_document  # noqa: E402
from benchmarks import sets  # noqa: E402
from benchmarks.request_count import RequestCounter  # noqa: E402
from benchmarks.sets import deploy, one_step  # noqa: E402
from testenv.controlplane import ControlPlane  # noqa: E402
from testenv.lws_simulator import LWSSimulator  # noqa: E402

SIZES = [("1 slice × 2 roles", 1, 2), ("100 slices × 10 roles", 100, 10)]
STATUS_READ_TARGET = 1.0  # seconds, client side


class CheckFailed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def make_set(namespace: str, slices: int, roles: int, image: str) -> DisaggregatedSet:
    document = sets.document(namespace, slices, roles, image, name="bench")
    (ds,) = load_sets(parse_stream(yaml.safe_dump(document), "bench.yaml"))
    return ds


def requests_of(counter: RequestCounter, action) -> tuple[Counter, float, object]:
    counter.clear()
    started = time.perf_counter()
    result = action()
    return Counter(counter.requests), time.perf_counter() - started, result


@dataclass
class Figures:
    objects: int
    deploy_seconds: float
    steady: Counter
    rollout_start: Counter
    rollout_start_seconds: float
    changed_objects: int
    status_requests: Counter
    status_seconds: list[float]  # whole client side: snapshot + reconcile + status
    status_snapshot_seconds: list[float]
    status_pure_seconds: list[float]  # reconcile + derive_status + to_document only


def measure(cp: ControlPlane, simulator: LWSSimulator, slices: int, roles: int, runs: int) -> Figures:
    namespace = f"bench-{slices}x{roles}"
    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    cluster = ClusterExecutor(str(cp.kubeconfig), "admin")
    counter = RequestCounter.wrap(cluster.transport)
    old = make_set(namespace, slices, roles, "img:1")
    deploy_seconds = deploy(cluster, simulator, old, namespace)

    steady, _, result = requests_of(counter, lambda: one_step(cluster, old, namespace))
    check(result.complete and not result.done, "steady state expected")

    new = make_set(namespace, slices, roles, "img:2")
    before = {o.name: o.resource_version for o in cluster.snapshot(new.name, namespace).lws}
    rollout_start, seconds, result = requests_of(counter, lambda: one_step(cluster, new, namespace))
    after = {o.name: o.resource_version for o in cluster.snapshot(new.name, namespace).lws}
    changed = sum(1 for name, version in after.items() if before.get(name) != version)
    # Annotate every old LWS and apply every new one; the new revision's Services come with its LWS.
    expected = {("patch", "leaderworkersets"): slices * roles * 2, ("patch", "services"): slices * roles}
    writes = dict(split(rollout_start)[1])
    check(writes == expected, f"template change: writes {writes}, expected {expected}")
    reads = sum(split(rollout_start)[0].values())  # 2 LISTs, and the names it would create
    check(reads <= 2 + OCCUPANT_GETS_MOST, f"template change: {reads} reads grow with the object count")
    lws_writes = writes[("patch", "leaderworkersets")]
    check(changed == lws_writes, f"{changed} LeaderWorkerSets changed but {lws_writes} LWS writes")
    created_lws = sum(isinstance(a, Create) and a.kind == "LeaderWorkerSet" for a in result.done)
    check(sum(isinstance(a, Annotate) for a in result.done) == created_lws == slices * roles,
          "one annotate per old LWS and one create per new LWS")

    simulator.sync(namespace)  # the new revision's LWS exist at 0: a rollout in progress to read
    status_requests = Counter()
    status_seconds, snapshot_seconds, pure_seconds = [], [], []
    for _ in range(runs):
        counter.clear()
        started = time.perf_counter()
        snapshot = cluster.snapshot(new.name, namespace)
        read = time.perf_counter()
        document = to_document(derive_status(new, snapshot, reconcile(new, snapshot)), _now())
        done = time.perf_counter()
        check(len(document["slices"]) == slices, "one status entry per slice")
        status_requests = Counter(counter.requests)
        status_seconds.append(done - started)
        snapshot_seconds.append(read - started)
        pure_seconds.append(done - read)
    cluster.close()
    return Figures(slices * roles * 2, deploy_seconds, steady, rollout_start, seconds, changed,
                   status_requests, status_seconds, snapshot_seconds, pure_seconds)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe(counter: Counter) -> str:
    total = sum(counter.values())
    parts = ", ".join(f"{n} {verb} {resource}" for (verb, resource), n in sorted(counter.items()))
    return f"**{total}** ({parts})" if parts else "**0**"


def split(counter: Counter) -> tuple[Counter, Counter, Counter]:
    reads = Counter({k: v for k, v in counter.items() if k[0] in ("list", "get", "watch") and k[1] != "leases"})
    lease = Counter({k: v for k, v in counter.items() if k[1] == "leases"})
    writes = counter - reads - lease
    return reads, writes, lease


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


def report(results: list[tuple[str, Figures]], runs: int) -> None:
    labels = [label for label, _ in results]
    figures = [f for _, f in results]
    print(f"\n#### `rollout step` and status reads against kube-apiserver ({platform.machine()}, "
          f"{platform.python_implementation()} {platform.python_version()})\n")
    print("| | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    rows = [("objects (LWS + Services)", lambda f: f"{f.objects:,}")]
    for name, attr in [("`rollout step`, steady state", "steady"),
                       ("`rollout step`, template change starts", "rollout_start"),
                       ("status read (snapshot)", "status_requests")]:
        rows += [
            (f"{name}: reads", lambda f, a=attr: describe(split(getattr(f, a))[0])),
            (f"{name}: writes", lambda f, a=attr: describe(split(getattr(f, a))[1])),
            (f"{name}: lease", lambda f, a=attr: describe(split(getattr(f, a))[2])),
        ]
    rows += [
        ("objects changed by the template-change step", lambda f: f"{f.changed_objects:,}"),
        ("template-change step, wall time", lambda f: f"{f.rollout_start_seconds:.1f} s"),
        ("deploy from nothing (all passes), wall time", lambda f: f"{f.deploy_seconds:.1f} s"),
        (f"status read, client side, median of {runs}", lambda f: ms(f.status_seconds) + (
            "" if statistics.median(f.status_seconds) < STATUS_READ_TARGET else " **FAIL** (target < 1 s)")),
        ("… of which snapshot (2 LISTs + JSON decoding)", lambda f: ms(f.status_snapshot_seconds)),
        ("… of which reconcile + derive_status + to_document", lambda f: ms(f.status_pure_seconds)),
    ]
    for label, cell in rows:
        print(f"| {label} | " + " | ".join(cell(f) for f in figures) + " |")
    print("\nReads per step or status read are 2 LISTs whatever the object count; a step that creates "
          f"objects also reads the names it would create (a GET each up to {OCCUPANT_GETS_MOST} names, else one "
          "LIST per kind of the namespace). A step's writes are exactly the objects that change, plus the Lease "
          "(create, delete).")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="status reads to time per size (default 5)")
    args = parser.parse_args()
    results = []
    with ControlPlane() as cp, cp.api_client() as api:
        simulator = LWSSimulator(api)
        for label, slices, roles in SIZES:
            print(f"measuring {label}...", file=sys.stderr, flush=True)
            try:
                results.append((label, measure(cp, simulator, slices, roles, args.runs)))
            except CheckFailed as err:
                print(f"CHECK FAILED ({label}): {err}", file=sys.stderr)
                return 2
    report(results, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
