"""An analysis gate's progress on stderr: a bar per check on a terminal, one line per measurement elsewhere."""

from __future__ import annotations

import sys
from typing import TextIO

import click

from kubectl_disagg.core.delivery.analysis import FAILED, PASSED
from kubectl_disagg.rollout.analysis import GateRun

BAR_WIDTH = 20


def progress_lines(run: GateRun) -> list[str]:
    """One line per check: `ttft   [########------------] 2/5  0.31 < 0.5`."""
    width = max(len(verdict.check.name) for verdict in run.verdicts)
    lines = []
    for verdict in run.verdicts:
        check, done = verdict.check, len(verdict.judged)
        filled = BAR_WIDTH * done // check.count
        mark = {PASSED: "passed", FAILED: "FAILED"}.get(verdict.phase, "")
        last = verdict.judged[-1].why if verdict.judged else "first measurement"
        lines.append(f"{check.name:<{width}} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {done}/{check.count}"
                     f"  {last}" + (f"  {mark}" if mark else ""))
    return lines


class AnalysisProgress:
    """The callback `run_gate` reports to: redrawn in place on a terminal."""

    def __init__(self, gate: str, stream: TextIO | None = None):
        self.gate, self.stream = gate, stream or sys.stderr
        self.tty = self.stream.isatty()
        self._drawn = 0
        self._counts: dict[str, int] = {}

    def __call__(self, run: GateRun) -> None:
        lines = progress_lines(run)
        if self.tty:
            if self._drawn:
                self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = len(lines)
            click.echo("\n".join(lines), file=self.stream)
        else:
            for verdict, line in zip(run.verdicts, lines):  # only the checks just measured
                if self._counts.get(verdict.check.name) != len(verdict.judged):
                    click.echo(f"analysis {self.gate}: {line}", file=self.stream)
                self._counts[verdict.check.name] = len(verdict.judged)
