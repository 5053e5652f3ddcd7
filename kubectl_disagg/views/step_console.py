"""`rollout step` on a terminal: the `run.StepPrinter` the command hands the run.

stdout for reports (text through templates/step.txt.j2, or a stream of YAML/JSON documents; a
run through git: what it wrote, views/gitops_report.py, and the pull request's description),
stderr for warnings, errors and progress: each pass of --until-complete ends with one progress line of the fleet
(views/fleet.py), redrawn in place on a terminal; piped, printed only when the pass is news to the reader
(views/fleet.py `news`: the fleet moved, a wave started or completed, a gate reached, the slices that wait
changed) or, while it only waits, once a minute by the run's clock, so a log shows the run is alive: what a
person reads grows with what changed, not with how long pods take to become ready (issue 51).
`quiet` (-q) prints that line only when a wave starts or completes, at a gate and at a rollback, then the
end and the errors.
"""

from __future__ import annotations

import math
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.delivery.fleet import fleet_of
from kubectl_disagg.core.delivery.outcome import Outcome

from kubectl_disagg.manifests.writer import to_json, to_yaml
from kubectl_disagg.rollout.git_step import SetStep
from kubectl_disagg.rollout.run import StepOptions
from kubectl_disagg.rollout.stepper import Pass, Retry
from kubectl_disagg.views import gitops_report
from kubectl_disagg.views.analysis_progress import AnalysisProgress
from kubectl_disagg.views.fleet import Beat, beat, line_due
from kubectl_disagg.views.step_report import format_text, refusal_lines, to_document, waiting


class Console:
    """stdout for reports, stderr for warnings, errors and progress (redrawn on a terminal)."""

    REDRAW_UP = "\x1b[{}F"  # cursor to the start of the line N lines up
    CLEAR_LINE = "\x1b[2K"
    CLEAR_BELOW = "\x1b[J"

    def __init__(self, output: str, quiet: bool = False, clock: Clock = SYSTEM_CLOCK):
        self.output, self.quiet, self.clock = output, quiet, clock
        self._documents = 0
        self._drawn = 0  # progress lines on screen that the next progress may overwrite
        self._stderr_tty = sys.stderr.isatty()
        self._warned: set[str] = set()
        self._said: Beat | None = None  # the beat of the progress line printed last (piped and -q)
        self._said_at = -math.inf  # when (the clock's monotonic seconds)

    def show(self, event: Pass | Retry, *, until_complete: bool) -> None:
        if isinstance(event, Retry):
            if event.partial.done:
                self.report(event.partial, only_changed=True)
            self.warn(f"{event.reason}; reading the state again")
            return
        for warning in event.reconciliation.warnings:
            self.warn(warning, once=until_complete)
        if not until_complete or event.done:
            self.report(event, only_changed=until_complete)
        if (until_complete or self.quiet) and not event.dry_run:
            self.progress(event, until_complete=until_complete)  # each pass ends with the fleet's progress line
            # (a single report says it all)

    def report(self, step: Pass, *, only_changed: bool = False) -> None:
        if self.quiet and self.output == "text":
            return
        if self.output == "text":
            text = format_text(step, only_changed=only_changed)
        elif self.output == "yaml":
            text = ("---\n" if self._documents else "") + to_yaml(to_document(step))
        else:
            text = to_json(to_document(step))
        self._documents += 1
        self._settle()
        click.echo(text, nl=False)

    def warn(self, message: str, *, once: bool = False) -> None:
        if once and message in self._warned or self.quiet:
            return
        self._warned.add(message)
        self._settle()
        click.echo(f"Warning: {message}", err=True)

    def error(self, lines: list[str]) -> None:
        self._settle()
        for text in lines:
            click.echo(text, err=True)

    def refused_writes(self, step: Pass) -> None:
        refused = step.refused_writes
        self.error([*(line for planned in refused for line in refusal_lines(step, planned)),
                    f"disaggregatedset/{step.ds.name} in {step.namespace}: the API server would refuse "
                    f"{len(refused)} of this pass's {len(step.planned)} writes (server dry run: nothing was changed)"])

    def analysis_progress(self, gate: str) -> AnalysisProgress:
        self._settle()
        return AnalysisProgress(gate)

    def written(self, results: Sequence[SetStep], how: StepOptions, revision: str | None) -> None:
        """A run through git, as written: its report (stdout), each set whose --wait ran out
        (stderr), the pull request's description into `how.pr_description` (nothing advanced:
        none) and the commit `revision` made, if any (stderr)."""
        self._settle()
        click.echo(gitops_report.format_results(results, self.output), nl=False)
        click.echo("".join(f"{line}\n" for line in gitops_report.timed_out(results, how.deadline.seconds)),
                   err=True, nl=False)
        if how.pr_description and any(result.step.outcome == Outcome.ADVANCED for result in results):
            Path(how.pr_description).write_text(gitops_report.format_pr_descriptions(results), encoding="utf-8")
        if revision is not None:
            click.echo(f"committed {revision[:12]}{f' on new branch {how.branch}' if how.branch else ''}", err=True)

    def finished(self, step: Pass) -> None:
        if self.output == "text":
            self._settle()
            what = "rollback" if step.reconciliation.returning else "rollout"
            click.echo(f"disaggregatedset/{step.ds.name} in {step.namespace}: {what} complete at revision "
                       f"{step.ds.revision}")
        else:
            self.report(step)  # the stream of documents ends with the one that says complete

    def progress(self, step: Pass, *, until_complete: bool = False) -> None:
        lines = format_text(step, progress=True).splitlines()
        now = beat(fleet_of(step.ds, step.reconciliation), waiting(step))
        if self.quiet or not self._stderr_tty:  # a line per pass that is news (views/fleet.py `line_due`)
            if line_due(self._said, now, quiet=self.quiet, silent_for=self.clock.monotonic() - self._said_at,
                        until_complete=until_complete):
                click.echo("".join(f"{text}\n" for text in lines), err=True, nl=False)
                self._said, self._said_at = now, self.clock.monotonic()
            return
        # Redrawing moves up one screen row per line: a line that wrapped would break it.
        width = shutil.get_terminal_size().columns
        lines = [text if len(text) < width else text[:width - 2] + "…" for text in lines]
        redraw = self.REDRAW_UP.format(self._drawn) + self.CLEAR_BELOW if self._drawn else ""
        click.echo(redraw + "".join(f"{self.CLEAR_LINE}{text}\n" for text in lines), err=True, nl=False)
        self._drawn = len(lines)

    def _settle(self) -> None:
        """Anything else printed keeps the progress block on screen: the next one starts below."""
        self._drawn = 0
