"""Human-facing text (tables, reports) from Jinja2 templates in `templates/` (the package
`kubectl_disagg.templates` once installed).

Only text meant for people goes through here; manifests are built as data.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TypeVar

import jinja2

_Value = TypeVar("_Value")


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("kubectl_disagg.templates", "."),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_template(name: str, **context: object) -> str:
    return _environment().get_template(name).render(**context)


def table(headers: list[str] | None, rows: Sequence[Sequence[object]], indent: str = "",
          right: tuple[int, ...] = ()) -> list[str]:
    """Rows of cells padded to their column's width, kubectl-style (two spaces apart): the one
    table builder. `right`: the columns aligned right (numbers); `headers` None: rows only."""
    lines_of = [headers, *rows] if headers is not None else list(rows)
    widths = [max(len(str(cell)) for cell in column) for column in zip(*lines_of)]
    lines: list[str] = []
    for row in lines_of:
        cells = [str(cell).rjust(width) if index in right else str(cell).ljust(width)
                 for index, (cell, width) in enumerate(zip(row, widths))]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def grouped_by_slice(items: Sequence[tuple[int, _Value]]) -> list[tuple[str, _Value]]:
    """Runs of consecutive slices that say the same thing, labelled "slice 3" or "slices 0-99".

    A set of 100 slices rolling in step reads as one line, not a hundred.
    """
    groups: list[tuple[int, int, _Value]] = []  # (first slice, last slice, what they say)
    for slice_index, value in items:
        if groups and groups[-1][2] == value and groups[-1][1] == slice_index - 1:
            groups[-1] = (groups[-1][0], slice_index, groups[-1][2])
        else:
            groups.append((slice_index, slice_index, value))
    return [(f"slice {first}" if first == last else f"slices {first}-{last}", value)
            for first, last, value in groups]
