"""`rollout step --gitops` on a 100-slice GitOps directory: one git step, as a whole process.

Starts a local control plane; deploys a set of 100 slices × 10 roles (2,000 objects, img:1) to
steady state with `rollout step` passes (the LWS simulator settling status), lets
`rollout step --gitops -f DIR` adopt it into a rollout state beside the set, changes the image
in the directory (img:2) and syncs the cluster to what that commit renders (the rollout's start:
every old LWS annotated with its initial replicas, the new revision's LWS at 0; here by one
`rollout step` pass, which writes exactly that), then settles status. Then times, as whole
processes, alternating run by run after one warm-up each:

- `kubectl-disagg rollout step --gitops -f DIR`: reads the 1,000 LWS, checks them against the
  committed state (design §8), decides the first planner step in every slice, checks the state it
  writes, writes it (exit 0, advanced);
- the same with `--pr-description FILE`: also the pull request text (a plan chart per slice group).

The state file is put back before every run, so each run takes the same step. Reported: median
and minimum wall time and the command's own CPU time (user + system). No target: the figure is
recorded in BENCHMARKS.md before and after a change of the git step (issue 30).

    python benchmarks/bench_gitops_step.py [--runs 5] [--slices 100] [--roles 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from benchmarks.measure import measure  # noqa: E402
from benchmarks.sets import deploy, document, one_step, with_image  # noqa: E402
from kubectl_disagg.core.delivery.sets import load_sets  # noqa: E402
from kubectl_disagg.core.api.naming import STATE_FILE  # noqa: E402
from kubectl_disagg.kube.executor import ClusterExecutor  # noqa: E402
from kubectl_disagg.manifests.reader import parse_stream  # noqa: E402
from kubectl_disagg.rollout.write_scheduler import DEFAULT_MAX_IN_FLIGHT  # noqa: E402
from testenv.controlplane import ControlPlane  # noqa: E402
from testenv.lws_simulator import LWSSimulator  # noqa: E402

NAMESPACE = "gitops-step"


def load(path: Path):
    (ds,) = load_sets(parse_stream(path.read_text(), str(path)))
    return ds


def prepared(cp: ControlPlane, simulator: LWSSimulator, app: Path, ours: str, slices: int, roles: int) -> bytes:
    """The directory mid-rollout, synced and settled: the committed state's bytes."""
    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    set_file = app / "llm.yaml"
    old = document(NAMESPACE, slices, roles)
    set_file.write_text(yaml.safe_dump(old))
    flags = [f"--kubeconfig={cp.kubeconfig}", "--context=admin"]
    with ClusterExecutor(str(cp.kubeconfig), "admin") as cluster:
        print(f"deploying {slices} x {roles}...", file=sys.stderr, flush=True)
        deploy(cluster, simulator, load(set_file), NAMESPACE, max_in_flight=DEFAULT_MAX_IN_FLIGHT)
        measure([ours, "rollout", "step", "--gitops", "-f", str(app), *flags])  # adopts what runs
        set_file.write_text(yaml.safe_dump(with_image(old, "img:2")))
        print("syncing the rollout's start...", file=sys.stderr, flush=True)
        one_step(cluster, load(set_file), NAMESPACE, max_in_flight=DEFAULT_MAX_IN_FLIGHT)
    simulator.sync(NAMESPACE)
    return (app / STATE_FILE).read_bytes()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--slices", type=int, default=100)
    parser.add_argument("--roles", type=int, default=10)
    args = parser.parse_args()
    ours = str(Path(sys.executable).parent / "kubectl-disagg")
    load_before = os.getloadavg()
    times: dict[str, list] = {"step": [], "with PR text": []}
    with ControlPlane() as cp, cp.api_client() as api, tempfile.TemporaryDirectory() as tmp:
        simulator = LWSSimulator(api)
        app = Path(tmp) / "app"
        app.mkdir()
        committed = prepared(cp, simulator, app, ours, args.slices, args.roles)
        flags = [f"--kubeconfig={cp.kubeconfig}", "--context=admin"]
        commands = {"step": [ours, "rollout", "step", "--gitops", "-f", str(app), *flags],
                    "with PR text": [ours, "rollout", "step", "--gitops", "-f", str(app), *flags,
                                     "--pr-description", str(Path(tmp) / "pr.md")]}
        for run in range(args.runs + 1):  # the first round warms up
            for label, argv in commands.items():
                (app / STATE_FILE).write_bytes(committed)
                result, out = measure(argv, capture=True)
                if b"advanced" not in out:
                    raise SystemExit(f"bench_gitops_step: {label} did not advance: {out[-500:]!r}")
                if run:
                    times[label].append(result)
    objects = args.slices * args.roles * 2
    print(f"\n#### `rollout step --gitops` at {args.slices} slices × {args.roles} roles ({objects:,} objects; "
          f"{args.runs} runs, load average before {load_before[0]:.1f})\n")
    print("| command | median s | min s | CPU s (median) | peak RSS MB |")
    print("|---|--:|--:|--:|--:|")
    for label, command in (("step", "`rollout step --gitops -f DIR`"),
                           ("with PR text", "`rollout step --gitops -f DIR --pr-description FILE`")):
        runs = times[label]
        print(f"| {command} | {statistics.median(r.seconds for r in runs):.2f} | {min(r.seconds for r in runs):.2f} "
              f"| {statistics.median(r.cpu_seconds for r in runs):.2f} | {max(r.peak_kib for r in runs) / 1024:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
