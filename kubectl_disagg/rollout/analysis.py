"""One analysis gate run from its first measurement to its verdict (spec §9.4).

The checks of a gate are measured side by side, each `count` times `interval` apart (the first at
once), through one `PrometheusClient`; the pure `core.analysis.judge` says after each measurement
whether a check passed, failed or runs on. A failed check ends the run at once (the gate fails);
the run ends passed when every check passed. The clock and the sleep are injected (tests run an
hour of measurements in no time), progress goes to a callback (the command draws it on stderr),
and `timeout` bounds the whole run: a run that cannot end in time is refused before its first
measurement, and one that runs out of time ends without a verdict (`AnalysisTimeout`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from kubectl_disagg.core import analysis
from kubectl_disagg.core.analysis import Check, Measurement, Verdict
from kubectl_disagg.core.durations import format_duration
from kubectl_disagg.errors import UserError

Query = Callable[[str], tuple]  # an expression -> its samples; raises UserError when no answer


class AnalysisTimeout(UserError):
    """The analysis ran out of --timeout before its verdict: nothing is recorded."""


@dataclass(frozen=True)
class GateRun:
    verdicts: tuple[Verdict, ...]

    @property
    def phase(self) -> str:
        phases = {verdict.phase for verdict in self.verdicts}
        if analysis.FAILED in phases:
            return analysis.FAILED
        return analysis.PASSED if phases == {analysis.PASSED} else analysis.RUNNING

    @property
    def why(self) -> str:
        return "; ".join(verdict.why for verdict in self.verdicts
                         if self.phase != analysis.FAILED or verdict.phase == analysis.FAILED)


def least_duration(checks: list[Check]) -> float:
    """The shortest time in which every check can take its `count` measurements."""
    return max((check.count - 1) * check.interval for check in checks)


def run_gate(checks: list[Check], values: dict[str, str], query: Query, *, timeout: float | None = None,
             clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
             progress: Callable[[GateRun], None] = lambda run: None) -> GateRun:
    """Measure `checks` (queries filled with `values`: see `analysis.placeholder_values`) until their verdict."""
    if timeout is not None and least_duration(checks) > timeout:
        raise AnalysisTimeout(
            f"the analysis takes at least {format_duration(least_duration(checks))} (count × interval of "
            f"{', '.join(c.name for c in checks)}), more than --timeout {format_duration(timeout)}")
    started = clock()
    taken: dict[str, list[Measurement]] = {check.name: [] for check in checks}
    while True:
        run = GateRun(tuple(analysis.judge(check, taken[check.name]) for check in checks))
        if run.phase != analysis.RUNNING:
            return run
        running = [check for check, verdict in zip(checks, run.verdicts) if verdict.phase == analysis.RUNNING]
        due = min(analysis.next_measurement_at(check, taken[check.name], started) for check in running)
        if timeout is not None and max(due, clock()) > started + timeout:
            raise AnalysisTimeout(f"the analysis did not end within --timeout {format_duration(timeout)}: "
                                  f"{run.why}")
        wait = due - clock()
        if wait > 0:
            sleep(wait)
        for check in running:
            if analysis.next_measurement_at(check, taken[check.name], started) <= due:
                taken[check.name].append(measure(check, values, query, clock))
        progress(GateRun(tuple(analysis.judge(check, taken[check.name]) for check in checks)))


def measure(check: Check, values: dict[str, str], query: Query, clock: Callable[[], float]) -> Measurement:
    """One measurement of `check` (its role filled in for {{role}}): its samples, or the error
    that stands for them (a failed one)."""
    at = clock()
    try:
        return Measurement(at, tuple(query(analysis.fill(check.query, {**values, "role": check.role}))))
    except UserError as error:
        return Measurement(at, error="; ".join(error.lines()))
