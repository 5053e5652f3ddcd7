"""Time the design §5 planner on the largest plans `rollout plan` is expected to print.

Run from the repository root:  python benchmarks/bench_planner.py
Each figure is the best of a few runs (wall clock, time.perf_counter). The target (issue 3)
is < 1 s for the 10 x 10,000 plans and for 1,000 random plans sized like the property tests
(2-5 roles, 0-60 replicas); the 2-10 roles x 0-100 row is a stress figure without a target.
Rows over target are marked. Other load on the machine shows up in the figures, so compare
runs on an idle one. It is a report: the exit status is 0 either way.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout, uninstalled

from kubectl_disagg.core.controller.planner import plan  # noqa: E402
from kubectl_disagg.core.api.rollout_config import RolloutConfig, resolve_config  # noqa: E402

ROLES = 10
REPLICAS = 10_000
RANDOM_PLANS = 1_000
SEED = 20260821
REPEATS = 3
TARGET_SECONDS = 1.0


def big_plan(configs: list[RolloutConfig]) -> Callable[[], int]:
    counts = (REPLICAS,) * ROLES
    return lambda: len(plan(counts, counts, configs)) - 1


def random_plans(max_roles: int, max_replicas: int) -> Callable[[], int]:
    """1,000 seeded plans: 2..max_roles roles, 0..max_replicas each, int, percent or no config."""
    rng = random.Random(SEED)
    cases = []
    for _ in range(RANDOM_PLANS):
        roles = rng.randint(2, max_roles)
        initial_old = tuple(rng.randint(0, max_replicas) for _ in range(roles))
        target = tuple(rng.randint(0, max_replicas) for _ in range(roles))
        configs = [resolve_config(random_rolling_update(rng), tgt) for tgt in target]
        cases.append((initial_old, target, configs))
    return lambda: sum(len(plan(*case)) - 1 for case in cases)


def random_rolling_update(rng: random.Random) -> dict | None:
    return rng.choice([
        None,
        {"maxSurge": rng.randint(0, 4), "maxUnavailable": rng.randint(0, 4)},
        {"maxSurge": f"{rng.randint(0, 50)}%", "maxUnavailable": f"{rng.randint(0, 50)}%"},
    ])


def best_of(run: Callable[[], int]) -> tuple[float, int]:
    timings = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        steps = run()
        timings.append(time.perf_counter() - start)
    return min(timings), steps


def main() -> int:
    scaled = resolve_config({"maxSurge": "10%", "maxUnavailable": "5%"}, REPLICAS)
    cases = [
        (f"{ROLES} roles x {REPLICAS:,}, surge 1 / unavailable 0", big_plan([RolloutConfig(1, 0)] * ROLES)),
        (f"{ROLES} roles x {REPLICAS:,}, 10% / 5% (= {scaled.surge} / {scaled.unavailable})",
         big_plan([scaled] * ROLES)),
        (f"{ROLES} roles x {REPLICAS:,}, surge 0 / unavailable 1", big_plan([RolloutConfig(0, 1)] * ROLES)),
        (f"{RANDOM_PLANS:,} random plans, 2-5 roles x 0-60", random_plans(5, 60)),
        (f"{RANDOM_PLANS:,} random plans, 2-10 roles x 0-100 (stress)", random_plans(ROLES, 100)),
    ]
    width = max(len(name) for name, _ in cases)
    print(f"{'CASE'.ljust(width)}  {'WALL (s)':>8}  {'STEPS':>7}  {'µs/STEP':>7}")
    for name, run in cases:
        seconds, steps = best_of(run)
        mark = "  over target" if seconds >= TARGET_SECONDS and "(stress)" not in name else ""
        print(f"{name.ljust(width)}  {seconds:8.3f}  {steps:7,}  {seconds / max(steps, 1) * 1e6:7.1f}{mark}")
    print(f"python {sys.version.split()[0]}, best of {REPEATS}, random seed {SEED}; "
          f"target < {TARGET_SECONDS:g} s each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
