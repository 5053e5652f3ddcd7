"""`rollout step --until-complete` over the paced in-memory cluster as the command prints it
(text, stderr piped): the fleet-sized text's tests and `make bench` (benchmarks/bench_step_text.py).

`Slow` is the LWS controller `lag` watches behind each write (first a stale status, then the
prefill ready before the decode): the same rollout, readiness fast or slow; `issue_51` counts
the lines a person reads of issue 51's rollout (plan, to the canary's gate, promote, to the end)."""

from __future__ import annotations

import contextlib
import datetime
import io
from dataclasses import dataclass

from kubectl_disagg.clock import Clock
from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.exits import StepExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.views.invocation import Invocation
from kubectl_disagg.wait import Deadline
from kubectl_disagg.views.step_console import Console
from tests.fakes.paced import PacedCluster, Printer
from tests.support.sets import fleet

# issue 39's fleet: a canary, 25 % and 100 %, a pause after each of the first two
CANARY_25_100 = (Wave(1, pause=True), Wave("25%", pause=True), Wave("100%"))
# issue 51's: a canary of one slice with a pause, then 25 %, then the rest, at most 10 slices in flight
CANARY_THEN_25_100 = (Wave(1, pause=True), Wave("25%"), Wave("100%"))
ISSUE_51_IN_FLIGHT = 10


class StillClock(Clock):
    """A clock whose monotonic seconds stand still (a run of the in-memory cluster takes no time)
    unless `tick` moves them: the Console's once-a-minute line only where a test asks for it."""

    def __init__(self, seconds: float = 0.0):
        self.seconds = seconds

    def now(self) -> datetime.datetime:
        return datetime.datetime(2026, 12, 8, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=self.seconds)

    def monotonic(self) -> float:
        return self.seconds

    def tick(self, seconds: float) -> None:
        self.seconds += seconds


class Slow(PacedCluster):
    """The LWS controller `lag` watches behind: at the first watch after a write the LWS written
    report a stale status, then (lag > 1) the prefill is ready before the decode, all ready at
    watch lag + 1 (lag 1: ready at the second watch, as `Lagging`). `tick`: seconds each watch
    moves `clock` (the time the waiting took)."""

    def __init__(self, memory, lag: int = 1, clock: StillClock | None = None, tick: float = 0.0):
        super().__init__(memory)
        self.lag, self.clock, self.tick = lag, clock, tick
        self._seen, self._since, self._written = 0, 0, frozenset()

    def wait_for_change(self, set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet",
                        state_version=None):
        self.watches += 1
        self.between(self, self.watches)
        if self.clock is not None:
            self.clock.tick(self.tick)
        if len(self.actions) != self._seen:  # a pass wrote since: the readiness of those LWS lags anew
            self._written = frozenset(action.name for action in self.actions[self._seen:])
            self._seen, self._since = len(self.actions), 0
        self._since += 1
        written, since = self._written, self._since
        if since == 1:
            self.memory.settle(stale=written)
        elif since <= self.lag:
            self.memory.settle(ready_cap=lambda name, replicas: 0 if name in written and (
                since == 2 or "decode" in name) else replicas)
        else:
            self.memory.settle()
        return True


def stepped(cluster, ds, *, quiet=False, promote_at_gates=False, console=Console, clock=None):
    """`rollout step --until-complete` as the command runs it (text): (exit code, stdout, stderr);
    with `promote_at_gates`, `rollout promote` at each gate and the command run again."""
    out, err = io.StringIO(), io.StringIO()
    clock = clock or StillClock()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        while True:
            code = run.step(ClusterStore(cluster, [ds]), console("text", quiet=quiet, clock=clock),
                            run.StepOptions(until_complete=True, deadline=Deadline.after(60)))
            if code != StepExit.HELD or not promote_at_gates:
                break
            promote(cluster, ds)
    return code, out.getvalue(), err.getvalue()


def promote(cluster, ds) -> None:
    """`rollout promote`, as a person runs it at a gate."""
    run_verb(ClusterStore(cluster, [ds], None), "promote", Printer())


def plan_text(cluster, ds) -> str:
    """`rollout plan -f ds.yaml` of the live set, as the command prints it."""
    from kubectl_disagg.rollout.plan import live_plans
    from kubectl_disagg.views.plan import format_live

    live = live_plans(ClusterStore(cluster, [ds], "serving"), StillClock().now())
    return format_live(live, "text", Invocation(files=("ds.yaml",)))


def lines(*texts: str) -> int:
    return sum(len(text.splitlines()) for text in texts)


@dataclass(frozen=True)
class Read:
    """What a person reads of issue 51's rollout, in lines: `rollout plan`, then `rollout step
    --until-complete` to the canary's gate (`to_gate`, the plan included), `whole` (the plan, to
    the gate, `rollout promote`, `--until-complete` to the end) and, in a second run of the same
    rollout, `quiet_tail`: `rollout step --until-complete -q` from the promote to the end
    (`quiet_text`, what it printed)."""

    plan: int
    to_gate: int
    whole: int
    quiet_tail: int
    quiet_text: str


def issue_51(slices: int, lag: int, *, through: bool = True) -> Read:
    """Issue 51's rollout over `slices`, the LWS ready `lag` watches after each write (`Slow`);
    without `through`, only the plan and the run to the canary's gate (the rest counted 0)."""
    def rollout():
        memory, ds = fleet(slices, RolloutPolicy("llm", "serving", "llm", CANARY_THEN_25_100, ISSUE_51_IN_FLIGHT))
        return Slow(memory, lag), ds

    cluster, ds = rollout()
    plan = lines(plan_text(cluster, ds))
    code, out, err = stepped(cluster, ds)
    assert code == StepExit.HELD, err
    to_gate = plan + lines(out, err)
    if not through:
        return Read(plan, to_gate, 0, 0, "")
    promote(cluster, ds)
    code, out, err = stepped(cluster, ds)
    assert code == StepExit.OK, err
    whole = to_gate + lines(out, err)
    cluster, ds = rollout()
    stepped(cluster, ds)
    promote(cluster, ds)
    code, out, err = stepped(cluster, ds, quiet=True)
    assert code == StepExit.OK, err
    return Read(plan, to_gate, whole, lines(out, err), out + err)
