"""Wall time of `kubectl-disagg cmp generate` (as Argo CD's sidecar runs it) against `render`.

    python3 -m venv /tmp/bench-venv && /tmp/bench-venv/bin/pip install .
    /tmp/bench-venv/bin/python benchmarks/bench_cmp.py

Two inputs, generated like bench_render.py's from examples/prefill-decode.yaml: the example
itself (2 roles x 1 slice) and 10 roles x 100 slices (1,000 LWS + 1,000 Services). For each,
`cmp generate` runs in a directory holding the input and the rollout state `rollout state init`
writes for it (what a repository driven through git holds; the plugin refuses a set without
one), with Argo CD's variables set, and `render -f input.yaml` on the same files; the two alternate run by run after one warm-up each.
Targets (issue 10): generate within 1.0x render's median on the example; 2,000 objects under 2 s.
Exit status 0 even when a target is missed (a report); 2 when a program fails.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_render import (  # noqa: E402  (the same inputs and helpers as bench_render)
    EXAMPLE, BenchError, Sample, count_objects, cpu_model, find_disagg, install_kind, load_average,
    scaled_input, verdict,
)
from measure import CommandFailed, measure  # noqa: E402

TARGET_RATIO = 1.0
TARGET_BIG_SECONDS = 2.0
ARGOCD_ENV = {
    "ARGOCD_APP_NAME": "llama", "ARGOCD_APP_NAMESPACE": "serving", "ARGOCD_APP_PROJECT_NAME": "default",
    "ARGOCD_APP_REVISION": "4f1c2b7e9a0d3c5b8e6f1a2d4c7b9e0f3a5d8c1b", "KUBE_VERSION": "1.36.3",
    "KUBE_API_VERSIONS": "v1,apps/v1,leaderworkerset.x-k8s.io/v1,leaderworkerset.x-k8s.io/v1/LeaderWorkerSet",
}


@contextlib.contextmanager
def running_in(directory: Path, environ: dict):
    """The commands `measure` starts inherit this working directory and environment."""
    previous, saved = os.getcwd(), dict(os.environ)
    os.chdir(directory)
    os.environ.update(environ)
    try:
        yield
    finally:
        os.chdir(previous)
        os.environ.clear()
        os.environ.update(saved)


def bench(disagg: str, directory: Path, expected: int, runs: int) -> tuple[Sample, Sample]:
    generate = ([disagg, "cmp", "generate"], ARGOCD_ENV, Sample())
    render = ([disagg, "render", "-f", "input.yaml"], {}, Sample())
    out = directory.parent / "out.yaml"
    for argv, environ, _ in (generate, render):  # warm-up, and a count check
        with running_in(directory, environ):
            measure(argv, out)
        if count_objects(out) != expected:
            raise BenchError(f"{' '.join(argv)} printed {count_objects(out)} objects, expected {expected}")
    for _ in range(runs):  # alternated, so a load spike hits both alike
        for argv, environ, sample in (generate, render):
            with running_in(directory, environ):
                sample.add(measure(argv)[0])
    return generate[2], render[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-small", type=int, default=31)
    parser.add_argument("--runs-big", type=int, default=7)
    args = parser.parse_args(argv)
    try:
        disagg, how = find_disagg()
        print(f"# kubectl-disagg cmp generate vs render — {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC\n")
        install = install_kind(disagg)
        print(f"- kubectl-disagg: {how}; install: {install}")
        print(f"- machine: {len(os.sched_getaffinity(0))} CPUs usable, {cpu_model()}")
        print(f"- load average before: {load_average()}\n")
        example = yaml.safe_load(EXAMPLE.read_text())
        cases = [("2-role example", EXAMPLE.read_text(), 4, args.runs_small),
                 ("10 roles × 100 slices", yaml.safe_dump(scaled_input(example, 10, 100)), 2000, args.runs_big)]
        rows = []
        with tempfile.TemporaryDirectory(prefix="bench-cmp-") as tmp:
            for index, (label, text, expected, runs) in enumerate(cases):
                directory = Path(tmp) / f"case{index}" / "app"
                directory.mkdir(parents=True)
                (directory / "input.yaml").write_text(text)
                measure([disagg, "rollout", "state", "init", "-f", str(directory)])
                rows.append((label, expected, *bench(disagg, directory, expected, runs)))
        print(f"- load average after: {load_average()}\n")
    except (BenchError, CommandFailed, OSError) as err:
        print(f"bench_cmp: {err}", file=sys.stderr)
        return 2
    print("| input | objects | cmp generate median ms | min ms | CPU median ms | render median ms | min ms "
          "| CPU median ms | ratio (median wall) | ratio (median CPU) |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for label, objects, generate, render in rows:
        print(f"| {label} | {objects:,} | {generate.median_ms:.0f} | {generate.min_ms:.0f} "
              f"| {generate.cpu_median_ms:.0f} | {render.median_ms:.0f} | {render.min_ms:.0f} "
              f"| {render.cpu_median_ms:.0f} | {generate.median_ms / render.median_ms:.2f}× "
              f"| {generate.cpu_median_ms / render.cpu_median_ms:.2f}× |")
    (_, _, small_generate, small_render), (_, _, big_generate, _) = rows
    ratio = small_generate.median_ms / small_render.median_ms
    print("\nTargets:\n")
    print(f"- {verdict(ratio <= TARGET_RATIO)}  2-role example: cmp generate ≤ {TARGET_RATIO:.1f}× render median: "
          f"{small_generate.median_ms:.0f} ms vs {small_render.median_ms:.0f} ms = {ratio:.2f}×")
    big_ok = max(big_generate.seconds) <= TARGET_BIG_SECONDS
    print(f"- {verdict(big_ok)}  1,000 LWS + 1,000 Services < {TARGET_BIG_SECONDS:.0f} s: "
          f"median {big_generate.median_ms / 1000:.2f} s, slowest run {max(big_generate.seconds):.2f} s")
    if "EDITABLE" in install:
        print("\nWARNING: editable install; its import hook slows start-up. Record figures from a regular install.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
