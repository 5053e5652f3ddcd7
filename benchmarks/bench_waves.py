"""A paced rollout (RolloutPolicy, design §9) at 100 slices × 10 roles, beside today's unpaced one.

Starts a local control plane; deploys the set (img:1) to steady state in two fresh namespaces;
then rolls it to img:2 in each, pass by pass, the LWS simulator settling status in between:

- unpaced: no policy, every slice starts in the first pass (the controller's shape);
- paced: waves of 1 slice, 25 %, 50 %, 75 % and 100 % (no gates, so it runs through), at most
  `maxSlicesInFlight: 10` slices in flight; each pass also reads and writes the set's
  RolloutState (the position).

Reported: per wave the passes and their time (wall, in process: the library calls `rollout step`
makes, not a process start each), the slowest pass of each rollout, and the decision alone
(`core.delivery.waves.admit` on the 100-slice snapshot, pure). Budget (issue 32): no paced pass slower
than the slowest unpaced pass over the same slices.

    python benchmarks/bench_waves.py [--slices 100] [--in-flight 10]
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.sets import deploy, document, with_image  # noqa: E402
from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave  # noqa: E402
from kubectl_disagg.core.delivery.sets import load_sets  # noqa: E402
from kubectl_disagg.core.delivery.waves import admit  # noqa: E402
from kubectl_disagg.kube.executor import ClusterExecutor  # noqa: E402
from kubectl_disagg.manifests.reader import parse_stream  # noqa: E402
from kubectl_disagg.manifests.writer import to_yaml  # noqa: E402
from kubectl_disagg.rollout.progressive import Progressive  # noqa: E402
from kubectl_disagg.rollout.stepper import run_pass  # noqa: E402
from kubectl_disagg.rollout.write_scheduler import DEFAULT_MAX_IN_FLIGHT  # noqa: E402
from testenv.controlplane import ControlPlane  # noqa: E402
from testenv.lws_simulator import LWSSimulator  # noqa: E402

ROLES = 10


def load(doc: dict):
    (ds,) = load_sets(parse_stream(to_yaml(doc), "bench.yaml"))
    return ds


def roll(cluster, simulator, ds, namespace: str, progressive: Progressive | None, limit: int = 400):
    """Passes until complete: [(seconds, wave or None, slices written)]."""
    passes = []
    for _ in range(limit):
        with cluster.lease(ds.name, namespace) as lease:
            started = time.perf_counter()
            step = run_pass(cluster, ds, namespace, lease, max_in_flight=DEFAULT_MAX_IN_FLIGHT,
                            **({} if progressive is None else {"admit": progressive.admit}))
            seconds = time.perf_counter() - started
        wave = None if progressive is None else progressive.passage.decision.wave
        passes.append((seconds, wave, len({a.slice for a in step.done})))
        if step.complete:
            return passes
        simulator.sync(namespace)
    raise RuntimeError("the rollout did not complete")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=int, default=100)
    parser.add_argument("--in-flight", type=int, default=10)
    args = parser.parse_args()
    load_before = os.getloadavg()
    policy = RolloutPolicy("big", None, "big", (Wave(1), Wave("25%"), Wave("50%"), Wave("75%")), args.in_flight)
    results = {}
    with ControlPlane() as cp, cp.api_client() as api:
        simulator = LWSSimulator(api)
        with ClusterExecutor(str(cp.kubeconfig), "admin") as cluster:
            for label in ("unpaced", "paced"):
                namespace = f"waves-{label}"
                cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
                old = document(namespace, args.slices, ROLES)
                print(f"{label}: deploying {args.slices} x {ROLES}...", file=sys.stderr, flush=True)
                deploy(cluster, simulator, load(old), namespace, max_in_flight=DEFAULT_MAX_IN_FLIGHT)
                new = load(with_image(old, "img:2"))
                if label == "paced":
                    new = replace(new, policy=policy)
                    snapshot = cluster.snapshot(new.name, namespace)
                    now = datetime.datetime.now(datetime.timezone.utc)
                    started = time.perf_counter()
                    for _ in range(20):
                        admit(new, snapshot, None, now)
                    results["decision"] = (time.perf_counter() - started) / 20
                print(f"{label}: rolling...", file=sys.stderr, flush=True)
                started = time.perf_counter()
                results[label] = roll(cluster, simulator, new, namespace,
                                      Progressive(cluster, namespace) if label == "paced" else None)
                results[f"{label} total"] = time.perf_counter() - started
    unpaced, paced = results["unpaced"], results["paced"]
    print(f"\n#### A paced rollout at {args.slices} slices × {ROLES} roles, maxSlicesInFlight {args.in_flight} "
          f"(load average before {load_before[0]:.1f})\n")
    print("| rollout | wave | passes | slices written | pass s (median) | slowest pass s | wave s |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    times = [s for s, _, _ in unpaced]
    print(f"| unpaced (today) | all | {len(unpaced)} | {args.slices} | {statistics.median(times):.2f} | "
          f"{max(times):.2f} | {sum(times):.1f} |")
    for wave in sorted({w for _, w, _ in paced}):
        mine = [(s, n) for s, w, n in paced if w == wave]
        seconds = [s for s, _ in mine]
        print(f"| paced | {wave + 1} | {len(mine)} | {max(n for _, n in mine)} at most | "
              f"{statistics.median(seconds):.2f} | {max(seconds):.2f} | {sum(seconds):.1f} |")
    print(f"\n- rollout wall time with status settling: unpaced {results['unpaced total']:.0f} s, paced "
          f"{results['paced total']:.0f} s")
    print(f"- the decision alone (`core.delivery.waves.admit`, {args.slices} slices): {results['decision'] * 1000:.1f} ms")
    slowest_paced, slowest_unpaced = max(s for s, _, _ in paced), max(times)
    print(f"- {'PASS' if slowest_paced <= slowest_unpaced else 'FAIL'}  no paced pass slower than today's pass "
          f"over the same slices: slowest paced {slowest_paced:.2f} s vs slowest unpaced {slowest_unpaced:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
