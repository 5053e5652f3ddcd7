"""The test tiers as `make test`, `make unit`, `make programs` and `make integration` run them: the
unit tier (the package in-process), the programs tier (the tests whose work is another program's:
the Go oracles, the Argo CD harness, pip; tests/unit/conftest.py names them), the integration tier
(the local control plane). Each tier one pytest run on parallel workers (pytest-xdist, `--dist
loadfile`: each module on one worker, and tests/conftest.py says which modules share one), then
what BENCHMARKS.md records: each tier's wall time and the slowest tests of them all.

Every tier runs even when one before it failed (every failure at once); the exit code is the
first failing tier's. A tier that collects nothing (PYTEST_ARGS naming only another tier's
files) is not a failure. A run that shows the tests' output (-s) or stops in the debugger
(--pdb) stays in one process. Each tier's durations are kept in .test-durations/ for its next
run, which hands the modules that took longest to the workers first (tests/conftest.py).

    python hack/test_tiers.py [--tier unit|programs|integration ...] [--workers N] [--slowest N] [PYTEST_ARGS ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

# Each tier's pytest marker expression, in the order `make test` runs them.
TIERS = {"unit": "not integration and not programs", "programs": "programs and not integration",
         "integration": "integration"}
NO_TESTS_COLLECTED = 5  # pytest's exit code
ONE_PROCESS = {"-s", "--capture=no", "--pdb"}
KEPT = Path(".test-durations")  # under the directory it runs in (the repository's; ignored by git)


class Tier(NamedTuple):
    name: str
    wall: float  # seconds, collection and the workers' start included
    code: int
    durations: dict[str, float]  # test id -> seconds of its setup, call and teardown
    outcomes: dict[str, str]  # test id -> passed | failed | skipped | xfailed


def spelled(seconds: float) -> str:
    """`8.4 s`, `1 min 12 s`."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def summary(tiers: list[Tier], workers: int, slowest: int) -> str:
    """The tiers' wall times, then the slowest tests of all tiers, slowest first."""
    on = f"{workers} workers" if workers > 1 else "1 process"
    times = [f"{t.name} tier {spelled(t.wall)} ({len(t.durations)} test{'' if len(t.durations) == 1 else 's'})"
             for t in tiers]
    lines = [f"test tiers on {on}: " + ", ".join(times) + f"; {spelled(sum(t.wall for t in tiers))} in all"]
    ranked = sorted(((seconds, test) for t in tiers for test, seconds in t.durations.items()), key=lambda x: -x[0])
    if ranked[:slowest]:
        lines.append(f"the slowest {min(slowest, len(ranked))} tests:")
        lines += [f"{seconds:8.2f} s  {test}" for seconds, test in ranked[:slowest]]
    # Last, the whole run's count on a line of its own, as a CI log reader looks for it: the tiers'
    # own pytest summaries stand far above, one per tier.
    counted = [outcome for t in tiers for outcome in t.outcomes.values()]
    lines.append("total: " + ", ".join(f"{counted.count(word)} {word}" for word in ("passed", "failed", "skipped")))
    return "\n".join(lines)


def run_tier(name: str, workers: int, pytest_args: list[str], scratch: Path) -> Tier:
    log = scratch / f"{name}.json"
    earlier = KEPT / f"{name}.json"  # the tier's tests' latest durations: the longest modules go first
    parallel = ["-n", str(workers), "--dist", "loadfile", f"--schedule-from={earlier}"] if workers > 1 else []
    argv = [sys.executable, "-m", "pytest", "-m", TIERS[name], *parallel, f"--durations-log={log}", *pytest_args]
    print(f"--- the {name} tier: {' '.join(argv[1:])}", flush=True)
    start = time.monotonic()
    code = subprocess.call(argv)
    wall = time.monotonic() - start
    logged = json.loads(log.read_text()) if log.exists() else {}
    keep(earlier, logged.get("durations", {}))
    return Tier(name, wall, 0 if code == NO_TESTS_COLLECTED else code, logged.get("durations", {}),
                logged.get("outcomes", {}))


def keep(path: Path, durations: dict[str, float]) -> None:
    """The durations of this run over those of earlier runs (a run of some files times only them)."""
    if not durations:
        return
    try:
        kept = json.loads(path.read_text())["durations"]
    except (OSError, ValueError, KeyError):
        kept = {}
    path.parent.mkdir(exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({"durations": kept | durations}, indent=0, sort_keys=True))
    partial.replace(path)  # whole or not at all, for a tier started meanwhile


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--tier", action="append", choices=list(TIERS), help="a tier to run (default: all, in order)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers per tier (1: none)")
    parser.add_argument("--slowest", type=int, default=20, help="how many of the slowest tests to list")
    options, pytest_args = parser.parse_known_args(argv)
    workers = 1 if ONE_PROCESS & set(pytest_args) else options.workers
    with tempfile.TemporaryDirectory(prefix="test-tiers-") as scratch:
        tiers = [run_tier(name, workers, pytest_args, Path(scratch)) for name in options.tier or TIERS]
    print(summary(tiers, workers, options.slowest))
    return next((t.code for t in tiers if t.code), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
