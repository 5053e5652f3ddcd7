"""The plan as a picture: the terminal's stacked bars and the Mermaid source say the plan's numbers."""

from __future__ import annotations

import re

import pytest

from kubectl_disagg.core.controller.planner import PlanInputs, plan
from kubectl_disagg.core.api.rollout_config import RolloutConfig
from kubectl_disagg.views.plan_chart import NEW_CELL, OLD_CELL, WIDTH, mermaid, plan_chart, table, terminal


def inputs(initial, target, surge=1, unavailable=0):
    return PlanInputs(("prefill", "decode"), tuple(initial), tuple(target),
                      tuple(RolloutConfig(surge, unavailable) for _ in initial))


def bars(text: str) -> list[list[tuple[int, int]]]:
    """Per role drawn, per step column: (old cells, new cells), read back from the picture."""
    out = []
    for block in text.split("\n\n"):
        rows = [line for line in block.splitlines() if "┤" in line]
        columns = []
        for index in range(max(len(row.split("┤", 1)[1]) for row in rows) // 3 + 1):
            cells = [row.split("┤", 1)[1][index * 3:index * 3 + 2] for row in rows]
            if not any(cells):
                continue
            columns.append((sum(c == OLD_CELL * 2 for c in cells), sum(c == NEW_CELL * 2 for c in cells)))
        out.append(columns)
    return out


def test_a_small_plan_draws_one_row_per_replica_old_under_new():
    given = inputs((3, 2), (3, 2))
    steps = plan(given.initial_old, given.target, given.configs)
    drawn = bars(terminal(plan_chart(given, steps)))
    for role_index, columns in enumerate(drawn):
        assert columns == [(s.old[role_index], s.new[role_index]) for s in steps]


@pytest.mark.parametrize("initial,target", [((400, 12), (400, 12)), ((40, 12), (60, 12)), ((9, 1), (1, 9))])
def test_every_chart_fits_100_columns_and_keeps_the_first_the_last_and_the_current_step(initial, target):
    given = inputs(initial, target)
    steps = plan(given.initial_old, given.target, given.configs)
    current = len(steps) // 3
    text = terminal(plan_chart(given, steps, current))
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert text.count("▲ this step") == 2
    axis = [line for line in text.splitlines() if re.fullmatch(r"[ 0-9]+", line)]
    assert axis and all(line.split()[0] == "0" and line.split()[-1] == str(len(steps) - 1) for line in axis)


def test_mermaid_carries_the_series_and_marks_the_current_step():
    given = inputs((3, 2), (3, 2))
    steps = plan(given.initial_old, given.target, given.configs)
    chart = plan_chart(given, steps, 2)
    source = mermaid(chart, 0)
    assert source.splitlines()[1] == "xychart-beta"
    lines = re.findall(r"^    line \[(.*)\]$", source, re.M)
    series = [list(map(int, line.split(", "))) for line in lines]
    assert series == [[s.old[0] for s in steps], [s.new[0] for s in steps]]
    assert '"2 ◀"' in source and re.search(r"^    bar \[0, 0, 4, 0", source, re.M)
    assert "bar" not in mermaid(plan_chart(given, steps), 0)
    rows = table(chart)["rows"]
    assert [row["current"] for row in rows].index(True) == 2 and rows[2]["cells"][0] == "2 ◀ this step"


def test_rollout_plan_dash_o_chart(capsys):
    from kubectl_disagg.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["rollout", "plan", "--from", "3,2", "--roles", "prefill,decode", "-o", "chart"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert out.startswith("prefill: old ░ new █, limit 4 (target + surge), floor 3 (target - max unavailable)\n")
    assert "\ndecode: old ░ new █, limit 3" in out
