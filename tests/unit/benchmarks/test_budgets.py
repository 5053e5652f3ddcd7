"""benchmarks/budgets.py: each budget line says the figure, the floor, how far apart, the budget
and PASS or OVER, and the verdict is the medians' (issue 30)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import budgets  # noqa: E402


def test_above_passes_at_the_budget_and_is_over_past_it():
    ok, line = budgets.above("render", [0.150, 0.140, 0.200], [0.080, 0.090, 0.300], "import click, yaml", 0.060)
    assert ok  # medians 150 and 90 ms: 60 ms above, at the budget
    assert line == ("- PASS  render: 150 ms (140–200 ms, 3 runs); floor, import click, yaml: 90 ms (80–300 ms, "
                    "3 runs); +60 ms above it; budget ≤ floor + 60 ms")
    ok, line = budgets.above("render", [0.151], [0.090], "the floor", 0.060)
    assert not ok and line.startswith("- OVER  render: 151 ms") and "+61 ms above it" in line


def test_above_below_the_floor_says_so():
    ok, line = budgets.above("status", [0.070], [0.080], "the floor", 0.060)
    assert ok and "−10 ms above it" in line


def test_times_compares_medians_as_a_ratio():
    ok, line = budgets.times("step", [11.0, 12.0, 40.0], [10.0, 11.0, 11.5], "the same writes", 1.10, unit=budgets.s)
    assert ok  # 12.0 / 11.0 = 1.09: a slow outlier run does not move a median
    assert line == ("- PASS  step: 12.00 s (11.00–40.00 s, 3 runs); floor, the same writes: 11.00 s "
                    "(10.00–11.50 s, 3 runs); 1.09× the floor; budget ≤ 1.10× the floor")
    ok, line = budgets.times("step", [12.5], [11.0], "the same writes", 1.10, unit=budgets.s)
    assert not ok and "1.14× the floor" in line and line.startswith("- OVER")


def test_print_budgets_counts_the_over(capsys):
    budgets.print_budgets([(True, "- PASS  a"), (False, "- OVER  b")])
    out = capsys.readouterr().out
    assert "- PASS  a\n- OVER  b\n" in out and out.rstrip().endswith("1 of 2 budget(s) OVER")
    budgets.print_budgets([(True, "- PASS  a")])
    assert capsys.readouterr().out.rstrip().endswith("All 1 budget(s) hold.")
