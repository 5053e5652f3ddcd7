"""A run.StepPrinter that keeps what it was given."""

from __future__ import annotations



class Printer:
    """A `run.StepPrinter` that keeps what it was given."""

    def __init__(self):
        self.shown, self.reports, self.warnings, self.errors, self.finished_sets = [], [], [], [], []
        self.written_runs = []  # each run through git as written: (its sets' steps, the commit made)

    def show(self, event, *, until_complete):
        self.shown.append(event)

    def report(self, step, *, only_changed=False):
        self.reports.append(step)

    def warn(self, message, *, once=False):
        self.warnings.append(message)

    def error(self, lines):
        self.errors.extend(lines)

    def finished(self, step):
        self.finished_sets.append(step.ds.name)

    def written(self, results, how, revision):
        self.written_runs.append((list(results), revision))

    def refused_writes(self, step):
        self.errors.append("refused writes")
