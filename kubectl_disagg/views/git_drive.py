"""The rollout driver (`rollout step --gitops --push`) on a terminal: its `DrivePrinter`.

One line per step landed (its commit and subject: the subject carries the fleet's progress,
`wave 2 of 3 · slices 1-3 · 4 of 12 slices done`), a line for each thing the driver did on its
own (a remote that moved, an unpushed step dropped, a decision merged and by whom), and at the
end what it stopped at and the command that goes on. Everything on stderr, as the step's
progress; `quiet` (-q, for CI logs) leaves out the notes, not the steps or the end.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from kubectl_disagg.exits import StepExit
from kubectl_disagg.gitops.decisions import ABORT, ANALYSIS, PAUSE, WAVE
from kubectl_disagg.rollout.git_drive import Approval, Decision, Stepped
from kubectl_disagg.rollout.git_step import SetStep
from kubectl_disagg.rollout.run import StepOptions
from kubectl_disagg.views.invocation import command_line
from kubectl_disagg.views.step_console import Console

WHY = {WAVE: "a wave starts", ANALYSIS: "an analysis verdict opens the next wave", PAUSE: "a pause is reached",
       ABORT: "the rollout is aborted: its rollback starts"}


class DriveConsole:
    """The driver's lines on stderr; `again` is the command that goes on (as the user typed it)."""

    def __init__(self, files: Sequence[str], remote: str, quiet: bool = False, extra: str = ""):
        self.files, self.remote, self.quiet = files, remote, quiet
        self.again = command_line("step", gitops=True, files=files,
                                  flags=f"--until-complete --push {remote}{' ' + extra if extra else ''}")

    def _say(self, line: str) -> None:
        click.echo(line, err=True)

    def landed(self, commit: str, subject: str, kind: str) -> None:
        self._say(f"{commit[:12]} {subject}")

    def note(self, event: str, *details: str) -> None:
        if self.quiet:
            return
        if event == "moved":
            remote, branch = details
            self._say(f"{remote}/{branch} moved while the step was decided: the step was dropped, deciding again")
        elif event == "dropped":
            self._say("dropped the step commit(s) that never reached the remote (deciding again): " +
                      "; ".join(details))

    def approved(self, approval: Approval) -> None:
        by = f"by {approval.by}" if approval.by is not None else "by a fast-forward (git does not say who)"
        self._say(f"decision {approval.branch} merged {by} ({approval.merge[:12]})")

    def decision(self, decision: Decision) -> None:
        state = "still waits for review" if decision.pending else "waits for review"
        self._say(f"decision: {WHY.get(decision.kind, decision.kind)}: {decision.subject}")
        self._say(f"  {decision.commit[:12]} on branch {decision.branch} of {self.remote} {state}: "
                  "review it and merge it, or close it")
        self._say(f"  then: {self.again}")

    def held(self, steps: Sequence[Stepped]) -> None:
        self._say("held: the RolloutPolicy holds the rollout; a person decides:")
        for step in steps:
            for reason in step.reasons:
                self._say(f"  {step.ds.name}: {reason}")
        self._say(f"  commit and push that verb (or merge its pull request), then: {self.again}")

    def refused(self, branch: str, words: Sequence[str]) -> None:
        self._say(f"error: {self.remote} refused the push to {branch} (a protected branch?); nothing landed:")
        for word in words:
            self._say(f"  {word}")
        self._say("  let the driver push there, or send every step through review: --review all")

    def not_synced(self, commit: str, subject: str, steps: Sequence[Stepped]) -> None:
        self._say(f"timed out: the cluster does not show {commit[:12]} ({subject}) of {self.remote}: "
                  "Argo CD has not applied it, or its new revision is not ready; nothing written")
        for step in steps:
            for reason in step.reasons:
                self._say(f"  {step.ds.name}: {reason}")
        self._say(f"  then: {self.again}")

    def stopped(self, code: StepExit, steps: Sequence[Stepped]) -> None:
        self._say(f"stopped: {code.help.split(':')[0]} (exit {int(code)})")
        for step in steps:
            for reason in step.reasons:
                self._say(f"  {step.ds.name}: {reason}")

    def complete(self, landed: int) -> None:
        self._say(f"complete: nothing left to roll ({landed} step{'s' if landed != 1 else ''} landed by this run)")


class StepLines(Console):
    """The step's own printer inside the driver: its progress (an analysis measured) and its
    errors, not its report: the driver prints one line per step (`DriveConsole.landed`)."""

    def written(self, results: Sequence[SetStep], how: StepOptions, revision: str | None) -> None:
        pass
