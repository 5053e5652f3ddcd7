"""Wall time and peak memory of `kubectl-disagg render`, whole process, against `kubectl kustomize`.

Run from anywhere; for figures worth recording use a regular (non-editable) install, since an
editable install adds an import hook to every start-up:

    python3 -m venv /tmp/bench-venv && /tmp/bench-venv/bin/pip install .
    /tmp/bench-venv/bin/python benchmarks/bench_render.py

Inputs are generated into a temporary directory from examples/prefill-decode.yaml: the example
itself (2 roles x 1 slice) and copies with roles renamed role0..roleN and `spec.slices` set, for
10, 100, 1,000 and 2,000 objects (each slice x role renders one LeaderWorkerSet and one Service).

For each input, `kubectl-disagg render -f input.yaml` and `kubectl kustomize DIR` (DIR holds the
objects render printed, listed by a kustomization.yaml) run alternately as separate processes,
the first run of each discarded as warm-up. For the 2-role example a third command alternates with
them, the floor: the console script's interpreter importing click and PyYAML and nothing of
kubectl-disagg (`python -c "import click, yaml"`), the least a process can do that parses its
flags with the one argument parser every command uses and reads YAML with the library the
reader is built on. The budget (issue 30): render of the example at most 60 ms above that floor,
medians of the same run (`budgets.py`); kustomize is reported beside it, not a budget. Wall
time is time.perf_counter around spawn and reap; peak RSS is the child's ru_maxrss (both by
`measure.py`).

Which programs:
  KUBECTL_DISAGG  default: the kubectl-disagg console script next to this interpreter
  KUBECTL         default: the kubectl the project builds (hack/build-testenv.sh) into
                  ${XDG_CACHE_HOME:-~/.cache}/kubectl-disagg/testenv/<version>/bin, else PATH

The exit status is 0 even when a target is missed or a budget is over (this is a report); they
are printed as FAIL and OVER. It is 2 when a program fails or prints the wrong number of objects.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from budgets import above, print_budgets  # this directory is on sys.path: run as a script
from measure import CommandFailed, Run, measure

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "prefill-decode.yaml"
TESTENV_GO_MOD = ROOT / "hack" / "testenv" / "go.mod"

# (label, roles, slices); objects = 2 * roles * slices. Roles are capped at 10 by validation.
SIZES = [
    ("2-role example", 2, 1),
    ("10 objects", 5, 1),
    ("100 objects", 10, 5),
    ("1,000 objects", 10, 50),
    ("2,000 objects", 10, 100),
]
EXAMPLE_LABEL = SIZES[0][0]
BIG_OBJECTS = 1000  # inputs with at least this many objects get --runs-big runs

# The budget of issue 30: render of the 2-role example (4 objects) at most this far above the floor.
BUDGET_ABOVE_FLOOR = 0.060  # seconds, median − median
FLOOR_IS = "the interpreter importing click and PyYAML"
# Targets (issue 14).
TARGET_BIG_SECONDS = 2.0  # 10 roles x 100 slices
TARGET_BIG_MB = 150.0  # peak RSS, MB = 10^6 bytes
TARGET_LINEAR_SLOPE_RATIO = 1.5  # ms per object added from 1,000 to 2,000 over that up to 1,000


@dataclass
class Sample:
    """The runs of one command (bench_cmp.py uses it too)."""

    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)
    peak_kib: list[int] = field(default_factory=list)

    def add(self, run: Run) -> None:
        self.seconds.append(run.seconds)
        self.cpu_seconds.append(run.cpu_seconds)
        self.peak_kib.append(run.peak_kib)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def min_ms(self) -> float:
        return min(self.seconds) * 1000

    @property
    def cpu_median_ms(self) -> float:
        return statistics.median(self.cpu_seconds) * 1000

    @property
    def peak_mb(self) -> float:
        return max(self.peak_kib) * 1024 / 1e6


@dataclass
class Result:
    label: str
    roles: int
    slices: int
    objects: int
    disagg: Sample
    kustomize: Sample
    floor: Sample | None = None

    @property
    def ratio(self) -> float:
        return self.disagg.median_ms / self.kustomize.median_ms


class BenchError(Exception):
    pass


def count_objects(path: Path) -> int:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, "rb") as stream:
        return sum(1 for doc in yaml.load_all(stream, Loader=loader) if doc is not None)


def scaled_input(example: dict, roles: int, slices: int) -> dict:
    """The example with its roles cycled and renamed role0..role<roles-1>, and `spec.slices` set."""
    scaled = copy.deepcopy(example)
    base_roles = example["spec"]["roles"]
    scaled["spec"]["roles"] = []
    for index in range(roles):
        role = copy.deepcopy(base_roles[index % len(base_roles)])
        role["name"] = f"role{index}"
        scaled["spec"]["roles"].append(role)
    scaled["spec"]["slices"] = slices
    return scaled


def write_inputs(workdir: Path) -> list[tuple[str, int, int, Path]]:
    example_text = EXAMPLE.read_text()
    example = yaml.safe_load(example_text)
    if len(example["spec"]["roles"]) != SIZES[0][1] or example["spec"].get("slices", 1) != SIZES[0][2]:
        raise BenchError(f"{EXAMPLE.name} is no longer 2 roles x 1 slice; update SIZES")
    inputs = []
    for index, (label, roles, slices) in enumerate(SIZES):
        case = workdir / f"case{index}"
        case.mkdir()
        path = case / "input.yaml"
        if index == 0:
            path.write_text(example_text)  # the example exactly as shipped
        else:
            path.write_text(yaml.safe_dump(scaled_input(example, roles, slices), sort_keys=False))
        inputs.append((label, roles, slices, path))
    return inputs


def bench_case(
    disagg: str, kubectl: str, label: str, roles: int, slices: int, path: Path, runs: int,
    floor_argv: list[str] | None = None,
) -> Result:
    expected = 2 * roles * slices
    kdir = path.parent / "kustomize"
    kdir.mkdir()
    objects_file = kdir / "objects.yaml"
    (kdir / "kustomization.yaml").write_text("resources:\n- objects.yaml\n")
    render_argv = [disagg, "render", "-f", str(path)]
    kustomize_argv = [kubectl, "kustomize", str(kdir)]

    # Warm-up (page cache, .pyc files); render's output becomes kustomize's input.
    measure(render_argv, objects_file)
    rendered = count_objects(objects_file)
    kustomized_file = path.parent / "kustomized.yaml"
    measure(kustomize_argv, kustomized_file)
    kustomized = count_objects(kustomized_file)
    if rendered != expected or kustomized != expected:
        raise BenchError(
            f"{label}: expected {expected} objects, render printed {rendered}, kustomize {kustomized}"
        )

    disagg_sample, kustomize_sample = Sample(), Sample()
    commands = [(render_argv, disagg_sample), (kustomize_argv, kustomize_sample)]
    floor_sample = None
    if floor_argv:
        floor_sample = Sample()
        measure(floor_argv)  # warm-up
        commands.append((floor_argv, floor_sample))
    for _ in range(runs):  # alternated, so a load spike hits all alike
        for argv, sample in commands:
            sample.add(measure(argv)[0])
    return Result(label, roles, slices, expected, disagg_sample, kustomize_sample, floor_sample)


def find_kubectl(wait_seconds: float) -> tuple[str, str]:
    """(path, how it was chosen)."""
    if os.environ.get("KUBECTL"):
        return os.environ["KUBECTL"], "$KUBECTL"
    version = None
    if TESTENV_GO_MOD.exists():
        for line in TESTENV_GO_MOD.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == "k8s.io/kubernetes":
                version = words[1]
                break
    if version:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        built = cache / "kubectl-disagg" / "testenv" / version / "bin" / "kubectl"
        deadline = time.monotonic() + wait_seconds
        while not built.exists() and time.monotonic() < deadline:
            time.sleep(5)  # the cache directory appears only once a build is complete
        if built.exists():
            return str(built), f"built by hack/build-testenv.sh (k8s.io/kubernetes {version})"
    on_path = shutil.which("kubectl")
    if on_path:
        return on_path, "PATH"
    raise BenchError("no kubectl: set KUBECTL, run `make testenv`, or put kubectl on PATH")


def find_disagg() -> tuple[str, str]:
    if os.environ.get("KUBECTL_DISAGG"):
        return os.environ["KUBECTL_DISAGG"], "$KUBECTL_DISAGG"
    script = Path(sys.executable).parent / "kubectl-disagg"
    if not script.exists():
        raise BenchError(f"no {script}: install the project into this interpreter's venv or set KUBECTL_DISAGG")
    return str(script), "console script of this interpreter's venv"


def interpreter_of(disagg: str) -> list[str] | None:
    """The interpreter a console script starts (its `#!` line), or None."""
    try:
        with open(disagg, "rb") as script:
            first = script.readline().decode(errors="replace").strip()
    except OSError:
        return None
    return first[2:].split() if first.startswith("#!") else None


def install_kind(disagg: str) -> str:
    """Whether the kubectl-disagg found is an editable install (source tree) or a regular one."""
    interpreter = interpreter_of(disagg)
    if interpreter is None:
        return "unknown (not a Python console script)"
    probe = "import kubectl_disagg, sys; print(kubectl_disagg.__file__); print(sys.version.split()[0])"
    try:
        # Run from "/": with -c the current directory comes first on sys.path, and from a checkout
        # that would find the source tree whatever is installed.
        out = subprocess.run(interpreter + ["-c", probe], capture_output=True, text=True, check=True, cwd="/").stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    module_file, version = out.splitlines()[:2]
    where = "regular (site-packages)" if "site-packages" in Path(module_file).parts else "EDITABLE (source tree)"
    return f"{where}, Python {version}"


def kubectl_version(kubectl: str) -> str:
    out = subprocess.run([kubectl, "version", "--client"], check=False, capture_output=True, text=True)
    return "; ".join(line.strip() for line in out.stdout.splitlines() if line.strip()) or out.stderr.strip()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(results: list[Result]) -> int:
    """Print the table, the per-object cost, the budget and the targets; return the number of misses."""
    print("| input | roles × slices | objects | kubectl-disagg median ms | min ms | peak RSS MB "
          "| kustomize median ms | min ms | peak RSS MB | ratio (median) |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in results:
        print(f"| {r.label} | {r.roles} × {r.slices} | {r.objects:,} "
              f"| {r.disagg.median_ms:.0f} | {r.disagg.min_ms:.0f} | {r.disagg.peak_mb:.1f} "
              f"| {r.kustomize.median_ms:.0f} | {r.kustomize.min_ms:.0f} | {r.kustomize.peak_mb:.1f} "
              f"| {r.ratio:.2f}× |")

    by_objects = {r.objects: r for r in results}
    example = results[0]
    if any(r.objects >= 100 for r in results):
        cost_per_thousand(results, example)

    def slope(a: Result, b: Result) -> float:
        """ms per 1,000 objects between two sizes, from the fastest runs (least disturbed by load)."""
        return (b.disagg.min_ms - a.disagg.min_ms) / (b.objects - a.objects) * 1000

    if example.floor is not None:
        print_budgets([above(f"render -f, {example.label} ({example.objects} objects)", example.disagg.seconds,
                             example.floor.seconds, FLOOR_IS, BUDGET_ABOVE_FLOOR)])
        print(f"  (beside it, not a budget: kubectl kustomize {example.kustomize.median_ms:.0f} ms, render "
              f"{example.ratio:.2f}× it; CPU medians: render {example.disagg.cpu_median_ms:.0f} ms, floor "
              f"{example.floor.cpu_median_ms:.0f} ms, kustomize {example.kustomize.cpu_median_ms:.0f} ms)")

    misses = 0
    big = by_objects.get(2000)
    if big:
        print("\nTargets (issue 14):\n")
        ok = big.disagg.median_ms <= TARGET_BIG_SECONDS * 1000
        misses += not ok
        print(f"- {verdict(ok)}  10 roles × 100 slices (2,000 objects) ≤ {TARGET_BIG_SECONDS:.0f} s: "
              f"median {big.disagg.median_ms / 1000:.2f} s (slowest run {max(big.disagg.seconds):.2f} s)")
        ok = big.disagg.peak_mb <= TARGET_BIG_MB
        misses += not ok
        print(f"- {verdict(ok)}  10 roles × 100 slices ≤ {TARGET_BIG_MB:.0f} MB peak RSS: "
              f"{big.disagg.peak_mb:.1f} MB (max over runs)")
    if all(n in by_objects for n in (1000, 2000)):
        # Two spans of ~1,000 objects each: quadratic growth would make the second ~3× the first.
        first = slope(example, by_objects[1000])
        second = slope(by_objects[1000], by_objects[2000])
        ok = first > 0 and second <= TARGET_LINEAR_SLOPE_RATIO * first
        misses += not ok
        print(f"- {verdict(ok)}  linear in slices × roles (min wall per 1,000 objects added, 1,000→2,000 "
              f"≤ {TARGET_LINEAR_SLOPE_RATIO}× {example.objects}→1,000): "
              f"{second:.0f} ms vs {first:.0f} ms = {second / first if first > 0 else float('nan'):.2f}×")
    if big:
        print(f"\n*** {misses} TARGET(S) MISSED ***" if misses else "\nAll targets met.")
    return misses


def cost_per_thousand(results: list[Result], example: Result) -> None:
    print("\nCost per 1,000 objects: total = median wall / objects; marginal = above the 2-role example"
          " (start-up removed), from the fastest runs:\n")
    print("| objects | kubectl-disagg ms (total) | ms (marginal) | peak RSS MB (marginal) "
          "| kustomize ms (total) | ms (marginal) |")
    print("|--:|--:|--:|--:|--:|--:|")
    for r in results:
        if r.objects < 100:
            continue
        extra = (r.objects - example.objects) / 1000
        print(f"| {r.objects:,} | {r.disagg.median_ms / r.objects * 1000:.0f} "
              f"| {(r.disagg.min_ms - example.disagg.min_ms) / extra:.0f} "
              f"| {(r.disagg.peak_mb - example.disagg.peak_mb) / extra:.1f} "
              f"| {r.kustomize.median_ms / r.objects * 1000:.0f} "
              f"| {(r.kustomize.min_ms - example.kustomize.min_ms) / extra:.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-small", type=int, default=31, help="timed runs per tool below 1,000 objects")
    parser.add_argument("--runs-big", type=int, default=7, help="timed runs per tool from 1,000 objects")
    parser.add_argument("--max-objects", type=int, default=None, metavar="N",
                        help="measure only the inputs of at most N objects (the 2-role example has 4)")
    parser.add_argument("--wait-for-kubectl", type=float, default=0, metavar="SECONDS",
                        help="wait this long for a kubectl build in progress before falling back to PATH")
    args = parser.parse_args(argv)

    try:
        disagg, disagg_how = find_disagg()
        kubectl, kubectl_how = find_kubectl(args.wait_for_kubectl)
        started = datetime.datetime.now(datetime.UTC)
        load_before = load_average()
        affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        print(f"# kubectl-disagg render vs kubectl kustomize — {started:%Y-%m-%d %H:%M} UTC\n")
        install = install_kind(disagg)
        print(f"- kubectl-disagg: {disagg_how}; install: {install}")
        print(f"- kubectl: {kubectl_how}; `kubectl version --client`: {kubectl_version(kubectl)}")
        print(f"- machine: {affinity} CPUs usable (nproc), {cpu_model()}, {platform.system()} {platform.release()}")
        print(f"- bench interpreter: Python {platform.python_version()}; "
              f"PYTHONDONTWRITEBYTECODE={'set' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'unset'}")
        print(f"- runs per tool: {args.runs_small} below {BIG_OBJECTS:,} objects, {args.runs_big} from "
              f"{BIG_OBJECTS:,}, after one warm-up run each; the two tools alternate")
        print(f"- load average before: {load_before}", flush=True)

        results = []
        with tempfile.TemporaryDirectory(prefix="bench-render-") as tmp:
            for label, roles, slices, path in write_inputs(Path(tmp)):
                if args.max_objects is not None and 2 * roles * slices > args.max_objects:
                    continue
                runs = args.runs_big if 2 * roles * slices >= BIG_OBJECTS else args.runs_small
                interpreter = interpreter_of(disagg) if label == EXAMPLE_LABEL else None
                floor = [*interpreter, "-c", "import click, yaml"] if interpreter else None
                results.append(bench_case(disagg, kubectl, label, roles, slices, path, runs, floor))
                print(f"  {label}: done (load {load_average()})", file=sys.stderr, flush=True)
        print(f"- load average after: {load_average()}\n")
    except (BenchError, CommandFailed, OSError) as err:  # OSError: a program that cannot be run
        print(f"bench_render: {err}", file=sys.stderr)
        return 2

    report(results)  # misses are printed, not an error: this is a report
    if "EDITABLE" in install:
        print("WARNING: editable install; its import hook slows start-up. Record figures from a regular install.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
