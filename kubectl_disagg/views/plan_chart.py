"""A rollout plan as a picture: per role, old and new replicas over the steps. Pure.

Two drawings of the same data (`PlanChart`):
- `mermaid`: one Mermaid `xychart-beta` per role (GitHub and GitLab render it in Markdown),
  old and new as lines, the current step as a highlighted bar; the pull request of a
  git-driven step shows it above the same numbers in a table (`table`);
- `terminal`: stacked bars of Unicode blocks (old ░ under new █) per step, at most 100
  columns wide (`rollout plan -o chart`).

The y axis of both reaches target + max surge, the most old + new a role may run, so a bar
touching the top is a step that uses the whole surge budget.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from kubectl_disagg.core.controller.planner import PlanInputs, Step

WIDTH = 100  # terminal columns the chart may take
HEIGHT = 8  # rows of a terminal chart when a role's counts do not fit one replica per row
OLD_COLOR, NEW_COLOR, MARK_COLOR = "#8c959f", "#0969da", "#fff8c5"  # grey, blue, pale yellow: GitHub's own
OLD_CELL, NEW_CELL = "░", "█"


@dataclass(frozen=True)
class PlanChart:
    """`roles`: names; `steps`: the trajectory (Steps, the initial state first); `current`: the
    index of the step to mark, or None; `ceilings`: target + surge per role; `floors`: target −
    max unavailable per role, None for a role that scales up (it never had its target)."""

    roles: tuple[str, ...]
    steps: tuple[Step, ...]
    current: int | None
    ceilings: tuple[int, ...]
    floors: tuple[int | None, ...]

    def series(self, role_index: int) -> tuple[list[int], list[int]]:
        return [s.old[role_index] for s in self.steps], [s.new[role_index] for s in self.steps]

    def y_max(self, role_index: int) -> int:
        old, new = self.series(role_index)
        return max(self.ceilings[role_index], *(o + n for o, n in zip(old, new)), 1)


def plan_chart(inputs: PlanInputs, steps: Sequence[Step], current: int | None = None) -> PlanChart:
    ceilings = tuple(t + c.surge for t, c in zip(inputs.target, inputs.configs))
    floors = tuple(t - c.unavailable if init >= t else None
                   for init, t, c in zip(inputs.initial_old, inputs.target, inputs.configs))
    return PlanChart(tuple(inputs.roles), tuple(steps), current, ceilings, floors)


# --- Mermaid ------------------------------------------------------------------------------------


def mermaid(chart: PlanChart, role_index: int, title: str | None = None) -> str:
    """One role's chart as Mermaid source (the lines inside a ```mermaid block)."""
    old, new = chart.series(role_index)
    role = chart.roles[role_index]
    marked = chart.current is not None and 0 <= chart.current < len(chart.steps)
    palette = ", ".join([MARK_COLOR, OLD_COLOR, NEW_COLOR] if marked else [OLD_COLOR, NEW_COLOR])
    config = {"themeVariables": {"xyChart": {"plotColorPalette": palette}}}
    labels = [_step_label(index, chart.current) for index in range(len(chart.steps))]
    top = chart.y_max(role_index)
    heading = title or f"{role}: old (grey) and new (blue) replicas per step"
    lines = [f"%%{{init: {json.dumps(config)}}}%%", "xychart-beta",
             f"    title {json.dumps(heading, ensure_ascii=False)}",
             f"    x-axis \"step\" [{', '.join(json.dumps(label, ensure_ascii=False) for label in labels)}]",
             f"    y-axis \"replicas of {role}\" 0 --> {top}"]
    if marked:
        lines.append(f"    bar [{', '.join(str(top if i == chart.current else 0) for i in range(len(chart.steps)))}]")
    lines.append(f"    line [{', '.join(map(str, old))}]")
    lines.append(f"    line [{', '.join(map(str, new))}]")
    return "\n".join(lines)


def _step_label(index: int, current: int | None) -> str:
    return f"{index} ◀" if index == current else str(index)


def table(chart: PlanChart) -> dict[str, object]:
    """The chart's numbers for a table beneath it: a header and a row per step."""
    header = ["step", "kind"]
    for role in chart.roles:
        header += [f"{role} old", f"{role} new", f"{role} old+new / limit"]
    rows = []
    for index, step in enumerate(chart.steps):
        cells = [f"{index} ◀ this step" if index == chart.current else str(index), str(step.kind)]
        for role_index, ceiling in enumerate(chart.ceilings):
            old, new = step.old[role_index], step.new[role_index]
            cells += [str(old), str(new), f"{old + new} / {ceiling}"]
        rows.append({"cells": cells, "current": index == chart.current})
    return {"header": header, "rows": rows}


# --- terminal ----------------------------------------------------------------------------------


def terminal(chart: PlanChart, width: int = WIDTH) -> str:
    """Every role's stacked bars, one role under the other, each line at most `width` columns."""
    return "\n".join(_terminal_role(chart, index, width) for index in range(len(chart.roles)))


def _terminal_role(chart: PlanChart, role_index: int, width: int) -> str:
    old, new = chart.series(role_index)
    top = chart.y_max(role_index)
    rows = top if top <= HEIGHT * 2 else HEIGHT
    gutter = len(str(top)) + 2  # "12 ┤"
    columns = max(1, (width - gutter - 1) // 3)  # each step: a 2-cell bar and a space
    shown = _sampled(len(chart.steps), columns, chart.current)
    floor = chart.floors[role_index]
    ceiling = chart.ceilings[role_index]
    legend = f"{chart.roles[role_index]}: old {OLD_CELL} new {NEW_CELL}, limit {ceiling} (target + surge)"
    if floor is not None:
        legend += f", floor {floor} (target - max unavailable)"
    if len(shown) < len(chart.steps):
        legend += f"; {len(shown)} of {len(chart.steps)} steps shown"
    lines = textwrap.wrap(legend, width, subsequent_indent="  ", break_on_hyphens=False)
    cells = []  # per shown step: (old cells, total cells)
    for index in shown:
        total = old[index] + new[index]
        cells.append((round(old[index] * rows / top), round(total * rows / top)))
    for level in range(rows, 0, -1):
        value = round(level * top / rows)
        label = str(value) if rows == top or level in (rows, 1) or value in (ceiling, floor) else ""
        row = label.rjust(gutter - 2) + " ┤"
        for old_cells, total_cells in cells:
            cell = OLD_CELL if level <= old_cells else NEW_CELL if level <= total_cells else " "
            row += cell * 2 + " "
        lines.append(row.rstrip())
    axis = "0".rjust(gutter - 2) + " └" + "───" * len(shown)
    lines.append(axis)
    marks = [" "] * (gutter + 3 * len(shown))
    for position, index in enumerate(shown):
        text = str(index)
        start = gutter + 3 * position
        if all(c == " " for c in marks[max(0, start - 1):start + len(text)]):
            marks[start:start + len(text)] = text
    lines.append("".join(marks).rstrip())
    if chart.current is not None and chart.current in shown:
        at = gutter + 3 * shown.index(chart.current)
        lines.append(" " * at + "▲ this step" if at + 11 <= width else " " * (at - 10) + "this step ▲")
    return "\n".join(lines) + "\n"


def _sampled(count: int, columns: int, current: int | None) -> list[int]:
    """At most `columns` step indexes spread over 0..count-1: the first, the last and `current`."""
    if count <= columns:
        return list(range(count))
    keep = columns - (1 if current is not None else 0)
    picked = {round(i * (count - 1) / (keep - 1)) for i in range(keep)} if keep > 1 else {0}
    if current is not None:
        picked.add(current)
    return sorted(picked)[:columns] if current is None else sorted(picked)


def format_charts(plans: Sequence[tuple[str | None, PlanInputs, Sequence[Step]]], width: int = WIDTH) -> str:
    """`rollout plan -o chart`: each plan's title (when it has one) and its chart."""
    parts = []
    for title, inputs, steps in plans:
        chart = terminal(plan_chart(inputs, steps), width)
        parts.append(f"{title}\n{chart}" if title else chart)
    return "\n".join(parts)
