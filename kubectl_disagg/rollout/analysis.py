"""One analysis gate run from its first measurement to its verdict (design §9.4).

The checks of a gate are measured side by side, each `count` times `interval` apart (the first at
once), through one `PrometheusClient`; the pure `core.delivery.analysis.judge` says after each measurement
whether a check passed, failed or runs on. A failed check ends the run at once (the gate fails);
the run ends passed when every check passed. The clock and the sleep are injected (tests run an
hour of measurements in no time), progress goes to a callback (the command draws it on stderr),
and the command's deadline bounds the whole run, each query with its resends included: a run that
cannot end in time is refused before its first measurement, and one that runs out of time (a
query the deadline cut short among them) ends without a verdict (`AnalysisTimeout`).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Callable

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.delivery import analysis
from kubectl_disagg.core.delivery.analysis import Check, Measurement, Sample, Verdict
from kubectl_disagg.core.api.durations import format_duration
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.position import ANALYSIS, Position
from kubectl_disagg.core.delivery.waves import Gate, State, WaveDecision
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.kube.client import PrometheusClient
from kubectl_disagg.kube.seam import ClusterSession
from kubectl_disagg.wait import Deadline, DeadlineExceeded

Query = Callable[[str], tuple[Sample, ...]]  # an expression -> its samples; raises UserError when no answer


class AnalysisTimeout(UserError):
    """The analysis ran out of --timeout before its verdict: nothing is recorded."""


class AnalysisBraked(Conflict):
    """A person paused or aborted the rollout (`rollout pause|abort`, no Lease needed) while its
    analysis ran: the run stops at its next wait, nothing is recorded, and the step reads the
    position again (a Conflict: the position moved under the pass), which holds or rolls back."""


@dataclass(frozen=True)
class GateRun:
    verdicts: tuple[Verdict, ...]

    @property
    def phase(self) -> str:
        return analysis.gate_phase(self.verdicts)

    @property
    def why(self) -> str:
        return "; ".join(verdict.why for verdict in self.verdicts
                         if self.phase != analysis.FAILED or verdict.phase == analysis.FAILED)


def least_duration(checks: list[Check]) -> float:
    """The shortest time in which every check can take its `count` measurements."""
    return max((check.count - 1) * check.interval for check in checks)


def run_gate(checks: list[Check], values: dict[str, str], query: Query, *, deadline: Deadline | None = None,
             clock: Clock = SYSTEM_CLOCK, sleep: Callable[[float], None] = time.sleep,
             progress: Callable[[GateRun], None] = lambda run: None) -> GateRun:
    """Measure `checks` (queries filled with `values`: see `analysis.placeholder_values`) until
    their verdict, within `deadline` (`query` is bounded by it too: see `gate_analysis`)."""
    if deadline is not None and least_duration(checks) > deadline.remaining():
        raise AnalysisTimeout(
            f"the analysis takes at least {format_duration(least_duration(checks))} (count × interval of "
            f"{', '.join(c.name for c in checks)}), more than {_left(deadline)}")
    started = _epoch(clock)
    taken: dict[str, list[Measurement]] = {check.name: [] for check in checks}
    while True:
        run = GateRun(tuple(analysis.judge(check, taken[check.name]) for check in checks))
        if run.phase != analysis.RUNNING:
            return run
        running = [check for check, verdict in zip(checks, run.verdicts) if verdict.phase == analysis.RUNNING]
        due = min(analysis.next_measurement_at(check, taken[check.name], started) for check in running)
        wait = due - _epoch(clock)
        if deadline is not None and (deadline.expired() or wait > deadline.remaining()):
            raise AnalysisTimeout(f"the analysis did not end within {_timeout(deadline)}: {run.why}")
        sleep(max(wait, 0.0))  # also when due already: the wait is where a brake is looked for
        for check in running:
            if analysis.next_measurement_at(check, taken[check.name], started) <= due:
                try:
                    taken[check.name].append(measure(check, values, query, clock))
                except DeadlineExceeded:  # cut short: no answer, and no failed measurement either
                    raise AnalysisTimeout(f"the analysis did not end within {_timeout(deadline)}: "
                                          f"{check.name} had no answer in time; {run.why}") from None
        progress(GateRun(tuple(analysis.judge(check, taken[check.name]) for check in checks)))


def _epoch(clock: Clock) -> float:
    """The wall time in epoch seconds: when a measurement was taken (recorded to the
    millisecond) and when the next one is due."""
    return clock.now().timestamp()


def _left(deadline: Deadline) -> str:
    """What the deadline leaves, as people say it: "the 4.9s left of --timeout 5s"."""
    return f"the {format_duration(deadline.remaining())} left of {_timeout(deadline)}"


def _timeout(deadline: Deadline | None) -> str:
    seconds = None if deadline is None else deadline.seconds
    return "--timeout" if seconds is None else f"--timeout {format_duration(seconds)}"


def measure(check: Check, values: dict[str, str], query: Query, clock: Clock) -> Measurement:
    """One measurement of `check` (its role filled in for {{role}}): its samples, or the error
    that stands for them (a failed one). A query the deadline cut short is no measurement:
    DeadlineExceeded goes on to the caller."""
    at = _epoch(clock)
    try:
        return Measurement(at, tuple(query(analysis.fill(check.query, {**values, "role": check.role}))))
    except DeadlineExceeded:
        raise
    except UserError as error:
        return Measurement(at, error="; ".join(error.lines()))


class GateAnalysis:
    """What a step does at an analysis gate that has no verdict yet: measure it, and give the
    position the verdict (the decision taken again from it then passes the gate or does the
    policy's onFailure). `query_for` makes the query function of a policy's Prometheus;
    `progress_for` the progress callback of a gate ("wave 1"); `keep_alive` is called at least
    every KEEP_ALIVE_SECONDS while it waits (the pass's Lease renewed); `deadline` bounds each
    run (the command's --timeout). `braked(ds, namespace)` is asked as often, before each wait
    (between measurements): a brake it names (a pause, an abort written meanwhile) ends the run
    without a verdict (`AnalysisBraked`)."""

    def __init__(self, query_for: Callable[[analysis.Prometheus], Query], *,
                 deadline: Deadline | None = None,
                 progress_for: Callable[[str], Callable[[GateRun], None]] = lambda gate: (lambda run: None),
                 clock: Clock = SYSTEM_CLOCK, sleep: Callable[[float], None] = time.sleep,
                 keep_alive: Callable[[], None] = lambda: None,
                 braked: Callable[[object, str], str | None] = lambda ds, namespace: None):
        self.query_for, self.deadline = query_for, deadline
        self.progress_for, self.clock, self.sleep, self.keep_alive = progress_for, clock, sleep, keep_alive
        self.braked = braked
        self.runs: list[tuple[int, GateRun]] = []  # (wave, run) of each analysis measured, in order

    def __call__(self, ds: DisaggregatedSet, namespace: str, decision: WaveDecision) -> Position | None:
        """The position with the verdict of the gate `decision` waits at, or None when it waits
        at no analysis without a verdict (a pause, a soak, a verdict already recorded)."""
        gate = pending_gate(decision)
        if gate is None:
            return None
        policy_analysis = ds.policy.analysis if ds.policy is not None else None
        assert isinstance(policy_analysis, analysis.Analysis)  # an analysis gate's policy, validated
        checks = [policy_analysis.check(name) for name in gate.checks]
        values = analysis.placeholder_values(ds.name, namespace, decision.moves_to,
                                             range(decision.waves[gate.wave].end))

        def wait(seconds: float) -> None:
            self._wait(seconds, lambda: self.braked(ds, namespace), gate.wave)

        run = run_gate(checks, values, self.query_for(policy_analysis.prometheus), deadline=self.deadline,
                       clock=self.clock, sleep=wait, progress=self.progress_for(f"wave {gate.wave + 1}"))
        self.runs.append((gate.wave, run))
        self.keep_alive()
        return decision.position.with_verdict(gate.wave, analysis.gate_record(run.verdicts, run.phase, run.why))

    def _wait(self, seconds: float, braked: Callable[[], str | None], wave: int) -> None:
        """Sleep `seconds` in stretches of at most KEEP_ALIVE_SECONDS, keeping the set's Lease
        alive in between (a pass holds it while its gate is measured, for minutes) and looking
        for a brake: one found ends the run here, before its next measurement."""
        end = self.clock.monotonic() + seconds
        while True:
            self.keep_alive()
            brake = braked()
            if brake is not None:
                raise AnalysisBraked(f"the analysis of wave {wave + 1} stopped without a verdict: {brake}")
            left = end - self.clock.monotonic()
            if left <= 0:
                return
            self.sleep(min(left, KEEP_ALIVE_SECONDS))


KEEP_ALIVE_SECONDS = 5.0  # a Lease lasts 30 s and is renewed after a third of it


def pending_gate(decision: WaveDecision) -> Gate | None:
    """The analysis gate `decision` waits at with no verdict recorded (every slice of its wave
    complete, nothing in flight), or None."""
    gate = decision.gate
    if gate is None or gate.kind != ANALYSIS or gate.failed or decision.state != State.AT_GATE:
        return None
    return gate if decision.position.verdict(gate.wave) is None else None


def gate_analysis(cluster: ClusterSession, deadline: Deadline, progress_for: Callable[[str], Callable[[GateRun], None]],
                  braked: Callable[[object, str], str | None] | None = None) -> GateAnalysis:
    """The GateAnalysis of a cluster session: Prometheus at its address, or through the session's
    API server (`cluster.client`, the kubeconfig's credentials) for a Service, every query bounded
    by `deadline` (its connection, its resends, its waits); the Lease the pass holds renewed while
    it waits, and `braked` asked as often (rollout/run.py's `Brakes`)."""
    def keep_alive() -> None:
        lease = getattr(cluster, "current_lease", None)  # the Lease the pass holds, if any
        if lease is not None and lease.held:
            lease.renew_if_due()

    def query_for(endpoint: analysis.Prometheus) -> Query:
        return functools.partial(PrometheusClient.for_endpoint(endpoint, cluster.client).query, deadline=deadline)

    return GateAnalysis(query_for, deadline=deadline, progress_for=progress_for, keep_alive=keep_alive,
                        braked=braked or (lambda ds, namespace: None), clock=deadline.clock)
