"""The template-change step at 2,000 objects against `kubectl apply --server-side` of the same objects.

Starts a local control plane, and per run: deploys a set of 100 slices × 10 roles (img:1) to
steady state in a fresh namespace (`rollout step` passes, the LWS simulator settling status),
then times, as whole processes:

- `kubectl-disagg rollout step -f NEW` where NEW changes the image: the pass that starts the
  rollout, 1,000 annotations + 1,000 creates (server-side apply), at `--max-in-flight 1` (one
  write at a time, as before concurrent writes) and at the default;
- `kubectl apply --server-side -f OBJECTS` of the same 1,000 LWS and 1,000 Services (NEW
  rendered) into an empty namespace;
- `kubectl-disagg rollout step -f NEW --dry-run=server` just before the concurrent step: the
  same 2,000 writes sent with dryRun=All (nothing stored, so the step after it is unchanged).

Each rollout start needs a freshly deployed set, so runs are few (`--runs`, default 2); the
three commands alternate within each run. Target (the budget of issue 25): step ≤ 0.8× kubectl
apply at 2,000 objects (a smaller --slices measures the same ratio at fewer objects).

    python benchmarks/bench_step.py [--runs 2] [--slices 100]
"""

from __future__ import annotations

import argparse
import os
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
from kubectl_disagg.rollout.write_scheduler import DEFAULT_MAX_IN_FLIGHT  # noqa: E402
from testenv.controlplane import ControlPlane  # noqa: E402
from testenv.lws_simulator import LWSSimulator  # noqa: E402

ROLES = 10
TARGET_RATIO = 0.8  # step median ÷ kubectl apply --server-side median, at most


def set_file(workdir: Path, namespace: str, slices: int, image: str) -> Path:
    path = workdir / f"{namespace}-{image.replace(':', '-')}.yaml"
    path.write_text(yaml.safe_dump(document(namespace, slices, ROLES, image)))
    return path


def deployed(cp: ControlPlane, simulator: LWSSimulator, workdir: Path, namespace: str, slices: int) -> Path:
    """A fresh namespace with the set deployed at img:1; the file of its img:2 version."""
    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    old = set_file(workdir, namespace, slices, "img:1")
    (ds,) = load_documents(parse_stream(old.read_text(), str(old))).sets
    with ClusterExecutor(str(cp.kubeconfig), "admin") as cluster:
        deploy(cluster, simulator, ds, namespace, max_in_flight=DEFAULT_MAX_IN_FLIGHT)
    return set_file(workdir, namespace, slices, "img:2")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--slices", type=int, default=100)
    args = parser.parse_args()
    load = os.getloadavg()
    ours = str(Path(sys.executable).parent / "kubectl-disagg")
    times: dict[str, list[float]] = {"one at a time": [], "concurrent": [], "kubectl": [], "server dry run": []}
    cpu: dict[str, list[float]] = {k: [] for k in times}  # the command's own user + system time
    rss: list[float] = []
    with ControlPlane() as cp, cp.api_client() as api, tempfile.TemporaryDirectory() as tmp:
        simulator = LWSSimulator(api)
        workdir = Path(tmp)
        kubectl = [str(cp.bin_dir / "kubectl"), f"--kubeconfig={cp.kubeconfig}", "--context=admin"]
        for run in range(args.runs):
            print(f"run {run + 1}: deploying...", file=sys.stderr, flush=True)
            for label, flag in (("one at a time", "1"), ("concurrent", str(DEFAULT_MAX_IN_FLIGHT))):
                new = deployed(cp, simulator, workdir, f"step-{run}-{flag}", args.slices)
                if label == "concurrent":
                    dry_run, _ = measure([ours, "rollout", "step", "-f", str(new), "--dry-run=server",
                                          f"--kubeconfig={cp.kubeconfig}", "--context=admin", "-o", "json"])
                    times["server dry run"].append(dry_run.seconds)
                    cpu["server dry run"].append(dry_run.cpu_seconds)
                step, _ = measure([ours, "rollout", "step", "-f", str(new), "--max-in-flight", flag,
                                   f"--kubeconfig={cp.kubeconfig}", "--context=admin", "-o", "json"])
                times[label].append(step.seconds)
                cpu[label].append(step.cpu_seconds)
                if label == "concurrent":
                    rss.append(step.peak_kib * 1024 / 1e6)
                namespace = f"apply-{run}-{flag}"
                cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
                rendered = workdir / f"{namespace}.yaml"
                rendered.write_bytes(subprocess.run([ours, "render", "-f", str(new)],
                                                    check=True, capture_output=True).stdout.replace(
                    f"namespace: step-{run}-{flag}".encode(), f"namespace: {namespace}".encode()))
                if label == "one at a time":
                    apply, _ = measure([*kubectl, "apply", "--server-side", "-f", str(rendered)])
                    times["kubectl"].append(apply.seconds)
                    cpu["kubectl"].append(apply.cpu_seconds)
    med = {k: statistics.median(v) for k, v in times.items()}
    cpu_med = {k: statistics.median(v) for k, v in cpu.items()}
    objects = args.slices * ROLES * 2
    print(f"\n#### Template-change step at {objects:,} objects ({args.runs} runs, load average before "
          f"{load[0]:.1f})\n")
    print("| command | median s | min s | client CPU s (median) |")
    print("|---|--:|--:|--:|")
    for label, command in (("one at a time", "`rollout step -f new.yaml --max-in-flight 1`"),
                           ("concurrent", f"`rollout step -f new.yaml` (--max-in-flight {DEFAULT_MAX_IN_FLIGHT})"),
                           ("kubectl", "`kubectl apply --server-side -f objects.yaml`"),
                           ("server dry run", "`rollout step -f new.yaml --dry-run=server`")):
        print(f"| {command} | {med[label]:.1f} | {min(times[label]):.1f} | {cpu_med[label]:.1f} |")
    ratio = med["concurrent"] / med["kubectl"]
    print(f"\n- {'PASS' if ratio <= TARGET_RATIO else 'FAIL'}  {objects:,} objects: step ≤ {TARGET_RATIO}× kubectl "
          f"apply --server-side (median): {med['concurrent']:.2f} s vs {med['kubectl']:.2f} s = {ratio:.2f}×")
    peak = max(rss)
    print(f"- {'PASS' if peak <= 150 else 'FAIL'}  step peak RSS ≤ 150 MB: {peak:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
