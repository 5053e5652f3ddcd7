"""The brakes while a rollout drives itself (issue 37, item 15): `rollout pause` and `rollout
abort` issued while `rollout step --until-complete` runs, or while it measures an analysis, take
effect at the running stepper's next boundary (a pass, a watch, a measurement interval), without
its Lease. Over an in-memory cluster whose Lease is really held and whose RolloutState writes are
pinned to their resourceVersion, as the API server's are; the brake is the verb itself
(`verbs.run_verb`), injected from the fake while the stepper runs."""

from __future__ import annotations

import contextlib
import copy
import datetime
import itertools
from types import SimpleNamespace

import pytest

from kubectl_disagg.core.analysis import Analysis, Check, Condition, Prometheus, Sample
from kubectl_disagg.core.policy import RolloutPolicy, Wave
from kubectl_disagg.errors import Conflict
from kubectl_disagg.exits import StepExit, VerbExit
from kubectl_disagg.kube.client import LEASE, NotFound
from kubectl_disagg.kube.lease import LeaseHeld
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.progressive import recorded_position
from kubectl_disagg.rollout.verbs import run_verb
from tests.fakes.cluster import MemoryExecutor
from tests.fakes.printer import Printer as RunPrinter
from tests.support.sets import fleet, groups_by_slice

NS = "serving"


class Printer(RunPrinter):
    """What a run of `rollout step` (and a verb) showed."""

    def analysis_progress(self, gate):
        return lambda run_: None

    def done(self, result):
        self.reports.append(result)


class StateClient:
    """What the steppers and verbs ask of the API server besides the LWS: the RolloutState
    (create, and PUT pinned to its resourceVersion) and the Lease (read)."""

    def __init__(self, cluster: PacedCluster):
        self.cluster = cluster
        self.versions = itertools.count(100)

    def serves(self, resource):
        return True

    def send(self, *args, **kwargs):
        raise OSError("no SelfSubjectReview here")  # whoami falls back to the local user

    def create(self, resource, namespace, body):
        if self.cluster.state is not None:
            raise Conflict(f"rolloutstate/{body['metadata']['name']} already exists")
        return self._store(body)

    def replace(self, resource, namespace, body):
        stored = self.cluster.state
        if stored is None or stored["metadata"]["resourceVersion"] != body["metadata"]["resourceVersion"]:
            self.cluster.conflicts.append(body["metadata"]["resourceVersion"])
            raise Conflict(f"rolloutstate/{body['metadata']['name']} changed since it was read (409 Conflict)")
        return self._store(body)

    def get(self, resource, namespace, name):
        if resource == LEASE and self.cluster.holder is not None:
            return {"metadata": {"name": name, "resourceVersion": "1"},
                    "spec": {"holderIdentity": self.cluster.holder, "leaseDurationSeconds": 30,
                             "renewTime": datetime.datetime.now(datetime.timezone.utc).strftime(
                                 "%Y-%m-%dT%H:%M:%S.%fZ")}}
        raise NotFound(f"{resource.kind.lower()}/{name} not found")

    def _store(self, body):
        stored = copy.deepcopy(dict(body))
        stored["metadata"]["resourceVersion"] = str(next(self.versions))
        self.cluster.state = stored
        self.cluster.writes.append(stored)
        return copy.deepcopy(stored)


class PacedCluster(MemoryExecutor):
    """A session of `rollout step` and of the verbs over MemoryCluster: a Lease one process
    holds at a time (a second taker is refused, as by the API server), the RolloutState, Events;
    `between(cluster, n)` runs at each watch between passes (n counts from 1)."""

    default_namespace = NS

    def __init__(self, memory, between=lambda cluster, n: None, settles=True):
        super().__init__(memory)
        self.client = StateClient(self)
        self.state, self.writes, self.conflicts, self.events = None, [], [], []
        self.holder = None
        self.between, self.settles = between, settles
        self.actions: list = []  # every LWS write carried out, in order

    def snapshot(self, set_name, namespace, *, scalers=False, services=True):
        return super().snapshot(set_name, namespace, scalers=scalers)

    def execute(self, action, namespace):
        super().execute(action, namespace)
        self.actions.append(action)

    @contextlib.contextmanager
    def lease(self, set_name, namespace, wait_until=None, holder=None):
        if self.holder is not None:
            raise LeaseHeld("kubectl-disagg-" + set_name, namespace, self.holder, None)
        self.holder = "stepper@host/1/abc"
        try:
            yield SimpleNamespace(duration=30, renew_if_due=lambda: None, held=True)
        finally:
            self.holder = None

    def wait_for_change(self, set_name, namespace, resource_version, timeout):
        self.watches += 1
        self.between(self, self.watches)
        if self.settles:
            self.memory.settle()
        return self.settles

    @property
    def memory(self):
        return self.cluster

    def rollout_state(self, name, namespace):
        return copy.deepcopy(self.state)

    def record_event(self, event):
        self.events.append(event)

    def position(self, ds):
        return recorded_position(self.state, ds)


def revisions_by_slice(cluster: PacedCluster, ds) -> dict[int, set[str]]:
    return {s: {rev for rev, roles in groups.items() if any(roles.values())}
            for s, groups in groups_by_slice(cluster.memory).items()}


def at_new_revision(cluster, ds) -> set[int]:
    return {s for s, revisions in revisions_by_slice(cluster, ds).items() if ds.revision in revisions}


def brake(verb: str, ds, results: list, after=None):
    """A `between` hook: at the watch `after` (the first by default), run `rollout VERB` as a
    person would, while the stepper holds the Lease; its exit code and output kept."""
    def hook(cluster, n):
        if n == (after or 1):
            printer = Printer()
            code = run_verb(cluster, [ds], None, verb, printer)
            results.append(SimpleNamespace(code=code, printer=printer, actions=len(cluster.actions)))
    return hook


def one_at_a_time(slices=4):
    """Waves of one slice each, no gates: --until-complete would roll them all in one run."""
    return fleet(slices, RolloutPolicy("llm", NS, "llm", tuple(Wave(n) for n in range(1, slices)), 1))


# --- a pause or an abort while --until-complete runs ---------------------------------------------


def test_a_pause_while_until_complete_runs_stops_it_at_the_next_pass():
    # Before: the pause exited 3 ("lease ... is held") and the stepper rolled every slice.
    memory, ds = one_at_a_time()
    paused: list = []
    cluster = PacedCluster(memory, between=brake("pause", ds, paused))
    printer = Printer()
    code = run.step_sets(cluster, [ds], None, None, printer, until_complete=True, timeout=30)
    (verb,) = paused
    assert verb.code == VerbExit.OK, verb.printer.errors
    assert code == StepExit.HELD
    assert cluster.actions[verb.actions:] == []  # not one LWS write after the pause landed
    assert at_new_revision(cluster, ds) == {0}  # slice 0 was under way; 1-3 never started
    assert cluster.position(ds).paused is not None
    assert any("paused by" in line and "while this step ran" in line for line in printer.errors), printer.errors
    # the pause says who was running, and that it stops at its next boundary
    assert verb.printer.reports[0].stepper == "stepper@host/1/abc"


def test_an_abort_while_until_complete_runs_turns_it_back_to_the_stable_revision():
    memory, ds = one_at_a_time()
    aborted: list = []
    # the second watch: slice 0 started, then done; slice 1 under way
    cluster = PacedCluster(memory, between=brake("abort", ds, aborted, after=3))
    printer = Printer()
    code = run.step_sets(cluster, [ds], None, None, printer, until_complete=True, timeout=30)
    (verb,) = aborted
    assert verb.code == VerbExit.OK, verb.printer.errors
    assert code == StepExit.HELD  # the rollback ran to its end, then the abort holds (exit 7)
    assert at_new_revision(cluster, ds) == set()  # every started slice back at the stable revision
    assert cluster.position(ds).aborted is not None
    started_after = [a for a in cluster.actions[verb.actions:] if ds.revision in a.name and "Create" in type(a).__name__]
    assert started_after == []  # no slice was started after the abort
    assert any("aborted by" in line and "while this step ran" in line for line in printer.errors), printer.errors


def test_a_pause_while_the_stepper_waits_for_readiness_stops_it_within_one_watch():
    # The LWS never become ready: the stepper waits (quiet watches) until --timeout. Before: the
    # pause was refused and the stepper waited the whole --timeout (exit 4).
    memory, ds = one_at_a_time()
    paused: list = []
    cluster = PacedCluster(memory, between=brake("pause", ds, paused, after=2), settles=False)
    printer = Printer()
    code = run.step_sets(cluster, [ds], None, None, printer, until_complete=True, timeout=3)
    assert paused[0].code == VerbExit.OK, paused[0].printer.errors
    assert code == StepExit.HELD
    assert cluster.watches == 2  # the watch the pause landed in is the last one
    assert cluster.actions[paused[0].actions:] == []


def test_the_stepper_s_own_position_write_after_a_brake_is_a_conflict_and_read_again():
    # A pause written between the stepper's read of the RolloutState and its write: the write
    # is refused (pinned), never lost; the stepper reads again and holds.
    memory, ds = one_at_a_time()
    cluster = PacedCluster(memory)
    printer = Printer()
    real_replace = cluster.client.replace
    braked = []

    def replace_after_a_pause(resource, namespace, body):
        if not braked and cluster.state is not None:
            braked.append(None)  # (the verb's own write comes through here too)
            braked[0] = run_verb(cluster, [ds], None, "pause", Printer())
        return real_replace(resource, namespace, body)

    cluster.client.replace = replace_after_a_pause
    cluster.between = lambda c, n: None
    code = run.step_sets(cluster, [ds], None, None, printer, until_complete=True, timeout=30)
    assert braked == [VerbExit.OK] and cluster.conflicts  # the stepper's write was refused once
    assert code == StepExit.HELD and cluster.position(ds).paused is not None


# --- a brake during an analysis -----------------------------------------------------------------


def analysed(count=5):
    ttft = Check("ttft", "prefill", "ttft", Condition("<", 0.5), 0.05, count, 0, "fail")
    policy = RolloutPolicy("llm", NS, "llm", (Wave(1, analysis=("ttft",)),), 1, "abort",
                           Analysis(Prometheus(address="http://prometheus:9090"), (ttft,)))
    return fleet(4, policy)


@pytest.mark.parametrize("verb, phase", [("pause", "paused"), ("abort", "aborted")])
def test_a_brake_during_an_analysis_stops_its_wait(verb, phase, monkeypatch):
    memory, ds = analysed()
    cluster = PacedCluster(memory)
    results, measured = [], []

    class Prom:
        def query(self, expression, deadline=None):
            measured.append(expression)
            if len(measured) == 2:  # the second of five measurements: a person brakes
                results.append(run_verb(cluster, [ds], None, verb, Printer()))
            return (Sample(0.1),)

    monkeypatch.setattr("kubectl_disagg.rollout.analysis.PrometheusClient.for_endpoint",
                        lambda endpoint, client: Prom())
    printer = Printer()
    code = run.step_sets(cluster, [ds], None, None, printer, until_complete=True, timeout=60)
    assert results == [VerbExit.OK]
    assert len(measured) == 2  # the measurement under way was the last one
    assert code == StepExit.HELD
    position = cluster.position(ds)
    assert getattr(position, phase) is not None and position.verdicts == {}  # no verdict recorded
    assert at_new_revision(cluster, ds) == ({0} if verb == "pause" else set())  # wave 2 never started


def test_a_verb_whose_write_meets_the_stepper_s_reads_again_and_lands():
    memory, ds = one_at_a_time()
    cluster = PacedCluster(memory)
    assert run.step_sets(cluster, [ds], None, None, Printer()) == StepExit.OK  # one pass: the state exists
    real_replace, raced = cluster.client.replace, []

    def the_stepper_writes_first(resource, namespace, body):
        if not raced:  # a stepper's write lands between the verb's read and its write
            raced.append(real_replace(resource, namespace, {**cluster.state, "metadata": cluster.state["metadata"]}))
        return real_replace(resource, namespace, body)

    cluster.client.replace = the_stepper_writes_first
    printer = Printer()
    assert run_verb(cluster, [ds], None, "pause", printer) == VerbExit.OK, printer.errors
    assert cluster.conflicts and cluster.position(ds).paused is not None
    assert printer.reports[0].stepper is None  # nobody holds the Lease: no stepper named
