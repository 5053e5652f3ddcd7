"""`rollout step --until-complete` over the paced in-memory cluster as the command prints it
(text, stderr piped): the fleet-sized text's tests and `make bench` (benchmarks/bench_step_text.py)."""

from __future__ import annotations

import contextlib
import io

from kubectl_disagg.core.delivery.policy import Wave
from kubectl_disagg.exits import StepExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.wait import Deadline
from kubectl_disagg.views.step_console import Console
from tests.fakes.paced import Printer

# issue 39's fleet: a canary, 25 % and 100 %, a pause after each of the first two
CANARY_25_100 = (Wave(1, pause=True), Wave("25%", pause=True), Wave("100%"))


def stepped(cluster, ds, *, quiet=False, promote_at_gates=False, console=Console):
    """`rollout step --until-complete` as the command runs it (text): (exit code, stdout, stderr);
    with `promote_at_gates`, `rollout promote` at each gate and the command run again."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        while True:
            code = run.step(ClusterStore(cluster, [ds]), console("text", quiet=quiet), run.StepOptions(until_complete=True,
                                 deadline=Deadline.after(60)))
            if code != StepExit.HELD or not promote_at_gates:
                break
            run_verb(ClusterStore(cluster, [ds], None), "promote", Printer())
    return code, out.getvalue(), err.getvalue()


def lines(*texts: str) -> int:
    return sum(len(text.splitlines()) for text in texts)
