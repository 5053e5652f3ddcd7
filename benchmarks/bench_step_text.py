"""What a person reads of `rollout step --until-complete` at fleet size (issue 39): lines printed.

Runs the command's own library call and Console (text, stderr piped) over the in-memory cluster
of the unit tests with a RolloutPolicy (tests/fakes/paced.py) (a canary, 25 %, 100 %; `maxSlicesInFlight: 3`), the LWS
ready one watch after each scale (its `Lagging`), as tests/unit/views/test_fleet_text.py does:

- 100 slices, from the start to the canary's gate (exit 7): budget ≤ 40 lines;
- 12 slices, the whole rollout (promoted at each gate): budget ≤ 150 lines.

The floor is one line per pass that changed something (a run cannot say less and still say
each step). A report like the others (PASS/OVER), not a gate.

    python benchmarks/bench_step_text.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kubectl_disagg.core.delivery.policy import RolloutPolicy  # noqa: E402
from kubectl_disagg.views.step_console import Console  # noqa: E402
from tests.support.sets import fleet  # noqa: E402
from tests.fakes.paced import Lagging  # noqa: E402
from tests.support.fleet_text import CANARY_25_100, lines, stepped  # noqa: E402


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


def main() -> None:
    print("rollout step --until-complete, lines a person reads (stdout and stderr, piped):\n")
    for slices, whole, budget, what in ((100, False, 40, "100 slices, start to the canary's gate"),
                                        (12, True, 150, "12 slices, 3 waves, the whole rollout")):
        printed, passes = measure(slices, whole)
        verdict = "PASS" if printed <= budget else "OVER"
        print(f"- {verdict}  {what}: {printed} lines; floor, one line per pass that changed something: "
              f"{passes}; budget ≤ {budget} lines")


if __name__ == "__main__":
    main()
