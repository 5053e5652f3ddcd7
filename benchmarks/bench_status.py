"""`rollout status -o json` against `kubectl get -o json`: whole processes, same objects, alternating.

Starts a local control plane (testenv.controlplane), deploys a set of 1 slice × 2 roles (4
objects) and one of 100 slices × 10 roles (2,000 objects) with `rollout step` passes (the LWS
status simulator playing the controller), then for each size runs, alternating one after the
other after a warm-up each:

- `kubectl-disagg rollout status -f FILE -o json` (the script beside this interpreter), and
- `kubectl get leaderworkersets,services -l disaggregatedset.x-k8s.io/name=NAME -o json`,
- `benchmarks/status_floor.py`, the floor: the interpreter importing click and PyYAML, TLS and
  the same two LISTs read raw, nothing else (the least a CPython process can do that parses its
  flags as every command must and fetches what status reads).

Wall time is measured around spawn and reap, peak RSS is the child's `ru_maxrss` (both by
`measure.py`, which keeps this process's memory out of the children's figures). Then
`benchmarks/status_phases.py` breaks one status process's time down by phase (median of
the runs). Budgets (issue 30, medians of the same run, `budgets.py`): status at most 60 ms above
the floor at 4 objects, at most 1.5× it at 2,000; `kubectl get` is reported beside them, not a
budget. Target (issue 14): peak RSS ≤ 150 MB at 2,000.

    python benchmarks/bench_status.py [--runs 9]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from benchmarks.budgets import above, print_budgets, times  # noqa: E402
from benchmarks.measure import measure  # noqa: E402
from benchmarks.sets import deploy, document  # noqa: E402
from kubectl_disagg.kube.executor import ClusterExecutor  # noqa: E402
from kubectl_disagg.core.delivery.sets import load_sets  # noqa: E402
from kubectl_disagg.manifests.reader import parse_stream  # noqa: E402
from testenv.controlplane import ControlPlane  # noqa: E402
from testenv.lws_simulator import LWSSimulator  # noqa: E402

SIZES = [("1 slice × 2 roles", 1, 2), ("100 slices × 10 roles", 100, 10)]
RSS_TARGET_MB = 150.0
BUDGET_ABOVE_FLOOR = {4: 0.060}  # objects → seconds above the floor, at most (medians)
BUDGET_TIMES_FLOOR = {2000: 1.5}  # objects → times the floor, at most (medians)
FLOOR_IS = "click and PyYAML imported, TLS, the two LISTs read raw"


def compare(cp: ControlPlane, simulator: LWSSimulator, workdir: Path, slices: int, roles: int, runs: int) -> dict:
    namespace = f"status-{slices}x{roles}"
    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    doc = document(namespace, slices, roles)
    path = workdir / f"{namespace}.yaml"
    path.write_text(yaml.safe_dump(doc))
    (ds,) = load_sets(parse_stream(path.read_text(), str(path)))
    with ClusterExecutor(str(cp.kubeconfig), "admin") as cluster:
        deploy(cluster, simulator, ds, namespace)
    ours = [str(Path(sys.executable).parent / "kubectl-disagg"), "rollout", "status", "-f", str(path), "-o", "json",
            f"--kubeconfig={cp.kubeconfig}", "--context=admin"]
    theirs = [str(cp.bin_dir / "kubectl"), f"--kubeconfig={cp.kubeconfig}", "--context=admin", "-n", namespace,
              "get", "leaderworkersets,services", "-l", "disaggregatedset.x-k8s.io/name=big", "-o", "json"]
    floor = [sys.executable, str(ROOT / "benchmarks" / "status_floor.py"), str(cp.kubeconfig), "admin", str(path)]
    phases_argv = [sys.executable, str(ROOT / "benchmarks" / "status_phases.py"), str(cp.kubeconfig), str(path)]
    for warm_up in (ours, theirs):
        measure(warm_up)
    _, floor_read = measure(floor, capture=True)  # warm-up, and what the floor read
    figures: dict[str, list[float]] = {"ours": [], "ours_rss": [], "kubectl": [], "kubectl_rss": [],
                                       "floor": [], "phases_wall": []}
    phases: list[dict] = []
    for _ in range(runs):
        for key, argv in (("ours", ours), ("floor", floor), ("kubectl", theirs)):
            run, _ = measure(argv)
            figures[key].append(run.seconds)
            figures.setdefault(f"{key}_rss", []).append(run.peak_kib * 1024 / 1e6)
        run, out = measure(phases_argv, capture=True)
        figures["phases_wall"].append(run.seconds)
        phases.append(json.loads(out))
    return {"objects": slices * roles * 2, "figures": figures, "phases": phases, "floor bytes": int(floor_read)}


def report(results: list[tuple[str, dict]], runs: int, load: tuple[float, float, float]) -> None:
    med = statistics.median
    print(f"\n#### `rollout status -o json` vs `kubectl get -o json` ({platform.machine()}, "
          f"{platform.python_implementation()} {platform.python_version()}, {runs} alternating runs each, "
          f"load average before {load[0]:.1f})\n")
    print("| set | objects | status median ms | min ms | peak RSS MB | floor median ms | min ms "
          "| status − floor ms | status ÷ floor | kubectl get median ms | min ms | peak RSS MB | status ÷ kubectl |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    budgets, targets = [], []
    for label, r in results:
        f = r["figures"]
        ours, floor, kubectl = med(f["ours"]), med(f["floor"]), med(f["kubectl"])
        print(f"| {label} | {r['objects']:,} | {ours * 1000:.0f} | {min(f['ours']) * 1000:.0f} | "
              f"{max(f['ours_rss']):.1f} | {floor * 1000:.0f} | {min(f['floor']) * 1000:.0f} | "
              f"{(ours - floor) * 1000:.0f} | {ours / floor:.2f}× | {kubectl * 1000:.0f} | "
              f"{min(f['kubectl']) * 1000:.0f} | {max(f['kubectl_rss']):.1f} | {ours / kubectl:.2f}× |")
        what = f"rollout status -f -o json, {r['objects']:,} objects"
        if r["objects"] in BUDGET_ABOVE_FLOOR:
            budgets.append(above(what, f["ours"], f["floor"], FLOOR_IS, BUDGET_ABOVE_FLOOR[r["objects"]]))
        if r["objects"] in BUDGET_TIMES_FLOOR:
            budgets.append(times(what, f["ours"], f["floor"], FLOOR_IS, BUDGET_TIMES_FLOOR[r["objects"]]))
        if r["objects"] >= 2000:
            rss = max(f["ours_rss"])
            targets.append(f"- {'PASS' if rss <= RSS_TARGET_MB else 'FAIL'}  {r['objects']:,} objects: status "
                           f"peak RSS ≤ {RSS_TARGET_MB:.0f} MB: {rss:.1f} MB")
    print_budgets(budgets)
    if targets:
        print("\nTargets (issue 14):\n")
        print("\n".join(targets))
    for label, r in results:
        print(f"\nPhases of one status process, {label} (`benchmarks/status_phases.py`, median of {runs}):\n")
        print("| phase | ms |")
        print("|---|--:|")
        names = [k for k in r["phases"][0] if k not in ("bytes read", "in-process total")]
        whole = med(r["figures"]["phases_wall"])
        inside = med([p["in-process total"] for p in r["phases"]])
        print(f"| interpreter start-up and process exit (whole wall − in-process) | {(whole - inside) * 1000:.0f} |")
        for name in names:
            print(f"| {name} | {med([p[name] for p in r['phases']]) * 1000:.0f} |")
        print(f"| **whole process** | **{whole * 1000:.0f}** |")
        print(f"\nBytes of the two LIST responses: {int(r['phases'][0]['bytes read']):,} (the floor read "
              f"{r['floor bytes']:,})")
    print("\nCommands (FILE is the set's manifest, NS its namespace):\n")
    print("- `kubectl-disagg rollout status -f FILE -o json --kubeconfig=… --context=admin`")
    print("- `kubectl --kubeconfig=… --context=admin -n NS get leaderworkersets,services "
          "-l disaggregatedset.x-k8s.io/name=big -o json`")
    print("- the floor: `python benchmarks/status_floor.py KUBECONFIG admin FILE` (click and PyYAML imported, "
          "TLS, the same two LISTs read raw, nothing else)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--only", choices=("small", "large"), help="measure one size only")
    args = parser.parse_args()
    load = os.getloadavg()
    results = []
    sizes = {"small": SIZES[:1], "large": SIZES[1:], None: SIZES}[args.only]
    with ControlPlane() as cp, cp.api_client() as api, tempfile.TemporaryDirectory() as tmp:
        simulator = LWSSimulator(api)
        for label, slices, roles in sizes:
            print(f"measuring {label}...", file=sys.stderr, flush=True)
            results.append((label, compare(cp, simulator, Path(tmp), slices, roles, args.runs)))
    report(results, args.runs, load)
    return 0


if __name__ == "__main__":
    sys.exit(main())
