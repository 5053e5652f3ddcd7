"""`run.step` in the cluster (`rollout.store.ClusterStore`): how a run of `rollout step` ends (its exit code), what it shows, and the
Events it records, over the in-memory executor."""

from __future__ import annotations

import contextlib
import re
from types import SimpleNamespace

import pytest

from kubectl_disagg.exits import StepExit
from kubectl_disagg.kube.lease import LeaseHeld
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.analysis import AnalysisTimeout
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.rollout.stepper import Look, Pass
from kubectl_disagg.wait import Deadline
from tests.fakes.cluster import MemoryCluster, MemorySession
from tests.fakes.printer import Printer
from tests.support.cli import run as cli
from tests.support.paths import EXAMPLES
from tests.support.sets import make_set


def test_until_complete_shows_every_pass_records_events_and_exits_0():
    cluster, printer = MemorySession(MemoryCluster("serving")), Printer()
    ds = make_set({"prefill": 2, "decode": 1})
    assert run.step(ClusterStore(cluster, [ds]), printer, run.StepOptions(until_complete=True)) == StepExit.OK
    assert printer.shown and all(isinstance(p, Pass) for p in printer.shown) and printer.shown[-1].complete
    assert printer.finished_sets == [ds.name] and printer.errors == []
    assert {e["reason"] for e in cluster.events} == {"ScalingUp"}
    assert all(e["regarding"]["kind"] == "LeaderWorkerSet" for e in cluster.events)  # a file: regards each LWS


def test_an_event_that_cannot_be_recorded_only_warns_once():
    cluster, printer = MemorySession(MemoryCluster("serving"), events_fail=True), Printer()
    assert run.step(ClusterStore(cluster, [make_set({"prefill": 2, "decode": 1})]), printer,
                         run.StepOptions(until_complete=True)) == StepExit.OK
    assert printer.warnings == ["could not record event ScalingUp: events.events.k8s.io is forbidden"]


def test_a_held_lease_refuses_and_a_deadline_passed_times_out():
    cluster, printer = MemorySession(MemoryCluster("serving")), Printer()

    @contextlib.contextmanager
    def held(set_name, namespace, wait_until=None):
        raise LeaseHeld("kubectl-disagg-" + set_name, namespace, "alice", None)
        yield

    cluster.lease = held
    assert run.step(ClusterStore(cluster, [make_set({"prefill": 1, "decode": 1})]), printer) == StepExit.REFUSED
    assert "held by alice" in printer.errors[0]

    cluster, printer = MemorySession(MemoryCluster("serving")), Printer()
    code = run.step(ClusterStore(cluster, [make_set({"prefill": 1, "decode": 1})]), printer, run.StepOptions(until_complete=True,
                         deadline=Deadline.after(-1.0)))
    assert code == StepExit.TIMEOUT and printer.shown == []
    assert printer.errors[-1].startswith("timed out after") and "run the command again" in printer.errors[-1]


def test_the_first_set_that_does_not_complete_stops_the_run():
    cluster, printer = MemorySession(MemoryCluster("serving")), Printer()
    sets = [make_set({"prefill": 1, "decode": 1}), make_set({"prefill": 1, "decode": 1})]
    assert run.step(ClusterStore(cluster, sets), printer, run.StepOptions(until_complete=True, deadline=Deadline.after(-1.0))) == StepExit.TIMEOUT
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


def test_a_name_and_a_file_together_is_a_usage_error(capsys):
    # (in the integration tier before, though no connection is made)
    code, out, err = cli(["rollout", "step", "llm", "-f", str(EXAMPLES / "prefill-decode.yaml"),
                          "--kubeconfig", "/nonexistent"], capsys)
    assert code == 2 and out == "" and "either NAME" in err


def test_help_documents_every_exit_code(capsys):
    code, out, _ = cli(["rollout", "step", "--help"], capsys)
    assert code == 0
    live, gitops = " ".join(out.split()).split("Exit codes:")[1].split("Exit codes with --gitops")
    documented = [int(n) for n in re.findall(r"(\d) [a-z]", live.split(".")[0])]
    assert documented == sorted({StepExit.OK, StepExit.ERROR, StepExit.USAGE, StepExit.REFUSED,
                                 StepExit.TIMEOUT, StepExit.HELD}) == [0, 1, 2, 3, 4, 7]
    assert [int(n) for n in re.findall(r"(\d) [a-z]", gitops.split("):")[1])] == [0, 1, 2, 3, 4, 5, 6, 7]


class Steps:
    """A `run.StepStore` that records what the one run asks of it, each set ending as `outcomes` say
    (its sets written together, as git's)."""

    together = True

    def __init__(self, outcomes, fail=None):
        self.outcomes, self.fail, self.asked, self.written = dict(outcomes), fail, [], None

    def targets(self, how, printer):
        return [(name, "serving") for name in self.outcomes]

    def looks(self, ds, namespace, how, printer):
        self.asked.append(ds)
        if ds == self.fail:
            raise AnalysisTimeout(["analysis gate of disaggregatedset/b: no verdict within --timeout 5s"])
        yield Look(self.outcomes[ds])

    def write_run(self, outcomes, how, printer):
        self.written = list(outcomes)
        return [Outcome.WAITING if outcome == Outcome.ADVANCED else outcome for outcome in outcomes]


def test_one_run_over_any_store_steps_each_set_then_writes_its_transaction():
    store = Steps({"a": Outcome.ADVANCED, "b": Outcome.COMPLETE})
    code = run.step(store, Printer())
    assert store.asked == ["a", "b"] and store.written == [Outcome.ADVANCED, Outcome.COMPLETE]
    assert code == StepExit.WAITING  # the outcomes as written, the most pressing one's code
    until = Steps({"a": Outcome.ADVANCED, "b": Outcome.FINISHED})
    run.step(until, Printer(), run.StepOptions(until_complete=True))
    assert until.asked == ["a"] and until.written == [Outcome.ADVANCED]  # the first set not complete stops the run


def test_an_analysis_without_a_verdict_a_store_lets_out_ends_the_run_with_nothing_written():
    store, printer = Steps({"a": Outcome.ADVANCED, "b": Outcome.ADVANCED, "c": Outcome.ADVANCED}, fail="b"), Printer()
    assert run.step(store, printer) == StepExit.TIMEOUT
    assert store.asked == ["a", "b"] and store.written is None
    assert printer.errors == ["analysis gate of disaggregatedset/b: no verdict within --timeout 5s; nothing written"]


def test_a_run_ends_with_its_most_pressing_set_whichever_store_ran_it():
    # One table and one aggregation: the cluster's run kept the highest code (a hold, 7, over a
    # refusal, 3); a refusal asks more of the operator, as a run through git always said.
    store = Steps({"a": Outcome.HELD, "b": Outcome.REFUSED, "c": Outcome.ADVANCED})
    assert run.step(store, Printer()) == StepExit.REFUSED
    assert run.step(Steps({"a": Outcome.TIMEOUT, "b": Outcome.HELD}), Printer()) == StepExit.TIMEOUT


class Live(Steps):
    """A store that shows each pass as it runs (the cluster's kind): `step_set` says how each set ended."""

    together = False

    def __init__(self, looks):
        super().__init__({name: None for name in looks})
        self.given = dict(looks)

    def looks(self, ds, namespace, how, printer):
        self.asked.append(ds.name)
        yield from self.given[ds.name]


def test_one_classifier_ends_a_set_from_its_last_look_whichever_store_yields_it():
    # A run whose last look is unsettled ran out of time; else the last look's verdict is the
    # set's, for a store that writes together (git) as for one that lands each pass (the cluster).
    a, b = SimpleNamespace(name="a"), SimpleNamespace(name="b")
    assert run.step_set(Steps({a.name: Outcome.ADVANCED}), a.name, "serving", run.StepOptions(), Printer()) \
        == Outcome.ADVANCED
    assert run.step_set(Live({"a": [Look(Outcome.ADVANCED)]}), a, "serving", run.StepOptions(), Printer()) \
        == Outcome.ADVANCED
    store = Live({"a": [Look(Outcome.WAITING, settled=False), Look(Outcome.WAITING, settled=False)], "b": []})
    printer, how = Printer(), run.StepOptions(until_complete=True, deadline=Deadline.after(60.0))
    assert run.step_set(store, a, "serving", how, printer) == Outcome.TIMEOUT
    assert run.step_set(store, b, "serving", how, printer) == Outcome.TIMEOUT  # not one look in time
    assert [line.split(":")[0] for line in printer.errors] == ["timed out after 1m", "timed out after 1m"]
