"""Budgets against floors (issue 30): one line per budget, the figure beside its floor.

A floor is the least a process can do for the same answer, measured in the same run as the
figure, alternating with it: for `render` the interpreter importing click and PyYAML, for
`rollout status` that plus TLS and the same two LISTs (`status_floor.py`), for the step the
same writes sent by a minimal client of our own (`write_floor.py`). A budget says how far
above its floor a figure may be, as a difference (`above`) or a ratio (`times`); every line
prints the figure, the floor, the difference or ratio, the budget and PASS or OVER.

The verdicts are a report, not a gate: the scripts exit 0 when a budget is OVER (see
BENCHMARKS.md, "Budgets against floors", for why).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def s(seconds: float) -> str:
    return f"{seconds:,.2f} s"


def spread(values: Sequence[float], unit=ms) -> str:
    """The median and, in brackets, the fastest and slowest run: `152 ms (124–190 ms, 15 runs)`."""
    low, high = unit(min(values)), unit(max(values))
    return f"{unit(statistics.median(values))} ({low.split()[0]}–{high}, {len(values)} runs)"


def above(what: str, figure: Sequence[float], floor: Sequence[float], floor_is: str, allowed: float,
          unit=ms) -> tuple[bool, str]:
    """At most `allowed` seconds above the floor, medians compared."""
    difference = statistics.median(figure) - statistics.median(floor)
    ok = difference <= allowed
    sign = "+" if difference >= 0 else "−"
    return ok, (f"- {'PASS' if ok else 'OVER'}  {what}: {spread(figure, unit)}; floor, {floor_is}: "
                f"{spread(floor, unit)}; {sign}{unit(abs(difference))} above it; budget ≤ floor + {unit(allowed)}")


def times(what: str, figure: Sequence[float], floor: Sequence[float], floor_is: str, factor: float,
          unit=ms) -> tuple[bool, str]:
    """At most `factor` times the floor, medians compared."""
    ratio = statistics.median(figure) / statistics.median(floor)
    ok = ratio <= factor
    return ok, (f"- {'PASS' if ok else 'OVER'}  {what}: {spread(figure, unit)}; floor, {floor_is}: "
                f"{spread(floor, unit)}; {ratio:.2f}× the floor; budget ≤ {factor:.2f}× the floor")


def print_budgets(lines: Sequence[tuple[bool, str]]) -> None:
    """The budgets block every benchmark prints the same way."""
    print("\nBudgets against floors (issue 30; each floor measured in the same run, alternating):\n")
    for _, line in lines:
        print(line)
    over = sum(not ok for ok, _ in lines)
    print(f"\n{over} of {len(lines)} budget(s) OVER" if over else f"\nAll {len(lines)} budget(s) hold.")
