"""Waves, budget and gates over random fleets, policies and step orders (design §9), against the
in-memory cluster: reconcile (design §4) runs only where `admit` lets it, and is exactly design §4 there."""

from __future__ import annotations

import contextlib
import datetime
import re
from dataclasses import replace

import pytest
from hypothesis import given, settings, strategies as st

from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave, resolve_waves
from kubectl_disagg.core.delivery.position import FULL, PAUSE, PROMOTED, Position, SOAKED, VERDICT
from kubectl_disagg.core.controller.reconcile import Phase, reconcile
from kubectl_disagg.core.delivery.waves import (Hold, Progress, State, Stop, Stopped, VerbRefused, abort, decide, pause, promote,
                                       resume, retry, slice_progress, stopped)
from kubectl_disagg.views.stops import stopped_reasons
from kubectl_disagg.views.verbs import refusal_sentence
from tests.support.sets import NS, fleet, groups_by_slice, make_set
from tests.support.waves import T0, run_pass, until_held


P, F, D = Progress.PENDING, Progress.IN_FLIGHT, Progress.DONE


@contextlib.contextmanager
def refused_verb(match: str):
    """A verb refused (VerbRefused), the words views/verbs.py gives it matching `match`."""
    with pytest.raises(VerbRefused) as refused:
        yield refused
    assert re.search(match, refusal_sentence(refused.value)), refusal_sentence(refused.value)


def policy(*waves: Wave, budget=None, on_failure="abort") -> RolloutPolicy:
    return RolloutPolicy("llm", NS, "llm", tuple(waves), budget, on_failure)


# --- the decision, example by example -----------------------------------------------------------

def test_the_canary_moves_alone_then_holds_at_its_pause():
    canary = policy(Wave(1, pause=True))
    first = decide(canary, "r2", Position("r2", "r1"), (P, P, P, P), T0)
    assert first.moves == (0,) and first.held == {1: Hold.WAVE, 2: Hold.WAVE, 3: Hold.WAVE}
    assert first.state == State.ROLLING and first.gate is None
    done = decide(canary, "r2", first.position, (D, P, P, P), T0)
    assert done.state == State.AT_GATE and done.gate.kind == PAUSE and done.moves == (0,)
    assert done.position.completed == {0: "2026-12-01T12:00:00Z"}
    promoted = promote(done, T0, "alice")
    after = decide(canary, "r2", promoted, (D, P, P, P), T0)
    assert after.moves == (0, 1, 2, 3) and after.wave == 1 and after.state == State.ROLLING
    assert after.position.passed(0, PAUSE).by == "alice"


def test_the_budget_starts_slices_in_index_order():
    paced = policy(budget=2)
    decision = decide(paced, "r2", Position("r2", "r1"), (D, F, P, P, P), T0)
    assert decision.moves == (0, 1, 2) and decision.held == {3: Hold.BUDGET, 4: Hold.BUDGET}
    assert decide(replace(paced, max_in_flight="50%"), "r2", Position("r2", "r1"), (P,) * 4, T0).moves == (0, 1)


def test_a_soak_passes_on_its_own_once_its_time_has_come():
    soak = policy(Wave(1, pause=True, duration=900))
    at_gate = decide(soak, "r2", Position("r2", "r1"), (D, P), T0)
    assert at_gate.gate.until == "2026-12-01T12:15:00Z" and at_gate.moves == (0,)
    early = decide(soak, "r2", at_gate.position, (D, P), T0 + datetime.timedelta(minutes=14))
    assert early.state == State.AT_GATE
    later = decide(soak, "r2", at_gate.position, (D, P), T0 + datetime.timedelta(minutes=15))
    assert later.moves == (0, 1) and later.position.passed(0, PAUSE).how == SOAKED


def test_an_analysis_gate_passes_on_a_passed_verdict_and_a_failed_one_aborts():
    checked = policy(Wave(1, analysis=("ttft",)))
    waiting = decide(checked, "r2", Position("r2", "r1"), (D, P), T0)
    assert waiting.state == State.AT_GATE and waiting.gate.checks == ("ttft",)
    with refused_verb("passes on its verdict"):
        promote(waiting, T0, "alice")
    passed = waiting.position.with_verdict(0, {"phase": "passed", "values": [0.2]})
    assert decide(checked, "r2", passed, (D, P), T0).position.passed(0, "analysis").how == VERDICT
    failed = decide(checked, "r2", replace(waiting.position, verdicts={0: {"phase": "failed"}}), (D, P), T0)
    assert failed.state == State.ABORTED and failed.moves_to == "r1" and failed.moves == (0,)
    assert failed.held == {1: Hold.ABORTED}
    paused = decide(replace(checked, on_failure="pause"), "r2",
                    replace(waiting.position, verdicts={0: {"phase": "failed"}}), (D, P), T0)
    assert paused.state == State.PAUSED and paused.moves == ()
    assert resume(paused.position).verdicts == {}  # the analysis runs again


def test_pause_holds_every_slice_and_resume_lifts_it():
    decision = decide(policy(), "r2", pause(Position("r2", "r1"), T0, "bob"), (F, P), T0)
    assert decision.state == State.PAUSED and decision.moves == () and decision.held == {0: Hold.PAUSED,
                                                                                          1: Hold.PAUSED}
    with pytest.raises(VerbRefused):
        resume(Position("r2", "r1"))


def test_promote_full_passes_every_gate_and_lifts_the_budget():
    gated = policy(Wave(1, pause=True), Wave(2, pause=True), budget=1)
    full = promote(decide(gated, "r2", Position("r2", "r1"), (P,) * 4, T0), T0, "carol", full=True)
    decision = decide(gated, "r2", full, (D, D, P, P), T0)
    assert decision.moves == (0, 1, 2, 3) and decision.budget is None
    assert [(g.wave, g.how) for g in decision.position.gates] == [(0, FULL), (1, FULL)]


def test_promote_full_skips_an_analysis_only_when_asked():
    gated = policy(Wave(1, pause=True), Wave(2, analysis=("ttft", "errors")), Wave(3, analysis=("ttft",)))
    canary = decide(gated, "r2", Position("r2", "r1"), (F, P, P, P), T0)
    with pytest.raises(VerbRefused) as refused:
        promote(canary, T0, "carol", full=True)
    assert refusal_sentence(refused.value) == ("--full would pass the analyses after waves 2 (ttft, errors) and 3 (ttft) without a "
                                  "verdict; add --skip-analysis to skip it")
    full = promote(canary, T0, "carol", full=True, skip_analysis=True)
    assert full.full.by == "carol" and decide(gated, "r2", full, (D, D, D, D), T0).state == State.COMPLETE
    # pauses alone need no --skip-analysis, nor an analysis already passed
    paused = policy(Wave(1, pause=True), Wave(2, pause=True))
    assert promote(decide(paused, "r2", Position("r2", "r1"), (F, P, P), T0), T0, "carol", full=True).full
    checked = policy(Wave(1, analysis=("ttft",)), Wave(2, pause=True))
    at_gate = decide(checked, "r2", Position("r2", "r1"), (D, P, P), T0)
    passed = at_gate.position.with_gate(0, "analysis", "2026-12-01T12:00:00Z", "analysis", VERDICT)
    assert promote(decide(checked, "r2", passed, (D, P, P), T0), T0, "carol", full=True).full
    # the pause a failed analysis made goes with the skipped analysis; a person's pause stays
    failed = replace(at_gate.position, verdicts={0: {"phase": "failed", "message": "ttft: 2.4 is not < 0.5"}})
    stopped_by_analysis = decide(replace(checked, on_failure="pause"), "r2", failed, (D, P, P), T0)
    assert stopped_by_analysis.state == State.PAUSED and stopped_by_analysis.position.paused.by == "analysis"
    lifted = promote(stopped_by_analysis, T0, "carol", full=True, skip_analysis=True)
    assert lifted.paused is None and 1 in decide(checked, "r2", lifted, (D, P, P), T0).moves
    by_bob = pause(lifted, T0, "bob")
    assert promote(decide(checked, "r2", by_bob, (D, P, P), T0), T0, "carol", full=True).paused.by == "bob"


def test_at_rest_nothing_is_held_and_the_position_is_left_alone():
    position = Position("r2", "r1")
    decision = decide(policy(Wave(1, pause=True)), "r2", position, (D, D), T0)
    assert decision.state == State.COMPLETE and decision.moves == (0, 1) and decision.position == position


def test_abort_is_refused_without_a_stable_revision_and_stays():
    with pytest.raises(VerbRefused):
        abort(decide(policy(), "r2", Position("r2", ""), (F, P), T0), T0, "dave")
    aborted = abort(decide(policy(), "r2", Position("r2", "r1"), (F, P), T0), T0, "dave")
    assert abort(decide(policy(), "r2", aborted, (F, P), T0), T0, "erin") == aborted
    with pytest.raises(VerbRefused):
        promote(decide(policy(), "r2", aborted, (D, P), T0), T0, "erin")


def test_retry_starts_the_aborted_rollout_afresh_keeping_the_slices_that_still_run_it():
    # issue 40: before, the only way forward after an abort was a template change.
    gated = policy(Wave(1, pause=True))
    passed = Position("r2", "r1", wave=1, completed={0: "2026-12-01T00:00:00Z"},
                      verdicts={0: {"phase": "failed"}}).with_gate(0, PAUSE, "2026-12-01T00:01:00Z", "alice", PROMOTED)
    aborted = abort(decide(gated, "r2", passed, (D, F, P), T0), T0, "dave", "p99 doubled")
    assert aborted.aborted.reason == "p99 doubled"
    later = T0 + datetime.timedelta(hours=1)
    retried = retry(decide(gated, "r2", aborted, (D, F, P), later), later, "erin", "node replaced")
    assert retried == Position("r2", "r1", found=(0, 1), retried=retried.retried)
    assert (retried.retried.by, retried.retried.reason, retried.retried.at) == ("erin", "node replaced",
                                                                                 "2026-12-01T13:00:00Z")
    decision = decide(gated, "r2", retried, (D, F, P), later)
    assert decision.state == State.ROLLING and decision.wave == 0 and decision.held == {2: Hold.WAVE}


def test_retry_is_refused_unless_aborted_and_for_an_aborted_roll_back():
    with refused_verb("the rollout is not aborted"):
        retry(decide(policy(), "r2", Position("r2", "r1"), (F, P), T0), T0, "erin")
    revert = abort(decide(policy(), "r1", Position("r1", "r1"), (F, P), T0), T0, "dave")
    with refused_verb("rolled back to revision r1: nothing to start again"):
        retry(decide(policy(), "r1", revert, (F, P), T0), T0, "erin")


def test_every_verb_keeps_its_reason_and_a_verb_without_one_writes_what_it_wrote_before():
    from kubectl_disagg.core.delivery.position import parse_position, position_document

    gated = policy(Wave(1, pause=True))
    at_gate = decide(gated, "r2", Position("r2", "r1"), (D, P), T0)
    promoted = promote(at_gate, T0, "alice", reason="canary looks good")
    full = promote(at_gate, T0, "alice", full=True, reason="incident fix")
    paused = pause(Position("r2", "r1"), T0, "bob", "capacity review")
    resumed = resume(paused, T0, "carol", "review passed")
    assert promoted.gates[0].reason == "canary looks good" and full.full.reason == "incident fix"
    assert paused.paused.reason == "capacity review" and resumed.resumed.reason == "review passed"
    for position in (promoted, full, paused, resumed):
        assert parse_position(position_document(position), "f", lambda path: 0) == (position, [])
    assert position_document(promote(at_gate, T0, "alice"))["gates"] == [
        {"wave": 0, "gate": "pause", "at": "2026-12-01T12:00:00Z", "by": "alice", "how": "promote"}]
    assert resume(pause(Position("r2", "r1"), T0, "bob"), T0, "carol") == Position("r2", "r1")


# --- against the in-memory cluster ---------------------------------------------------------------


def test_untouched_slices_get_no_target_lws_and_no_annotation():
    cluster, ds = fleet(4, policy(Wave(1, pause=True)))
    before = {name: obj["metadata"].get("annotations") for name, obj in cluster.lws().items() if "-1-" in name}
    passage, result, _ = run_pass(ds, cluster, None, T0)
    assert {a.slice for a in result.actions} == {0}
    assert [r.phase for r in result.slices] == [Phase.ROLLOUT_STARTED, Phase.HELD, Phase.HELD, Phase.HELD]
    cluster.execute(result.actions)
    after = {name: obj["metadata"].get("annotations") for name, obj in cluster.lws().items() if "-1-" in name}
    assert after == before


def test_abort_brings_the_admitted_slices_back_and_leaves_the_others_unwritten():
    cluster, ds = fleet(4, policy(Wave(2, pause=True)))
    position, now = None, T0
    for _ in range(40):
        passage, result, _ = run_pass(ds, cluster, position, now)
        position = passage.decision.position
        if passage.decision.state == State.AT_GATE:
            break
        cluster.execute(result.actions)
        cluster.settle()
    untouched = {k: v["metadata"]["resourceVersion"] for k, v in cluster.lws().items() if "-2-" in k or "-3-" in k}
    position = abort(passage.decision, now, "dave")
    for _ in range(40):
        passage, result, _ = run_pass(ds, cluster, position, now)
        position = passage.decision.position
        if not result.actions:
            break
        assert {a.slice for a in result.actions} <= {0, 1}
        cluster.execute(result.actions)
        cluster.settle()
    stable = make_set({"prefill": 1, "decode": 1}, "img:1", 4).revision
    assert {obj["metadata"]["labels"]["disaggregatedset.x-k8s.io/revision"] for obj in cluster.lws().values()} == {
        stable}
    assert {k: v["metadata"]["resourceVersion"] for k, v in cluster.lws().items() if "-2-" in k or "-3-" in k} == untouched
    assert stopped(passage.decision) is not None


@st.composite
def scenarios(draw):
    slices = draw(st.integers(1, 5))
    counts = sorted(draw(st.sets(st.integers(1, slices), max_size=3)))
    waves = tuple(Wave(count, pause=draw(st.booleans()), duration=draw(st.sampled_from([None, 60.0])))
                  for count in counts)
    budget = draw(st.sampled_from([None, 1, 2, "50%"]))
    replicas = draw(st.sampled_from([{"prefill": 1, "decode": 1}, {"prefill": 2, "decode": 1}]))
    ops = draw(st.lists(st.sampled_from(["settle", "settle", "partial", "promote", "tick", "pause", "resume"]),
                        min_size=10, max_size=60))
    return slices, policy(*waves, budget=budget), replicas, ops


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(scenarios())
def test_waves_budget_order_and_gates_hold_over_any_step_order(scenario):
    slices, paced, replicas, ops = scenario
    cluster, ds = fleet(slices, paced, replicas)
    waves = resolve_waves(paced, slices)
    budget = paced.budget(slices)
    position, now = None, T0
    promoted: set[int] = set()
    for op in ops + ["promote", "resume"] + ["settle", "promote"] * 100:
        passage, result, snapshot = run_pass(ds, cluster, position, now)
        decision = passage.decision
        progress = slice_progress(ds.name, ds.revision, slices, snapshot)
        started = sorted({a.slice for a in result.actions} & {s for s, p in enumerate(progress) if p == P})
        # a slice never moves before its wave
        assert all(s < waves[decision.wave].end for s in started)
        # slices start in index order: no pending slice below one that starts is left behind
        pending = [s for s, p in enumerate(progress) if p == P]
        assert started == pending[:len(started)]
        # never more than the budget in flight
        in_flight = {s for s, p in enumerate(progress) if p == F} | set(started)
        if budget is not None and decision.position.full is None:
            assert len(in_flight) <= budget
        # every slice that moves follows the planner exactly: design §4 as without a policy
        plain = reconcile(ds, snapshot)
        for report in result.slices:
            if report.slice in decision.moves:
                assert report == plain.slices[report.slice]
            else:
                assert report.actions == () and report.phase == Phase.HELD
        # a gate never passes without its condition
        for gate in decision.position.gates:
            if gate.how == PROMOTED:
                assert gate.wave in promoted
            elif gate.how == SOAKED:
                completed = datetime.datetime.fromisoformat(decision.position.completed[gate.wave])
                assert now >= completed + datetime.timedelta(seconds=waves[gate.wave].duration)
        for wave in range(decision.position.wave):
            if waves[wave].pause:
                assert decision.position.passed(wave, PAUSE) is not None
        position = decision.position
        if op in ("settle", "partial"):
            cluster.execute(result.actions)
            if op == "settle":
                cluster.settle()
            else:
                cluster.settle(ready_cap=lambda name, replicas: replicas - 1 if replicas > 1 else replicas)
        elif op == "promote":
            try:
                gate_wave = (decision.gate or passage.decision.gate or None)
                position = promote(decision, now, "tester")
                promoted.add(gate_wave.wave if gate_wave else position.gates[-1].wave)
            except VerbRefused:
                pass
        elif op == "tick":
            now += datetime.timedelta(seconds=30)
        elif op == "pause":
            position = pause(position, now, "tester")
        elif op == "resume" and position.paused is not None:
            position = resume(position)
        if decision.state == State.COMPLETE and not result.actions:
            break
    else:
        raise AssertionError(f"not complete: {decision}")


def test_a_soak_ending_past_year_9999_holds_instead_of_overflowing():
    """Issue 37 item 8: a soak past the last representable time ended every verb in OverflowError."""
    soak = policy(Wave(1, pause=True, duration=1e15))
    at_gate = decide(soak, "r2", Position("r2", "r1"), (D, P), T0)
    assert at_gate.state == State.AT_GATE and at_gate.gate.until == "9999-12-31T23:59:59Z"


# --- issue 37: a verb acts on the position as it stands -----------------------------------------

def test_item7_promote_before_the_canary_is_done_is_refused_with_the_position():
    """Issue 37 item 7: a promote while the canary was in flight (or not started) was recorded, so
    the next wave started unseen once the canary completed. It passes only the gate the rollout
    waits at, and says where the rollout stands otherwise."""
    canary = policy(Wave(1, pause=True), Wave(3, pause=True))
    fresh = decide(canary, "r2", Position("r2", "r1"), (P, P, P, P), T0)
    for progress, done in (((P, P, P, P), 0), ((F, P, P, P), 0)):
        decision = decide(canary, "r2", fresh.position, progress, T0)
        with pytest.raises(VerbRefused) as refused:
            promote(decision, T0, "alice")
        assert refusal_sentence(refused.value) == (
            f"the rollout waits at no gate: wave 1 of 3 (slice 0) has {done} of 1 slices done, and its gates come "
            "once every slice of it is done; promote passes the gate the rollout waits at (`rollout status` says "
            "when)")
    # the second wave in flight: its slices counted
    promoted = promote(decide(canary, "r2", fresh.position, (D, P, P, P), T0), T0, "alice")
    second = decide(canary, "r2", promoted, (D, D, F, P), T0)
    with refused_verb(r"wave 2 of 3 \(slices 1-2\) has 1 of 2 slices done"):
        promote(second, T0, "bob")
    # at the gate it passes; once complete there is none; --full keeps its meaning throughout
    assert promoted.passed(0, PAUSE).by == "alice"
    with refused_verb("is complete: no gate to pass"):
        promote(decide(canary, "r2", promoted, (D, D, D, D), T0), T0, "bob")
    assert promote(decide(canary, "r2", fresh.position, (F, P, P, P), T0), T0, "carol", full=True).full.by == "carol"


def test_item7_a_soak_is_promoted_early_only_once_its_wave_is_done():
    soak = policy(Wave(1, pause=True, duration=900))
    with refused_verb("waits at no gate"):
        promote(decide(soak, "r2", Position("r2", "r1"), (F, P), T0), T0, "alice")
    soaking = decide(soak, "r2", Position("r2", "r1"), (D, P), T0)
    assert soaking.state == State.AT_GATE and soaking.gate.until == "2026-12-01T12:15:00Z"
    early = promote(soaking, T0 + datetime.timedelta(minutes=1), "alice")
    assert early.passed(0, PAUSE).how == PROMOTED
    assert decide(soak, "r2", early, (D, P), T0 + datetime.timedelta(minutes=1)).moves == (0, 1)


def test_item7_a_paused_rollout_at_its_gate_may_be_promoted_but_not_one_in_flight():
    canary = policy(Wave(1, pause=True))
    at_gate = decide(canary, "r2", Position("r2", "r1"), (D, P), T0)
    paused = decide(canary, "r2", pause(at_gate.position, T0, "bob"), (D, P), T0)
    assert paused.state == State.PAUSED and promote(paused, T0, "alice").passed(0, PAUSE).by == "alice"
    in_flight = decide(canary, "r2", pause(Position("r2", "r1"), T0, "bob"), (F, P), T0)
    with refused_verb("waits at no gate"):
        promote(in_flight, T0, "alice")


def test_item16_abort_after_the_rollout_completed_is_refused():
    """Issue 37 item 16: an abort of a completed rollout promised to roll slices back, changed
    nothing, and left the position Aborted for good."""
    complete = decide(policy(Wave(1, pause=True)), "r2", Position("r2", "r1"), (D, D, D), T0)
    assert complete.state == State.COMPLETE
    with pytest.raises(VerbRefused) as refused:
        abort(complete, T0, "dave")
    assert refusal_sentence(refused.value) == ("the rollout to r2 is complete: nothing to abort; to go back, change the set's "
                                  "template back")
    # while any slice still runs the old revision, an abort goes on as before
    assert abort(decide(policy(), "r2", Position("r2", "r1"), (D, D, F), T0), T0, "dave").aborted.by == "dave"


# --- issue 37: slices added mid-rollout, a lost position -----------------------------------------

E = Progress.EMPTY


def revisions_by_slice(cluster) -> dict[int, set[str]]:
    return {s: set(groups) for s, groups in groups_by_slice(cluster).items()}


def test_item_2_a_slice_added_outside_the_admitted_waves_starts_at_the_stable_revision():
    """Issue 37 item 2: slices 6 -> 9 with the canary at its pause gate created slices 6-8 straight
    at the new revision; they start at the stable one, and roll when their wave comes."""
    cluster, ds = fleet(6, policy(Wave(1, pause=True)))
    stable = make_set({"prefill": 1, "decode": 1}, "img:1", 6).revision
    at_gate = until_held(ds, cluster, None)
    assert at_gate.decision.state == State.AT_GATE
    grown = replace(ds, slices=9)
    passage, result, _ = run_pass(grown, cluster, at_gate.decision.position, T0)
    assert {a.slice for a in result.actions} == {6, 7, 8}
    cluster.execute(result.actions)
    cluster.settle()
    assert revisions_by_slice(cluster) == {0: {ds.revision}, **{s: {stable} for s in range(1, 9)}}
    assert passage.decision.stable_starts == (6, 7, 8) and passage.decision.state == State.AT_GATE
    held = until_held(grown, cluster, passage.decision.position)
    assert held.decision.state == State.AT_GATE and held.decision.held == {s: Hold.WAVE for s in range(1, 9)}
    done = until_held(grown, cluster, promote(held.decision, T0, "alice"))
    assert done.decision.state == State.COMPLETE
    assert revisions_by_slice(cluster) == {s: {ds.revision} for s in range(9)}


def test_item_2_a_start_at_the_stable_revision_cut_short_is_finished_before_its_wave():
    """Each LWS is created on its own: a run stopped between a new slice's roles leaves it with
    some; the next pass creates the rest at the stable revision, not at its wave."""
    cluster, ds = fleet(4, policy(Wave(1, pause=True)))
    at_gate = until_held(ds, cluster, None)
    grown = replace(ds, slices=5)
    passage, result, _ = run_pass(grown, cluster, at_gate.decision.position, T0)
    cluster.execute(result.actions[:1])  # the first LWS of slice 4 only
    cluster.settle()
    again, result, _ = run_pass(grown, cluster, passage.decision.position, T0)
    assert 4 in again.admission.toward and {a.slice for a in result.actions} == {4}
    cluster.execute(result.actions)
    cluster.settle()
    assert revisions_by_slice(cluster)[4] == {make_set({"prefill": 1, "decode": 1}, "img:1", 4).revision}
    assert len([name for name in cluster.lws() if name.startswith("llm-4-")]) == 2
    assert until_held(grown, cluster, again.decision.position).decision.held[4] == Hold.WAVE


def test_item_2_percent_waves_resolve_against_the_new_slice_count():
    """A new slice inside the admitted waves starts at the rollout's revision, one outside at the
    stable one; `50%` of 4 slices admits two."""
    half = policy(Wave("50%", pause=True))
    decision = decide(half, "r2", Position("r2", "r1"), (D, P, E, E, E, E), T0)
    assert decision.moves == (0, 1, 2, 3, 4, 5) and decision.stable_starts == (3, 4, 5)  # 50% of 6: 3
    first = decide(half, "r2", Position("r2", "r1"), (D, P, E), T0)
    assert first.stable_starts == (2,) and first.held == {}  # 50% of 3 is 2: slice 1 is admitted
    at_rest = decide(half, "r2", Position("r2", "r1"), (D, E, E), T0)
    assert at_rest.state == State.COMPLETE and at_rest.stable_starts == ()  # no slice runs r1 any more
    no_stable = decide(half, "r2", Position("r2", ""), (D, P, E), T0)
    assert no_stable.stable_starts == ()


def test_item_2_slices_lowered_mid_rollout_keep_admission_sane():
    """Slices lowered below the reached wave: the position follows the waves that remain, the
    removed slices go, and the rollout ends."""
    cluster, ds = fleet(6, policy(Wave(1, pause=True), Wave(4, pause=True)))
    first = until_held(ds, cluster, None)
    second = until_held(ds, cluster, promote(first.decision, T0, "alice"))
    assert second.decision.wave == 1 and second.decision.state == State.AT_GATE
    fewer = replace(ds, slices=2)
    passage, result, _ = run_pass(fewer, cluster, second.decision.position, T0)
    assert passage.decision.state == State.COMPLETE and passage.decision.wave == 1
    cluster.execute(result.actions)
    assert set(revisions_by_slice(cluster)) == {0, 1}
    assert until_held(fewer, cluster, passage.decision.position).decision.state == State.COMPLETE


def test_item_3_a_lost_position_mid_rollout_is_rebuilt_paused_and_nothing_moves():
    """Issue 37 item 3: with the RolloutState gone after an abort and one rollback step, the next
    steps rolled the aborted revision forward. No recorded position: paused by kubectl-disagg,
    saying what the live objects prove and what continues it."""
    cluster, ds = fleet(4, policy(Wave(2, pause=True)))
    at_gate = until_held(ds, cluster, None)
    aborted = abort(at_gate.decision, T0, "dave")
    passage, result, _ = run_pass(ds, cluster, aborted, T0)
    cluster.execute(result.actions)  # one rollback step
    cluster.settle()
    before = {k: v["metadata"]["resourceVersion"] for k, v in cluster.lws().items()}
    lost, result, _ = run_pass(ds, cluster, None, T0)
    decision = lost.decision
    assert decision.state == State.PAUSED and result.actions == () and decision.wave == 0
    assert decision.position.paused.by == "kubectl-disagg" and decision.position.gates == ()
    assert [(e.reason, e.detail) for e in decision.events] == [("RolloutPaused", decision.position.paused.reason)]
    assert decision.position.paused.reason == ("no recorded position: the RolloutState of this rollout was not "
                                               f"found; slices 0-1 already run {ds.revision}")
    assert lost.admission.stopped == ()  # the pacer's to phrase, in its mode's words
    assert stopped(decision) == Stopped(Stop.LOST, 0, decision.position.paused, decision.position.stable)
    assert stopped_reasons(decision) == (
        f"the rollout is paused ({decision.position.paused.reason}): `kubectl disagg rollout resume` continues it "
        "from wave 1 (its gates are passed again), `kubectl disagg rollout abort` rolls it back to the stable "
        f"revision {decision.position.stable}",)
    assert {k: v["metadata"]["resourceVersion"] for k, v in cluster.lws().items()} == before
    # abort again: the rollback goes on, the untouched slices stay so
    back = until_held(ds, cluster, abort(decision, T0, "dave"))
    assert back.decision.state == State.ABORTED and revisions_by_slice(cluster) == {
        s: {decision.position.stable} for s in range(4)}


def test_item_3_resume_after_a_lost_position_passes_the_gates_again():
    cluster, ds = fleet(4, policy(Wave(1, pause=True), Wave(2, pause=True)))
    first = until_held(ds, cluster, None)
    until_held(ds, cluster, promote(first.decision, T0, "alice"))  # slice 1 done, at the second gate
    lost = run_pass(ds, cluster, None, T0)[0].decision
    assert lost.state == State.PAUSED and "slices 0-1 already run" in lost.position.paused.reason
    resumed = until_held(ds, cluster, resume(lost.position))
    assert resumed.decision.state == State.AT_GATE and resumed.decision.gate.wave == 0  # promoted again
    assert revisions_by_slice(cluster)[2] != {ds.revision}


def test_item_3_only_a_missing_position_is_a_lost_one():
    """A position of another rollout (the template changed again mid-rollout, or back and forth)
    starts afresh as before: a rollout of its own, paced from wave 1."""
    from kubectl_disagg.core.delivery.waves import position_for

    canary = policy(Wave(1, pause=True))
    assert position_for(canary, None, "r2", "r1", (D, F, P), T0).paused.by == "kubectl-disagg"
    # (each fresh position records the slices that already run its revision: design §9.6)
    assert position_for(canary, Position("r3", "r1"), "r2", "r1", (D, F, P), T0) == Position("r2", "r1", found=(0, 1))
    assert position_for(canary, Position("r1", "r0"), "r2", "r1", (D, F, P), T0) == Position("r2", "r1", found=(0, 1))
    assert position_for(None, None, "r2", "r1", (D, F, P), T0) == Position("r2", "r1", found=(0, 1))


def test_item_3_a_first_rollout_without_a_position_starts_normally():
    cluster, ds = fleet(3, policy(Wave(1, pause=True)))
    passage, result, _ = run_pass(ds, cluster, None, T0)
    assert passage.decision.state == State.ROLLING and {a.slice for a in result.actions} == {0}
    # and a template reverted mid-rollout, its position recorded, rolls back as a rollout of its own
    cluster.execute(result.actions)
    cluster.settle()
    old = replace(make_set({"prefill": 1, "decode": 1}, "img:1", 3), policy=ds.policy)
    reverted = run_pass(old, cluster, passage.decision.position, T0)[0].decision
    assert reverted.state == State.ROLLING and reverted.position.paused is None


@st.composite
def scaled_scenarios(draw):
    slices, paced, replicas, _ = draw(scenarios())
    ops = draw(st.lists(st.sampled_from(["settle", "settle", "settle", "partial", "promote", "tick", "grow",
                                         "shrink", "lose", "resume"]), min_size=10, max_size=60))
    return slices, paced, replicas, ops


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(scaled_scenarios())
def test_item_2_3_slices_scaled_and_a_position_lost_at_any_time_keep_new_slices_out_of_later_waves(scenario):
    """Issue 37 items 2 and 3 as random events: `slices` raised or lowered, the position lost, at
    any point of a paced rollout. No slice is created at the new revision outside the admitted
    waves, no pending slice starts outside them, a lost position moves nothing until resumed,
    and the rollout still ends with every slice at the new revision."""
    slices, paced, replicas, ops = scenario
    cluster, ds = fleet(slices, paced, replicas)
    stable = make_set(replicas, "img:1", slices).revision
    position, now = None, T0
    for op in ops + ["resume", "promote"] + ["settle", "promote", "resume"] * 120:
        passage, result, snapshot = run_pass(ds, cluster, position, now)
        decision = passage.decision
        waves = resolve_waves(paced, ds.slices)
        admitted = waves[decision.wave].end
        progress = slice_progress(ds.name, ds.revision, ds.slices, snapshot)
        for action in result.actions:
            if action.kind == "LeaderWorkerSet" and hasattr(action, "object") and action.slice >= admitted \
                    and progress[action.slice] == Progress.EMPTY and decision.state != State.COMPLETE:
                assert action.object["metadata"]["labels"]["disaggregatedset.x-k8s.io/revision"] == stable
        started = {a.slice for a in result.actions} & {s for s, p in enumerate(progress) if p == P}
        assert all(s < admitted for s in started)
        if position is None and decision.state == State.PAUSED:
            # nothing moves but slices removed, and slices gained, which start at the stable revision
            assert all(a.slice >= ds.slices or progress[a.slice] == Progress.EMPTY for a in result.actions)
            assert all(a.object["metadata"]["labels"]["disaggregatedset.x-k8s.io/revision"] == stable
                       for a in result.actions if a.kind == "LeaderWorkerSet" and hasattr(a, "object"))
        if decision.state == State.COMPLETE and not result.actions:
            break
        position = decision.position
        if op in ("settle", "partial"):
            cluster.execute(result.actions)
            cluster.settle() if op == "settle" else cluster.settle(
                ready_cap=lambda name, n: n - 1 if n > 1 else n)
        elif op == "promote":
            try:
                position = promote(decision, now, "tester")
            except VerbRefused:
                pass
        elif op == "tick":
            now += datetime.timedelta(seconds=30)
        elif op == "grow":
            ds = replace(ds, slices=ds.slices + 2)
        elif op == "shrink" and ds.slices > 1:
            ds = replace(ds, slices=ds.slices - 1)
        elif op == "lose":
            position = None
        elif op == "resume" and position.paused is not None:
            position = resume(position)
    else:
        raise AssertionError(f"not complete: {decision}")
    assert revisions_by_slice(cluster) == {s: {ds.revision} for s in range(ds.slices)}


# --- issue 47: capacity changes reach the slices a policy holds ----------------------------------


def counts_by_slice(cluster) -> dict[int, dict[str, dict[str, int]]]:
    return {s: {rev: dict(roles) for rev, roles in groups.items()} for s, groups in groups_by_slice(cluster).items()}


def test_issue47_item12_a_replicas_change_reaches_the_held_slices_at_once():
    """Issue 47 item 12: decode 2 -> 3 with the canary at its gate left the held slices at 2 for
    the whole rollout. A replicas change is not a template change: the held slices run the
    stable revision, and the new target applies to it at once; they stay held for the rollout."""
    cluster, ds = fleet(4, policy(Wave(1, pause=True)), {"prefill": 1, "decode": 2})
    stable = make_set({"prefill": 1, "decode": 2}, "img:1", 4).revision
    at_gate = until_held(ds, cluster, None)
    assert at_gate.decision.state == State.AT_GATE
    more = replace(make_set({"prefill": 1, "decode": 3}, "img:2", 4), policy=ds.policy)
    passage, result, _ = run_pass(more, cluster, at_gate.decision.position, T0)
    assert {a.slice for a in result.actions} == {0, 1, 2, 3}  # every slice, in one pass
    reports = {r.slice: r for r in result.slices}
    assert all(reports[s].phase == Phase.HELD and reports[s].waiting_for == (Hold.WAVE.value,) for s in (1, 2, 3))
    cluster.execute(result.actions)
    cluster.settle()
    assert counts_by_slice(cluster) == {0: {more.revision: {"prefill": 1, "decode": 3}},
                                        **{s: {stable: {"prefill": 1, "decode": 3}} for s in (1, 2, 3)}}
    held = until_held(more, cluster, passage.decision.position)
    assert held.decision.state == State.AT_GATE and held.decision.held == {s: Hold.WAVE for s in (1, 2, 3)}
    done = until_held(more, cluster, promote(held.decision, T0, "alice"))
    assert done.decision.state == State.COMPLETE
    assert counts_by_slice(cluster) == {s: {more.revision: {"prefill": 1, "decode": 3}} for s in range(4)}


def test_issue47_item12_paused_or_aborted_the_held_slices_follow_the_target_and_the_rolling_ones_wait():
    """Paused mid-wave: the slices at one revision take the new target (lowered here), the slice
    in flight stays where it stands. Aborted: the slices rolled back and the ones never started
    take it too."""
    cluster, ds = fleet(3, policy(Wave(2, pause=True)), {"prefill": 2, "decode": 2})
    stable = make_set({"prefill": 2, "decode": 2}, "img:1", 3).revision
    passage, result, _ = run_pass(ds, cluster, None, T0)  # slices 0-1 start
    cluster.execute(result.actions)
    cluster.settle()
    passage, result, _ = run_pass(ds, cluster, passage.decision.position, T0)  # their first step
    cluster.execute(result.actions)
    cluster.settle()
    rolling = counts_by_slice(cluster)[0]
    assert len(rolling) == 2
    paused = pause(passage.decision.position, T0, "bob")
    fewer = replace(make_set({"prefill": 1, "decode": 2}, "img:2", 3), policy=ds.policy)
    passage, result, _ = run_pass(fewer, cluster, paused, T0)
    assert passage.decision.state == State.PAUSED and {a.slice for a in result.actions} == {2}
    cluster.execute(result.actions)
    cluster.settle()
    assert counts_by_slice(cluster)[2] == {stable: {"prefill": 1, "decode": 2}}
    assert counts_by_slice(cluster)[0] == rolling  # paused: no planner step
    aborted = until_held(fewer, cluster, abort(passage.decision, T0, "dave"))
    assert aborted.decision.state == State.ABORTED
    assert counts_by_slice(cluster) == {s: {stable: {"prefill": 1, "decode": 2}} for s in range(3)}
    more = replace(make_set({"prefill": 3, "decode": 2}, "img:2", 3), policy=ds.policy)
    again = until_held(more, cluster, aborted.decision.position)
    assert again.decision.state == State.ABORTED
    assert counts_by_slice(cluster) == {s: {stable: {"prefill": 3, "decode": 2}} for s in range(3)}


def test_issue47_item7_slices_raised_while_paused_start_at_the_stable_revision():
    """Issue 47 item 7: the pause holds the rollout, not the set's size: `slices` 3 -> 5 while
    paused at the canary's gate creates slices 3-4 at the stable revision, and nothing else moves."""
    cluster, ds = fleet(3, policy(Wave(1, pause=True)))
    stable = make_set({"prefill": 1, "decode": 1}, "img:1", 3).revision
    at_gate = until_held(ds, cluster, None)
    grown = replace(ds, slices=5)
    passage, result, _ = run_pass(grown, cluster, pause(at_gate.decision.position, T0, "bob"), T0)
    decision = passage.decision
    assert decision.state == State.PAUSED and decision.stable_starts == (3, 4)
    assert stopped(decision).why == Stop.PAUSED
    assert {a.slice for a in result.actions} == {3, 4}
    cluster.execute(result.actions)
    cluster.settle()
    assert revisions_by_slice(cluster) == {0: {ds.revision}, **{s: {stable} for s in range(1, 5)}}
    held = until_held(grown, cluster, decision.position)
    assert held.decision.state == State.PAUSED and held.decision.held == {s: Hold.PAUSED for s in range(5)}
