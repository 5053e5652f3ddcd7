"""`rollout status -o json` against `kubectl get -o json`: whole processes, same objects, alternating.

Starts a local control plane (testenv.controlplane), deploys a set of 1 slice × 2 roles (4
objects) and one of 100 slices × 10 roles (2,000 objects) with `rollout step` passes (the LWS
status simulator playing the controller), then for each size runs, alternating one after the
other after a warm-up each:

- `kubectl-disagg rollout status -f FILE -o json` (the script beside this interpreter), and
- `kubectl get leaderworkersets,services -l disaggregatedset.x-k8s.io/name=NAME -o json`,
- `benchmarks/status_floor.py`: the same two LISTs from the least a CPython process can do
  (ssl, the cheapest YAML reader, nothing else), the yardstick for how much of the gap is the interpreter,
  and the same with click imported (`--click`): the least a process can do that parses its
  flags with the argument parser every command must use. When that floor alone is above the
  budget, no change to kubectl-disagg's own code can meet it: the report says so.

Wall time is measured around spawn and reap, peak RSS is the child's `ru_maxrss` (both by
`measure.py`, which keeps this process's memory out of the children's figures). Then
`benchmarks/status_phases.py` breaks one status process's time down by phase (median of
the runs). Targets (the budget of issue 25, which dropped the start-up tricks): status ≤ 1.6×
kubectl's median wall time at 4 objects and ≤ 0.5× at 2,000; peak RSS ≤ 150 MB at 2,000 (issue 14).

    python benchmarks/bench_status.py [--runs 9]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from benchmarks.measure import measure  # noqa: E402
from benchmarks.sets import deploy, document  # noqa: E402
from kubectl_disagg.kube.executor import ClusterExecutor  # noqa: E402
from kubectl_disagg.core.sets import load_documents  # noqa: E402
from kubectl_disagg.manifests.reader import parse_stream  # noqa: E402
from testenv.controlplane import ControlPlane  # noqa: E402
from testenv.lws_simulator import LWSSimulator  # noqa: E402

SIZES = [("1 slice × 2 roles", 1, 2), ("100 slices × 10 roles", 100, 10)]
RSS_TARGET_MB = 150.0
RATIO_TARGETS = {4: 1.6, 2000: 0.5}  # objects → status median ÷ kubectl get median, at most


def compare(cp: ControlPlane, simulator: LWSSimulator, workdir: Path, slices: int, roles: int, runs: int) -> dict:
    namespace = f"status-{slices}x{roles}"
    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    doc = document(namespace, slices, roles)
    path = workdir / f"{namespace}.yaml"
    path.write_text(yaml.safe_dump(doc))
    (ds,) = load_documents(parse_stream(path.read_text(), str(path))).sets
    with ClusterExecutor(str(cp.kubeconfig), "admin") as cluster:
        deploy(cluster, simulator, ds, namespace)
    ours = [str(Path(sys.executable).parent / "kubectl-disagg"), "rollout", "status", "-f", str(path), "-o", "json",
            f"--kubeconfig={cp.kubeconfig}", "--context=admin"]
    theirs = [str(cp.bin_dir / "kubectl"), f"--kubeconfig={cp.kubeconfig}", "--context=admin", "-n", namespace,
              "get", "leaderworkersets,services", "-l", "disaggregatedset.x-k8s.io/name=big", "-o", "json"]
    floor = [sys.executable, str(ROOT / "benchmarks" / "status_floor.py"), str(cp.kubeconfig), "admin", str(path)]
    floor_click = [*floor, "--click"]
    phases_argv = [sys.executable, str(ROOT / "benchmarks" / "status_phases.py"), str(cp.kubeconfig), str(path)]
    for warm_up in (ours, theirs, floor, floor_click):
        measure(warm_up)
    figures: dict[str, list[float]] = {"ours": [], "ours_rss": [], "kubectl": [], "kubectl_rss": [],
                                       "floor": [], "floor_click": [], "phases_wall": []}
    phases: list[dict] = []
    for _ in range(runs):
        for key, argv in (("ours", ours), ("kubectl", theirs), ("floor", floor), ("floor_click", floor_click)):
            run, _ = measure(argv)
            figures[key].append(run.seconds)
            figures.setdefault(f"{key}_rss", []).append(run.peak_kib * 1024 / 1e6)
        run, out = measure(phases_argv, capture=True)
        figures["phases_wall"].append(run.seconds)
        phases.append(json.loads(out))
    return {"objects": slices * roles * 2, "figures": figures, "phases": phases}


def report(results: list[tuple[str, dict]], runs: int, load: tuple[float, float, float]) -> None:
    med = statistics.median
    print(f"\n#### `rollout status -o json` vs `kubectl get -o json` ({platform.machine()}, "
          f"{platform.python_implementation()} {platform.python_version()}, {runs} alternating runs each, "
          f"load average before {load[0]:.1f})\n")
    print("| set | objects | status median ms | min ms | peak RSS MB | kubectl get median ms | min ms | "
          "peak RSS MB | ratio (median) | Python floor median ms | floor ÷ kubectl | floor with click ms "
          "| ÷ kubectl |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    verdicts = []
    for label, r in results:
        f = r["figures"]
        ratio = med(f["ours"]) / med(f["kubectl"])
        print(f"| {label} | {r['objects']:,} | {med(f['ours']) * 1000:.0f} | {min(f['ours']) * 1000:.0f} | "
              f"{max(f['ours_rss']):.1f} | {med(f['kubectl']) * 1000:.0f} | {min(f['kubectl']) * 1000:.0f} | "
              f"{max(f['kubectl_rss']):.1f} | {ratio:.2f}× | {med(f['floor']) * 1000:.0f} | "
              f"{med(f['floor']) / med(f['kubectl']):.2f}× | {med(f['floor_click']) * 1000:.0f} | "
              f"{med(f['floor_click']) / med(f['kubectl']):.2f}× |")
        target = RATIO_TARGETS.get(r["objects"])
        if target is not None:
            verdicts.append(f"- {'PASS' if ratio <= target else 'FAIL'}  {r['objects']:,} objects: status ≤ "
                            f"{target}× kubectl get (median): {ratio:.2f}× ({med(f['ours']) * 1000:.0f} vs "
                            f"{med(f['kubectl']) * 1000:.0f} ms)")
            verdicts.append(reachable(med(f["floor_click"]), med(f["kubectl"]), target,
                                      f"{r['objects']:,} objects: the floor with click"))
        if r["objects"] >= 2000:
            rss = max(f["ours_rss"])
            verdicts.append(f"- {'PASS' if rss <= RSS_TARGET_MB else 'FAIL'}  {r['objects']:,} objects: status "
                            f"peak RSS ≤ {RSS_TARGET_MB:.0f} MB: {rss:.1f} MB")
    print()
    print("\n".join(verdicts))
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
        print(f"\nBytes of the two LIST responses: {int(r['phases'][0]['bytes read']):,}")
    print("\nCommands (FILE is the set's manifest, NS its namespace):\n")
    print("- `kubectl-disagg rollout status -f FILE -o json --kubeconfig=… --context=admin`")
    print("- `kubectl --kubeconfig=… --context=admin -n NS get leaderworkersets,services "
          "-l disaggregatedset.x-k8s.io/name=big -o json`")
    print("- Python floor: `python benchmarks/status_floor.py KUBECONFIG admin FILE` (ssl, the YAML reader, the "
          "same two LISTs, nothing else); with click: the same with `--click`")


def reachable(floor: float, theirs: float, target: float, what: str) -> str:
    """Whether a ratio budget leaves any time for kubectl-disagg's own work above `floor`."""
    budget = target * theirs
    if floor >= budget:
        return (f"- OUT OF REACH  {what} takes {floor * 1000:.0f} ms = {floor / theirs:.2f}× (budget "
                f"{target}× = {budget * 1000:.0f} ms): no change to kubectl-disagg's own code can meet it")
    return (f"- reachable  {what} takes {floor * 1000:.0f} ms = {floor / theirs:.2f}×: the budget of "
            f"{target}× leaves {(budget - floor) * 1000:.0f} ms for kubectl-disagg's own work")


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
