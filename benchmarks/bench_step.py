"""The template-change step at 2,000 objects against its floor: the same writes sent by a
minimal client of our own at the same concurrency; `kubectl apply --server-side` beside them.

Starts a local control plane. First it records the writes of one template-change step
(`step_writes.py`, on a set deployed for it). Then per run, on two sets of 100 slices × 10 roles
freshly deployed at img:1 in namespaces of their own (`rollout step` passes, the LWS simulator
settling status), it times as whole processes, one after the other (their order swapped every
other run):

- `kubectl-disagg rollout step -f NEW` where NEW changes the image: the pass that starts the
  rollout, 1,000 annotations + 1,000 LWS and 1,000 Services created, `--max-in-flight` at its
  default;
- the floor, `write_floor.py`: the recorded writes sent to the other set at the same
  concurrency (the API server and etcd on this machine, and the least a client spends);

and `kubectl apply --server-side -f OBJECTS` of the same 1,000 LWS and 1,000 Services (NEW
rendered) into an empty namespace, reported beside them. Each rollout start needs a freshly
deployed set, so runs are few (`--runs`, default 3). Budget (issue 30, medians, `budgets.py`):
the step at most 1.10× its floor. Target (issue 14): peak RSS ≤ 150 MB.

    python benchmarks/bench_step.py [--runs 3] [--slices 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from benchmarks.budgets import print_budgets, s, spread, times  # noqa: E402
from benchmarks.measure import measure  # noqa: E402
from benchmarks.sets import deploy, document  # noqa: E402
from kubectl_disagg.kube.executor import ClusterExecutor  # noqa: E402
from kubectl_disagg.core.delivery.sets import load_sets  # noqa: E402
from kubectl_disagg.manifests.reader import parse_stream  # noqa: E402
from kubectl_disagg.rollout.write_scheduler import DEFAULT_MAX_IN_FLIGHT  # noqa: E402
from testenv.controlplane import ControlPlane  # noqa: E402
from testenv.lws_simulator import LWSSimulator  # noqa: E402

ROLES = 10
BUDGET_TIMES_FLOOR = 1.10  # step median ÷ floor median, at most
HERE = Path(__file__).resolve().parent


def set_file(workdir: Path, namespace: str, slices: int, image: str) -> Path:
    path = workdir / f"{namespace}-{image.replace(':', '-')}.yaml"
    path.write_text(yaml.safe_dump(document(namespace, slices, ROLES, image)))
    return path


def deployed(cp: ControlPlane, simulator: LWSSimulator, workdir: Path, namespace: str, slices: int) -> Path:
    """A fresh namespace with the set deployed at img:1; the file of its img:2 version."""
    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    old = set_file(workdir, namespace, slices, "img:1")
    (ds,) = load_sets(parse_stream(old.read_text(), str(old)))
    with ClusterExecutor(str(cp.kubeconfig), "admin") as cluster:
        deploy(cluster, simulator, ds, namespace, max_in_flight=DEFAULT_MAX_IN_FLIGHT)
    return set_file(workdir, namespace, slices, "img:2")


def objects_in(cp: ControlPlane, namespace: str) -> int:
    lws = cp.request("GET", f"/apis/leaderworkerset.x-k8s.io/v1/namespaces/{namespace}/leaderworkersets")
    services = cp.request("GET", f"/api/v1/namespaces/{namespace}/services")
    return len(lws["items"]) + len(services["items"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--slices", type=int, default=100)
    args = parser.parse_args()
    load = os.getloadavg()
    ours = str(Path(sys.executable).parent / "kubectl-disagg")
    times_s: dict[str, list[float]] = {"step": [], "floor": [], "kubectl": []}
    cpu: dict[str, list[float]] = {k: [] for k in times_s}  # the command's own user + system time
    rss: list[float] = []
    with ControlPlane() as cp, cp.api_client() as api, tempfile.TemporaryDirectory() as tmp:
        simulator = LWSSimulator(api)
        workdir = Path(tmp)
        cluster = [f"--kubeconfig={cp.kubeconfig}", "--context=admin"]
        print("recording the step's writes...", file=sys.stderr, flush=True)
        writes = workdir / "writes.jsonl"
        new = deployed(cp, simulator, workdir, "step-record", args.slices)
        recording, _ = measure([sys.executable, str(HERE / "step_writes.py"), str(writes), "rollout", "step", "-f",
                                str(new), *cluster, "-o", "json"])
        timeline = [json.loads(line) for line in writes.open()]
        recorded = len(timeline)
        first_sent = min(w["sent"] for w in timeline)
        last_answered = max(w["answered"] for w in timeline)
        floor_writes: list[float] = []
        for run in range(args.runs):
            print(f"run {run + 1}: deploying...", file=sys.stderr, flush=True)
            step_ns, floor_ns = f"step-{run}", f"floor-{run}"
            new = deployed(cp, simulator, workdir, step_ns, args.slices)
            deployed(cp, simulator, workdir, floor_ns, args.slices)
            commands = {
                "step": [ours, "rollout", "step", "-f", str(new), *cluster, "-o", "json"],
                "floor": [sys.executable, str(HERE / "write_floor.py"), str(cp.kubeconfig), "admin", str(writes),
                          "step-record", floor_ns, "--in-flight", str(DEFAULT_MAX_IN_FLIGHT)],
            }
            for label in ("step", "floor") if run % 2 == 0 else ("floor", "step"):
                done, out = measure(commands[label], capture=True)
                if label == "floor":
                    floor_writes.append(float(out.split()[1]))
                times_s[label].append(done.seconds)
                cpu[label].append(done.cpu_seconds)
                if label == "step":
                    rss.append(done.peak_kib * 1024 / 1e6)
            if objects_in(cp, step_ns) != objects_in(cp, floor_ns):
                raise RuntimeError(f"the floor left {objects_in(cp, floor_ns)} objects, the step "
                                   f"{objects_in(cp, step_ns)}: not the same writes")
            namespace = f"apply-{run}"
            cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
            rendered = workdir / f"{namespace}.yaml"
            rendered.write_bytes(subprocess.run([ours, "render", "-f", str(new)], check=True,
                                                capture_output=True).stdout.replace(
                f"namespace: {step_ns}".encode(), f"namespace: {namespace}".encode()))
            done, _ = measure([str(cp.bin_dir / "kubectl"), *cluster, "apply", "--server-side", "-f", str(rendered)])
            times_s["kubectl"].append(done.seconds)
            cpu["kubectl"].append(done.cpu_seconds)
            print(f"run {run + 1}: step {times_s['step'][-1]:.1f} s, floor {times_s['floor'][-1]:.1f} s, kubectl "
                  f"apply {done.seconds:.1f} s (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    objects = args.slices * ROLES * 2
    print(f"\n#### Template-change step at {objects:,} objects ({args.runs} runs, load average before "
          f"{load[0]:.1f}; {recorded:,} writes, {DEFAULT_MAX_IN_FLIGHT} in flight)\n")
    print("| command | median s | min s | max s | client CPU s (median) |")
    print("|---|--:|--:|--:|--:|")
    for label, command in (("step", f"`rollout step -f new.yaml` (--max-in-flight {DEFAULT_MAX_IN_FLIGHT})"),
                           ("floor", f"the floor: `write_floor.py`, the same {recorded:,} writes, "
                                     f"{DEFAULT_MAX_IN_FLIGHT} in flight"),
                           ("kubectl", "`kubectl apply --server-side -f objects.yaml` (beside them)")):
        print(f"| {command} | {statistics.median(times_s[label]):.1f} | {min(times_s[label]):.1f} "
              f"| {max(times_s[label]):.1f} | {statistics.median(cpu[label]):.1f} |")
    print("\n| run | step s | floor s | step ÷ floor | the floor's writes alone s | kubectl apply s |")
    print("|--:|--:|--:|--:|--:|--:|")
    for run in range(args.runs):
        print(f"| {run + 1} | {times_s['step'][run]:.1f} | {times_s['floor'][run]:.1f} "
              f"| {times_s['step'][run] / times_s['floor'][run]:.2f}× | {floor_writes[run]:.1f} "
              f"| {times_s['kubectl'][run]:.1f} |")
    print(f"\nThe recorded step (`step_writes.py`, the same command run in process with its writes timed; "
          f"one run, before the timed runs): {recording.seconds:.1f} s in all, {first_sent:.1f} s before its "
          f"first write (start-up, the Lease, the reads, reconcile), {last_answered - first_sent:.1f} s from "
          f"its first write sent to its last answered, {recording.seconds - last_answered:.1f} s after.")
    print_budgets([times(f"rollout step, template change, {objects:,} objects", times_s["step"], times_s["floor"],
                         f"the same {recorded:,} writes by a minimal client, {DEFAULT_MAX_IN_FLIGHT} in flight",
                         BUDGET_TIMES_FLOOR, unit=s)])
    print(f"  (beside it, not a budget: kubectl apply --server-side {spread(times_s['kubectl'], s)}, the step "
          f"{statistics.median(times_s['step']) / statistics.median(times_s['kubectl']):.2f}× it)")
    peak = max(rss)
    print(f"\nTargets (issue 14):\n\n- {'PASS' if peak <= 150 else 'FAIL'}  step peak RSS ≤ 150 MB: {peak:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
