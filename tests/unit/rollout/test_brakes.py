"""The brakes while a rollout drives itself (issue 37, item 15): `rollout pause` and `rollout
abort` issued while `rollout step --until-complete` runs, or while it measures an analysis, take
effect at the running stepper's next boundary (a pass, a watch, a measurement interval), without
its Lease. Over an in-memory cluster whose Lease is really held and whose RolloutState writes are
pinned to their resourceVersion, as the API server's are; the brake is the verb itself
(`verbs.run_verb`), injected from the fake while the stepper runs."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from kubectl_disagg.core.delivery.analysis import Analysis, Check, Condition, Prometheus, Sample
from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.exits import StepExit, VerbExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.views.verbs import verb_line
from kubectl_disagg.wait import Deadline
from tests.fakes.paced import NS, PacedCluster, Printer, brake
from tests.support.sets import fleet, groups_by_slice

def revisions_by_slice(cluster: PacedCluster, ds) -> dict[int, set[str]]:
    return {s: {rev for rev, roles in groups.items() if any(roles.values())}
            for s, groups in groups_by_slice(cluster.memory).items()}


def at_new_revision(cluster, ds) -> set[int]:
    return {s for s, revisions in revisions_by_slice(cluster, ds).items() if ds.revision in revisions}


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
    code = run.step(ClusterStore(cluster, [ds]), printer, run.StepOptions(until_complete=True, deadline=Deadline.after(30)))
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
    code = run.step(ClusterStore(cluster, [ds]), printer, run.StepOptions(until_complete=True, deadline=Deadline.after(30)))
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
    code = run.step(ClusterStore(cluster, [ds]), printer, run.StepOptions(until_complete=True, deadline=Deadline.after(3)))
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
            braked[0] = run_verb(ClusterStore(cluster, [ds], None), "pause", Printer())
        return real_replace(resource, namespace, body)

    cluster.client.replace = replace_after_a_pause
    cluster.between = lambda c, n: None
    code = run.step(ClusterStore(cluster, [ds]), printer, run.StepOptions(until_complete=True, deadline=Deadline.after(30)))
    assert braked == [VerbExit.OK] and cluster.conflicts  # the stepper's write was refused once
    assert code == StepExit.HELD and cluster.position(ds).paused is not None


# --- a brake during an analysis -----------------------------------------------------------------


def analysed(count=5):
    ttft = Check("ttft", "prefill", "ttft", Condition("<", 0.5), 0.05, count, 0, "fail")
    policy = RolloutPolicy("llm", NS, "llm", (Wave(1, analysis=("ttft",)),), 1, "abort",
                           Analysis(Prometheus(address="http://prometheus:9090"), (ttft,)))
    return fleet(4, policy)


@pytest.mark.parametrize("slow", [False, True], ids=["", "slower-than-the-interval"])
@pytest.mark.parametrize("verb, phase", [("pause", "paused"), ("abort", "aborted")])
def test_a_brake_during_an_analysis_stops_its_wait(verb, phase, slow, monkeypatch):
    # slow: the braked measurement's answer takes longer than the interval (a slow Prometheus, a
    # loaded machine), so the next one is due at once. Before: no wait, so no look for a brake,
    # and the analysis measured on to its verdict (this failed now and then on a loaded machine).
    memory, ds = analysed()
    cluster = PacedCluster(memory)
    results, measured = [], []

    class Prom:
        def query(self, expression, deadline=None):
            measured.append(expression)
            if len(measured) == 2:  # the second of five measurements: a person brakes
                results.append(run_verb(ClusterStore(cluster, [ds], None), verb, Printer()))
                if slow:
                    time.sleep(0.2)  # four intervals
            return (Sample(0.1),)

    monkeypatch.setattr("kubectl_disagg.rollout.analysis.PrometheusClient.for_endpoint",
                        lambda endpoint, client: Prom())
    printer = Printer()
    code = run.step(ClusterStore(cluster, [ds]), printer, run.StepOptions(until_complete=True, deadline=Deadline.after(60)))
    assert results == [VerbExit.OK]
    assert len(measured) == 2  # the measurement under way was the last one
    assert code == StepExit.HELD
    position = cluster.position(ds)
    assert getattr(position, phase) is not None and position.verdicts == {}  # no verdict recorded
    assert at_new_revision(cluster, ds) == ({0} if verb == "pause" else set())  # wave 2 never started


def test_a_verb_whose_write_meets_the_stepper_s_reads_again_and_lands():
    memory, ds = one_at_a_time()
    cluster = PacedCluster(memory)
    assert run.step(ClusterStore(cluster, [ds]), Printer()) == StepExit.OK  # one pass: the state exists
    real_replace, raced = cluster.client.replace, []

    def the_stepper_writes_first(resource, namespace, body):
        if not raced:  # a stepper's write lands between the verb's read and its write
            raced.append(real_replace(resource, namespace, {**cluster.state, "metadata": cluster.state["metadata"]}))
        return real_replace(resource, namespace, body)

    cluster.client.replace = the_stepper_writes_first
    printer = Printer()
    assert run_verb(ClusterStore(cluster, [ds], None), "pause", printer) == VerbExit.OK, printer.errors
    assert cluster.conflicts and cluster.position(ds).paused is not None
    assert printer.reports[0].stepper is None  # nobody holds the Lease: no stepper named


# --- the verbs over the cluster's PositionStore (issue 38): retry (issue 40), --reason and who
# acted (issue 39) -----------------------------------------------------------------------------


def verb(cluster, ds, name, **flags):
    printer = Printer()
    return run_verb(ClusterStore(cluster, [ds], None), name, printer, **flags), printer


def aborted_and_rolled_back():
    memory, ds = one_at_a_time()
    cluster = PacedCluster(memory)
    assert run.step(ClusterStore(cluster, [ds]), Printer()) == StepExit.OK  # slice 0 started
    assert verb(cluster, ds, "abort", reason="p99 latency doubled")[0] == VerbExit.OK
    assert run.step(ClusterStore(cluster, [ds]), Printer(), run.StepOptions(until_complete=True, deadline=Deadline.after(30))) == StepExit.HELD
    assert at_new_revision(cluster, ds) == set()
    return cluster, ds


def test_retry_starts_an_aborted_rollout_again_from_wave_1_and_it_completes():
    cluster, ds = aborted_and_rolled_back()
    assert cluster.position(ds).aborted.reason == "p99 latency doubled"
    code, printer = verb(cluster, ds, "retry", reason="node fixed")
    assert code == VerbExit.OK, printer.errors
    position = cluster.position(ds)
    assert (position.aborted, position.wave, position.completed, position.gates) == (None, 0, {}, ())
    assert (position.revision, position.retried.by, position.retried.reason) == (ds.revision, position.retried.by,
                                                                                  "node fixed")
    assert cluster.state["position"]["retried"]["reason"] == "node fixed"
    (event,) = [e for e in cluster.events if e["reason"] == "RolloutRetried"]
    assert "Rollout retried from wave 1 (aborted at wave" in event["note"] and event["note"].endswith(": node fixed")
    result = printer.reports[0]
    assert (result.verb, result.after.wave, result.reason) == ("retry", 0, "node fixed")
    assert verb_line(result) == (f"disaggregatedset/llm in serving retried: the rollout to revision {ds.revision} "
                                 f"(aborted at wave {result.before.wave + 1} of 4) starts again from wave 1; the next "
                                 "`kubectl disagg rollout step` rolls it\n")
    assert run.step(ClusterStore(cluster, [ds]), Printer(), run.StepOptions(until_complete=True, deadline=Deadline.after(30))) == StepExit.OK
    assert at_new_revision(cluster, ds) == set(range(ds.slices))


def test_retry_is_refused_unless_the_rollout_is_aborted():
    memory, ds = one_at_a_time()
    cluster = PacedCluster(memory)
    assert run.step(ClusterStore(cluster, [ds]), Printer()) == StepExit.OK
    written = len(cluster.writes)
    code, printer = verb(cluster, ds, "retry")
    assert code == VerbExit.REFUSED
    assert printer.errors == [f"refusing to retry disaggregatedset/{ds.name} in serving: the rollout is not aborted: "
                              "retry starts an aborted rollout again"]
    assert len(cluster.writes) == written  # nothing written


def test_the_reason_is_recorded_with_who_the_api_server_says_acted():
    memory, ds = one_at_a_time()
    cluster = PacedCluster(memory)
    review = {"status": {"userInfo": {"username": "oidc:alice@example.com"}}}
    asked = []
    cluster.client.send = lambda *args, **kwargs: asked.append(1) or SimpleNamespace(data=json.dumps(review).encode())
    assert run.step(ClusterStore(cluster, [ds]), Printer()) == StepExit.OK
    assert verb(cluster, ds, "pause", reason="waiting for the capacity review")[0] == VerbExit.OK
    assert cluster.state["position"]["paused"]["by"] == "oidc:alice@example.com"
    assert cluster.state["position"]["paused"]["reason"] == "waiting for the capacity review"
    assert verb(cluster, ds, "resume", reason="review passed")[0] == VerbExit.OK
    resumed = cluster.state["position"]["resumed"]
    assert (resumed["by"], resumed["reason"]) == ("oidc:alice@example.com", "review passed")
    assert "paused" not in cluster.state["position"]
    assert len(asked) == 1  # asked once a session, however many steps and verbs need it


def test_a_verb_without_a_reason_writes_the_position_as_before():
    memory, ds = one_at_a_time()
    cluster = PacedCluster(memory)
    assert run.step(ClusterStore(cluster, [ds]), Printer()) == StepExit.OK
    assert verb(cluster, ds, "pause")[0] == VerbExit.OK
    assert set(cluster.state["position"]["paused"]) == {"at", "by"}
    assert verb(cluster, ds, "resume")[0] == VerbExit.OK
    assert "resumed" not in cluster.state["position"]
    assert verb(cluster, ds, "abort")[0] == VerbExit.OK
    assert cluster.state["position"]["aborted"]["reason"] == "rollout abort"
