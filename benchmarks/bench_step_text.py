"""What a person reads of `rollout step --until-complete` at fleet size (issues 39 and 51): lines printed.

Runs the command's own library call and Console (text, stderr piped) over the in-memory cluster
of the unit tests with a RolloutPolicy (tests/fakes/paced.py, tests/support/fleet_text.py).

Issue 39 (a canary, 25 %, 100 %, a pause after the first two; `maxSlicesInFlight: 3`; the LWS
ready one watch after each scale, `Lagging`):

- 100 slices, from the start to the canary's gate (exit 7): budget ≤ 40 lines;
- 12 slices, the whole rollout (promoted at each gate): budget ≤ 150 lines.

The floor is one line per pass that changed something (a run cannot say less and still say
each step).

Issue 51 (a canary of one slice with a pause, 25 %, the rest; `maxSlicesInFlight: 10`), at 12
and 100 slices, the LWS written ready 1 watch later (fast) and 4 (slow: a stale status, then the
prefill before the decode; `Slow`): `rollout plan` + `step --until-complete` to the canary's
gate (≤ 40), the whole rollout (plan, to the gate, promote, to the end: ≤ 150), `step
--until-complete -q` from the promote to the end (≤ one line per wave started or completed, per
gate, the end). Each figure must be the same for fast and slow readiness: what a person reads
grows with what changed, not with the waiting. A report like the others (PASS/OVER), not a gate.

    python benchmarks/bench_step_text.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kubectl_disagg.core.delivery.policy import RolloutPolicy, resolve_waves  # noqa: E402
from kubectl_disagg.views.step_console import Console  # noqa: E402
from tests.support.sets import fleet  # noqa: E402
from tests.fakes.paced import Lagging  # noqa: E402
from tests.support.fleet_text import (CANARY_25_100, CANARY_THEN_25_100, ISSUE_51_IN_FLIGHT, issue_51,  # noqa: E402
                                      lines, stepped)

FAST, SLOW = 1, 4  # watches of lag before the LWS written are ready


class Counting(Console):
    """The command's Console, counting the passes that changed something."""

    changed = 0

    def show(self, event, *, until_complete):
        Counting.changed += bool(getattr(event, "done", ()))
        super().show(event, until_complete=until_complete)


def measure(slices: int, whole: bool) -> tuple[int, int]:
    """(lines printed, passes that changed something)."""
    memory, ds = fleet(slices, RolloutPolicy("llm", "serving", "llm", CANARY_25_100, 3))
    Counting.changed = 0
    _, out, err = stepped(Lagging(memory), ds, promote_at_gates=whole, console=Counting)
    return lines(out, err), Counting.changed


def quiet_budget(slices: int) -> int:
    """-q from the promote to the end: each wave after the canary starts and completes, each gate
    after it, the end (the last wave's completion is the end)."""
    policy = RolloutPolicy("llm", "serving", "llm", CANARY_THEN_25_100, ISSUE_51_IN_FLIGHT)
    after = [wave for wave in resolve_waves(policy, slices)[1:] if wave.end > wave.start]
    return 2 * len(after) - 1 + sum(1 for wave in after[:-1] if wave.gated) + 1


def main() -> None:
    print("rollout step --until-complete, lines a person reads (stdout and stderr, piped):\n")
    for slices, whole, budget, what in ((100, False, 40, "100 slices, start to the canary's gate"),
                                        (12, True, 150, "12 slices, 3 waves, the whole rollout")):
        printed, passes = measure(slices, whole)
        verdict = "PASS" if printed <= budget else "OVER"
        print(f"- {verdict}  {what}: {printed} lines; floor, one line per pass that changed something: "
              f"{passes}; budget ≤ {budget} lines")
    print("\nissue 51: a canary of one slice (pause), 25 %, the rest, maxSlicesInFlight 10; "
          f"the LWS ready {FAST} watch (fast) and {SLOW} watches (slow) after each write:\n")
    for slices in (12, 100):
        fast, slow = issue_51(slices, FAST), issue_51(slices, SLOW)
        for what, budget, got in (("plan + step to the canary's gate", 40, (fast.to_gate, slow.to_gate)),
                                  ("the whole rollout (plan, to the gate, promote, to the end)", 150,
                                   (fast.whole, slow.whole)),
                                  ("step -q from the promote to the end", quiet_budget(slices),
                                   (fast.quiet_tail, slow.quiet_tail))):
            verdict = "PASS" if max(got) <= budget and got[0] == got[1] else "OVER"
            print(f"- {verdict}  {slices} slices, {what}: {got[0]} lines fast, {got[1]} slow; "
                  f"budget ≤ {budget}, the same in every run")


if __name__ == "__main__":
    main()
