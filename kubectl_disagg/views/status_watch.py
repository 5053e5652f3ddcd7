"""`rollout status -w` as people follow it: each look redrawn in place on a terminal (as
`kubectl argo rollouts get rollout -w` does), and piped only the lines that changed since the
look before, under the line of the set they belong to. The `write` that
`rollout.status.watch_status` calls with each look's text. Pure but for its stream.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from typing import TextIO

REDRAW_UP = "\x1b[{}F"  # cursor to the start of the line N lines up
CLEAR_BELOW = "\x1b[J"
HOME_AND_CLEAR = "\x1b[H\x1b[2J"  # a look taller than the screen: start it at the top
SET_LINE = "disaggregatedset/"  # the first line of each set's block (templates/status.txt.j2)


def changed_lines(before: list[str], after: list[str]) -> list[str]:
    """The lines of `after` that `before` did not have, each under the line of the set it
    belongs to (once), in order: what a piped `status -w` prints of a later look."""
    seen = set(before)
    out: list[str] = []
    header = None
    for line in after:
        if line.startswith(SET_LINE):
            header = line
        if line in seen or not line.strip():
            continue
        if header is not None and header not in out and line != header:
            out.append(header)
        out.append(line)
    return out


class LookWriter:
    """Writes each look of `status -w`: whole the first time; then on a terminal over the
    previous one, piped only what changed (nothing when nothing did)."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None):
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self._previous: list[str] | None = None
        self._rows = 0  # screen rows the previous look took (a terminal)

    def __call__(self, text: str) -> None:
        lines = text.splitlines()
        if self._previous is None:
            self.stream.write(text)
        elif self.tty:
            self.stream.write(self._redraw() + text)
        else:
            changed = changed_lines(self._previous, lines)
            if changed:
                self.stream.write("".join(f"{line}\n" for line in changed))
        self.stream.flush()
        self._previous = lines
        if self.tty:
            self._rows = self._screen_rows(lines)

    def _redraw(self) -> str:
        size = shutil.get_terminal_size()
        if self._rows >= size.lines:
            return HOME_AND_CLEAR
        return REDRAW_UP.format(self._rows) + CLEAR_BELOW if self._rows else ""

    @staticmethod
    def _screen_rows(lines: list[str]) -> int:
        width = max(shutil.get_terminal_size().columns, 1)
        return sum(max(1, -(-len(line) // width)) for line in lines)


class DocumentWriter:
    """Writes each look of `status -w -o yaml|json` that differs from the last one written
    (nothing when nothing did): a YAML look after the first as a further document (`---`), so
    the whole output stays one stream a program reads."""

    def __init__(self, write: Callable[[str], object], output: str):
        self.write, self.output = write, output
        self._previous: str | None = None

    def __call__(self, text: str) -> None:
        if text == self._previous:
            return
        self.write(("---\n" if self._previous is not None and self.output == "yaml" else "") + text)
        self._previous = text
