"""How many commits a rollout through git takes, and how long its pull requests are (issue 39).

Drives the pure git step (`gitops_step`, tests/support/gitops_pr.py `fleet_steps`) over a fleet
of N slices (prefill 3 and decode 2 groups of leader + worker, surge 1, max unavailable 0) under
the RolloutPolicy of docs/gitops.md: a canary with an analysis gate on time to first token, a
25 % wave with a pause, the rest; at most 3 slices in flight. Argo CD is the in-memory fake: it
syncs each commit and the LWS report ready at once, so the count is the number of steps, not of
waits. Two runs per size:

- good: the canary measures 0.1 s, the analysis passes, a person promotes at the pause, the
  rollout runs to the end;
- bad: the canary measures 2 s, the analysis fails, `onFailure: abort` takes slice 0 back.

Printed per run: the step commits the bot writes (`rollout step --gitops --commit`), the
commits people make (the template change; `promote` at the pause), and the longest
description of a mid-rollout step (neither a rollout's first, a wave's start nor a removal).
The figures are those of docs/gitops.md ("How many commits").

    python benchmarks/gitops_commits.py [--slices 12 100]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kubectl_disagg.views.gitops_pr import pr_context  # noqa: E402
from kubectl_disagg.views.gitops_report import format_pr_description  # noqa: E402
from tests.support.gitops_pr import STATE_FILE, fleet_steps  # noqa: E402
from tests.support.sets import NS  # noqa: E402


def measured(slices: int, ttft: float) -> dict:
    steps = fleet_steps(slices, ttft=ttft, limit=2000)
    forward = back = mid = 0
    for ds, step in steps:
        context = pr_context(ds, NS, step, STATE_FILE)
        if context["title"].startswith(f"{ds.name}: rollback"):
            back += 1
        else:
            forward += 1
        if context["kind"] in ("rolling", "record") and context["commits"] > 1 and context["wave"] is None:
            mid = max(mid, len(format_pr_description(ds, NS, step, STATE_FILE).splitlines()))
    return {"forward": forward, "back": back, "mid": mid}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slices", type=int, nargs="+", default=[12, 100])
    args = parser.parse_args()
    print(f"{'slices':>6}  {'run':<4}  {'bot commits':>11}  {'people':>6}  {'longest mid-rollout PR':>22}")
    for slices in args.slices:
        good, bad = measured(slices, 0.1), measured(slices, 2.0)
        print(f"{slices:>6}  good  {good['forward']:>11}  {2:>6}  {good['mid']:>17} lines")
        print(f"{slices:>6}  bad   {bad['forward'] + bad['back']:>11}  {1:>6}  {bad['mid']:>17} lines"
              f"  ({bad['forward']} forward, {bad['back']} back)")


if __name__ == "__main__":
    main()
