"""`run.step_sets`: how a run of `rollout step` ends (its exit code), what it shows, and the
Events it records, over the in-memory executor."""

from __future__ import annotations

import contextlib
import re

import pytest

from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import StepExit
from kubectl_disagg.kube.lease import LeaseHeld
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.stepper import Pass
from tests.conftest import EXAMPLES
from tests.memory_cluster import MemoryCluster
from tests.unit.core.test_reconcile import make_set
from tests.unit.rollout.test_stepper import MemoryExecutor
from tests.unit.test_cli import run as cli


class Printer:
    """A `run.StepPrinter` that keeps what it was given."""

    def __init__(self):
        self.shown, self.reports, self.warnings, self.errors, self.finished_sets = [], [], [], [], []

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

    def refused_writes(self, step):
        self.errors.append("refused writes")


class Cluster(MemoryExecutor):
    """The executor with what `step_sets` needs of a session besides: events and a namespace."""

    default_namespace = "serving"

    def __init__(self, *args, events_fail: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.events, self.events_fail = [], events_fail

    def rollout_state(self, set_name, namespace):
        return None  # no RolloutState kind served

    def record_event(self, event):
        if self.events_fail:
            raise UserError("events.events.k8s.io is forbidden")
        self.events.append(event)


def test_until_complete_shows_every_pass_records_events_and_exits_0():
    cluster, printer = Cluster(MemoryCluster("serving")), Printer()
    ds = make_set({"prefill": 2, "decode": 1})
    assert run.step_sets(cluster, [ds], None, None, printer, until_complete=True) == StepExit.OK
    assert printer.shown and all(isinstance(p, Pass) for p in printer.shown) and printer.shown[-1].complete
    assert printer.finished_sets == [ds.name] and printer.errors == []
    assert {e["reason"] for e in cluster.events} == {"ScalingUp"}
    assert all(e["regarding"]["kind"] == "LeaderWorkerSet" for e in cluster.events)  # a file: regards each LWS


def test_an_event_that_cannot_be_recorded_only_warns_once():
    cluster, printer = Cluster(MemoryCluster("serving"), events_fail=True), Printer()
    assert run.step_sets(cluster, [make_set({"prefill": 2, "decode": 1})], None, None, printer,
                         until_complete=True) == StepExit.OK
    assert printer.warnings == ["could not record event ScalingUp: events.events.k8s.io is forbidden"]


def test_a_held_lease_refuses_and_a_deadline_passed_times_out():
    cluster, printer = Cluster(MemoryCluster("serving")), Printer()

    @contextlib.contextmanager
    def held(set_name, namespace, wait_until=None):
        raise LeaseHeld("kubectl-disagg-" + set_name, namespace, "alice", None)
        yield

    cluster.lease = held
    assert run.step_sets(cluster, [make_set({"prefill": 1, "decode": 1})], None, None, printer) == StepExit.REFUSED
    assert "held by alice" in printer.errors[0]

    cluster, printer = Cluster(MemoryCluster("serving")), Printer()
    code = run.step_sets(cluster, [make_set({"prefill": 1, "decode": 1})], None, None, printer, until_complete=True,
                         timeout=-1.0)
    assert code == StepExit.TIMEOUT and printer.shown == []
    assert printer.errors[-1].startswith("timed out after") and "run the command again" in printer.errors[-1]


def test_the_first_set_that_does_not_complete_stops_the_run():
    cluster, printer = Cluster(MemoryCluster("serving")), Printer()
    sets = [make_set({"prefill": 1, "decode": 1}), make_set({"prefill": 1, "decode": 1})]
    assert run.step_sets(cluster, sets, None, None, printer, until_complete=True, timeout=-1.0) == StepExit.TIMEOUT
    assert len([line for line in printer.errors if line.startswith("timed out")]) == 1


# --- the exit codes on the command line -----------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["--dry-run", "--until-complete"],
    ["--until-complete", "--timeout", "soon"],
    ["--until-complete", "--timeout", "-5s"],
])
def test_usage_errors_exit_2_before_any_connection(argv, capsys):
    code, out, err = cli(["rollout", "step", "-f", str(EXAMPLES / "prefill-decode.yaml"),
                          "--kubeconfig", "/nonexistent", *argv], capsys)
    assert code == 2 and out == ""


def test_help_documents_every_exit_code(capsys):
    code, out, _ = cli(["rollout", "step", "--help"], capsys)
    assert code == 0
    live, gitops = " ".join(out.split()).split("Exit codes:")[1].split("Exit codes with --gitops")
    documented = [int(n) for n in re.findall(r"(\d) [a-z]", live.split(".")[0])]
    assert documented == sorted({StepExit.OK, StepExit.ERROR, StepExit.USAGE, StepExit.REFUSED,
                                 StepExit.TIMEOUT, StepExit.HELD}) == [0, 1, 2, 3, 4, 7]
    assert [int(n) for n in re.findall(r"(\d) [a-z]", gitops.split("):")[1])] == [0, 1, 2, 3, 4, 5, 6, 7]
