"""`rollout status` is the fleet's truth (issue 39): -w ends where `rollout step` would be held
(a gate, a pause, an abort rolled back) with the step's code, and -o json|yaml carries where the
paced rollout stands. Over the in-memory cluster with a RolloutState (tests/fakes/paced.py)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.core.delivery.status import Until
from kubectl_disagg.exits import StatusExit, StepExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.outcome import STATUS_EXIT
from kubectl_disagg.rollout.status import ClusterLooks, watch_status
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.views.status import data_format
from kubectl_disagg.wait import Deadline
from tests.fakes.paced import NS, PacedCluster, Printer
from tests.support.sets import fleet


def canary(slices=4, **wave):
    """A canary wave of one slice with `wave`'s gate, then the rest; at most 2 in flight."""
    return fleet(slices, RolloutPolicy("llm", NS, "llm", (Wave(1, **wave),), 2))


def stepped_to_the_hold(memory, ds) -> PacedCluster:
    cluster = PacedCluster(memory)
    code = run.step(ClusterStore(cluster, [ds]), Printer(), run.StepOptions(until_complete=True, deadline=Deadline.after(30)))
    assert code == StepExit.HELD
    return cluster


class Quiet(PacedCluster):
    """Nothing changes between looks: the watch says so (a -w that does not end times out)."""

    def wait_for_change(self, set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet",
                        state_version=None):
        self.watches += 1
        return False


def watched(cluster, ds, output="json", **kwargs):
    texts, held = [], []
    outcome = watch_status(cluster, ClusterLooks(cluster, [ds], None), data_format(output), write=texts.append, held=held.extend, **kwargs)
    return STATUS_EXIT[outcome], texts, held


def test_watch_at_a_pause_gate_exits_with_the_step_s_held_code_and_says_what_passes_it():
    memory, ds = canary(pause=True)
    cluster = stepped_to_the_hold(memory, ds)
    code, texts, held = watched(cluster, ds, watch=True, deadline=Deadline.after(30))
    assert code == StatusExit.HELD == StepExit.HELD
    assert len(texts) == 1  # the first look is the last: nothing would move it
    (report,) = held
    assert report.paced.held.gate.kind == "pause" and report.paced.held.gate.wave == 0
    from kubectl_disagg.views.invocation import Invocation
    from kubectl_disagg.views.stops import stop_sentence

    said = stop_sentence(report.paced.held, spell=Invocation(files=("apps/llm/",), namespace="serving").command)
    assert said == "wave 1 is paused: `kubectl disagg rollout promote -f apps/llm/ -n serving` starts the next wave"


def test_without_watch_a_held_rollout_stays_not_available_3():
    memory, ds = canary(pause=True)
    cluster = stepped_to_the_hold(memory, ds)
    code, _, held = watched(cluster, ds)
    assert code == StatusExit.NOT_AVAILABLE and held == []


def test_watch_on_a_paused_rollout_exits_held_and_after_resume_it_watches_on():
    memory, ds = canary(slices=4)  # no gate: only the pause holds it
    cluster = Quiet(memory)
    assert run.step(ClusterStore(cluster, [ds]), Printer()) == StepExit.OK  # slices 0 starts
    assert run_verb(ClusterStore(cluster, [ds], None), "pause", Printer()) == 0
    code, _, held = watched(cluster, ds, watch=True, deadline=Deadline.after(30))
    assert code == StatusExit.HELD and held[0].paced.held.why == "paused"
    assert run_verb(ClusterStore(cluster, [ds], None), "resume", Printer()) == 0
    code, _, held = watched(cluster, ds, watch=True, deadline=Deadline.after(0.3))
    assert code == StatusExit.TIMEOUT and held == []  # moving again: -w waits for Available


def test_json_carries_phase_wave_gate_and_the_fleet_counts_at_the_gate():
    memory, ds = canary(pause=True)
    cluster = stepped_to_the_hold(memory, ds)
    _, texts, _ = watched(cluster, ds)
    document = json.loads(texts[0])
    rollout = document["rollout"]
    assert rollout["phase"] == "AtGate" and rollout["held"] == "gate"
    assert rollout["wave"] == {"index": 0, "count": 2, "firstSlice": 0, "lastSlice": 0}
    assert rollout["gate"] == {"kind": "pause", "wave": 0, "reached": True}
    assert rollout["fleet"] == {"slices": 4, "done": 1, "inFlight": 0, "held": 3}
    assert rollout["revision"] == ds.revision == rollout["targetRevision"] != rollout["stableRevision"]
    assert "paused" not in rollout and "aborted" not in rollout and "lastAnalysis" not in rollout


def test_a_set_without_a_policy_has_no_rollout_key():
    from kubectl_disagg.core.delivery.status import to_document
    from tests.support.sets import status_of

    memory, ds = fleet(2, None)
    assert "rollout" not in to_document(status_of(ds, memory), "2026-12-01T00:00:00Z")


def test_an_abort_says_who_and_why_and_counts_toward_the_stable_revision():
    memory, ds = canary(pause=True)
    cluster = stepped_to_the_hold(memory, ds)
    printer = Printer()
    assert run_verb(ClusterStore(cluster, [ds], None), "abort", printer, reason="ttft too high") == 0
    assert run.step(ClusterStore(cluster, [ds]), Printer(), run.StepOptions(until_complete=True,
                         deadline=Deadline.after(30))) == StepExit.HELD  # rolled back, then held
    code, texts, held = watched(cluster, ds, watch=True, deadline=Deadline.after(30), until=Until.COMPLETE)
    assert code == StatusExit.HELD and held[0].paced.held.why == "aborted"
    rollout = json.loads(texts[-1])["rollout"]
    assert rollout["phase"] == "Aborted" and rollout["held"] == "aborted"
    assert rollout["aborted"]["reason"] == "ttft too high" and rollout["aborted"]["by"]
    assert rollout["targetRevision"] == rollout["stableRevision"] != rollout["revision"]
    assert rollout["fleet"] == {"slices": 4, "done": 4, "inFlight": 0, "held": 0}
    assert "gate" not in rollout


def aborted_and_rolled_back(slices=4):
    """The canary rolled out, aborted at its gate and rolled back: every slice serves the stable
    revision again, and the set still names the aborted one."""
    memory, ds = canary(slices, pause=True)
    cluster = stepped_to_the_hold(memory, ds)
    stable = json.loads(watched(cluster, ds)[1][0])["rollout"]["stableRevision"]
    assert run_verb(ClusterStore(cluster, [ds], None), "abort", Printer(), reason="ttft too high") == 0
    assert run.step(ClusterStore(cluster, [ds]), Printer(), run.StepOptions(until_complete=True,
                         deadline=Deadline.after(30))) == StepExit.HELD
    return cluster, ds, stable


def test_after_an_abort_rolled_back_status_reads_aborted_serving_the_stable_revision_and_available():
    """Issue 47 item 13: every slice serves the stable revision, so the set is Available (exit 0),
    and the text says aborted, rolled back, what it serves and what to do next, never that the
    slices wait for anything."""
    from kubectl_disagg.views.status_text import format_reports

    cluster, ds, stable = aborted_and_rolled_back()
    code, texts, held = watched(cluster, ds)
    assert code == StatusExit.AVAILABLE and held == []
    document = json.loads(texts[0])
    conditions = {c["type"]: c for c in document["status"]["conditions"]}
    assert conditions["Available"]["status"] == "True" and conditions["Progressing"]["status"] == "False"
    assert conditions["Available"]["reason"] == conditions["Progressing"]["reason"] == "RolloutAborted"
    assert stable in conditions["Available"]["message"] and ds.revision in conditions["Available"]["message"]
    assert document["complete"] is False  # the rollout to the set's revision is not: it was aborted
    assert {role["name"]: role["updatedReplicas"] for role in document["status"]["roleStatuses"]} == {
        "prefill": 4, "decode": 4}  # up to date with the revision the fleet serves

    texts = []
    assert STATUS_EXIT[watch_status(cluster, ClusterLooks(cluster, [ds], None), format_reports, write=texts.append)] == StatusExit.AVAILABLE
    text = texts[0]
    first = text.splitlines()[0]
    assert first == (f"disaggregatedset/llm in serving, revision {ds.revision}: Available, aborted: rolled back, "
                     f"every slice serves the stable revision {stable}")
    assert "waiting for" not in text and "Available=True (RolloutAborted)" in text
    assert f"{stable} (stable) prefill=1 decode=1" in text
    held_line = next(line for line in text.splitlines() if line.startswith("  held: "))
    assert "`kubectl disagg rollout undo`" in held_line and "`kubectl disagg rollout retry`" in held_line
    assert "template back" in held_line


def test_after_an_abort_watch_ends_available_and_for_complete_ends_held_once_rolled_back():
    """-w waits for Available: the rolled-back fleet is (exit 0, at once). --for=complete waits
    for the rollout to the set's revision, which the abort holds: once its rollback is complete,
    -w ends held (7) saying what ends it, as `rollout step --until-complete` does; without -w, 3."""
    cluster, ds, stable = aborted_and_rolled_back()
    code, texts, held = watched(cluster, ds, watch=True, deadline=Deadline.after(30))
    assert code == StatusExit.AVAILABLE and len(texts) == 1 and held == []
    code, _, held = watched(cluster, ds, until=Until.COMPLETE)
    assert code == StatusExit.NOT_AVAILABLE and held == []
    code, texts, held = watched(cluster, ds, watch=True, deadline=Deadline.after(30), until=Until.COMPLETE)
    assert code == StatusExit.HELD and len(texts) == 1 and held[0].paced.held.why == "aborted"


class QuietButTheState(Quiet):
    """The LWS do not change between looks; `between(cluster, n)` runs at each watch (a verb, a
    stepper's write of the RolloutState), and a watch that follows the RolloutState sees it."""

    def __init__(self, memory, between=lambda cluster, n: None):
        super().__init__(memory, between)
        self.waited = 0.0
        self.client.versions = itertools.count(1000)  # past those of the stepper that wrote the state before

    def wait_for_change(self, set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet",
                        state_version=None):
        self.watches += 1
        self.between(self, self.watches)
        current = (self.state or {}).get("metadata", {}).get("resourceVersion", "")
        changed = state_version is not None and current != state_version
        if not changed:
            self.waited += timeout  # a quiet watch lasts its whole slice on a cluster
        return changed


def test_issue47_item14_watch_follows_the_rollout_state_a_pause_ends_it_at_once():
    """Issue 47 item 14: the LWS quiet (no stepper acting) and the RolloutState changed by `rollout
    pause`: -w looks again at once and ends held, instead of sleeping on the LWS until its
    watch runs out (a minute a slice, until --timeout)."""
    memory, ds = canary(slices=4)
    stepped = PacedCluster(memory)
    assert run.step(ClusterStore(stepped, [ds]), Printer()) == StepExit.OK  # slice 0 starts

    def pause(cluster, n):
        if n == 1:
            assert run_verb(ClusterStore(cluster, [ds], None), "pause", Printer()) == 0

    cluster = QuietButTheState(memory, pause)
    cluster.state = stepped.state
    code, texts, held = watched(cluster, ds, watch=True, deadline=Deadline.after(5))
    assert code == StatusExit.HELD and held[0].paced.held.why == "paused"
    assert cluster.watches == 1 and len(texts) == 2 and cluster.waited == 0  # the watch saw the pause


def at_an_analysis_gate():
    """The canary done and its gate an analysis that no `rollout step` has measured yet."""
    memory, ds = canary(pause=True)
    cluster = stepped_to_the_hold(memory, ds)
    return cluster, replace(ds, policy=replace(ds.policy, waves=(Wave(1, analysis=("ttft",)),)))


def test_issue47_item14_at_an_unmeasured_analysis_gate_without_a_stepper_watch_ends_held_naming_step():
    """Issue 47 item 14: nothing measures an analysis gate but `rollout step`: with no stepper
    holding the set's Lease, -w ends held (7) at once and says that `rollout step` measures it;
    the text says so too. With a stepper running it watches on (the stepper's verdict moves it)."""
    from kubectl_disagg.views.invocation import Invocation
    from kubectl_disagg.views.status_text import format_reports
    from kubectl_disagg.views.stops import measure_sentence

    cluster, ds = at_an_analysis_gate()
    quiet = QuietButTheState(cluster.memory)
    quiet.state = cluster.state
    code, texts, held = watched(quiet, ds, watch=True, deadline=Deadline.after(5))
    assert code == StatusExit.HELD and len(texts) == 1
    (report,) = held
    assert report.paced.held is None and report.paced.unmeasured is not None
    said = measure_sentence(report.paced.unmeasured,
                            spell=Invocation(files=("apps/llm/",), namespace="serving").command)
    assert said.startswith("wave 1 waits for analysis (ttft), which no `rollout step` is measuring: "
                           "`kubectl disagg rollout step -f apps/llm/ -n serving` measures it"), said
    texts = []
    watch_status(quiet, ClusterLooks(quiet, [ds], None), format_reports, write=texts.append)
    assert "`kubectl disagg rollout step` measures it" in texts[0]

    quiet.holder = "stepper@host/1/abc"  # a `rollout step --until-complete` measures it
    code, _, held = watched(quiet, ds, watch=True, deadline=Deadline.after(0.3))
    assert code == StatusExit.TIMEOUT and held == []


def test_issue47_item14_a_step_that_cannot_end_the_analysis_leaves_the_state_at_the_gate_not_measuring():
    """A step whose --timeout leaves too little for the analysis gate it reaches exits 4 without
    measuring (nothing recorded); the RolloutState it had written Rolling, "measuring analysis
    ttft since ...", for Argo CD, stayed so: Progressing forever, while no step measured. It is
    written back to the gate it waits at (AtGate, naming the step that measures it)."""
    from kubectl_disagg.core.delivery.analysis import Analysis, Check, Condition, Prometheus

    gated = RolloutPolicy("llm", NS, "llm", (Wave(1, analysis=("ttft",)),), 2, analysis=Analysis(
        Prometheus(address="http://127.0.0.1:1"),
        (Check("ttft", "prefill", 'ttft{revision="{{revision}}"}', Condition("<", 0.5), 60, 3, 0, "fail"),)))
    memory, ds = fleet(4, gated)
    cluster = PacedCluster(memory)
    printer = Printer()
    code = run.step(ClusterStore(cluster, [ds]), printer, run.StepOptions(until_complete=True, deadline=Deadline.after(30)))
    assert code == StepExit.TIMEOUT
    state = cluster.rollout_state("llm", NS)
    assert not state["position"].get("verdicts")
    assert state["rollout"]["phase"] == "AtGate", state["rollout"]
    assert "measuring" not in state["rollout"]["message"]
    assert "wave 1 waits for analysis (ttft): `kubectl disagg rollout step` measures it" in state["rollout"]["message"]
