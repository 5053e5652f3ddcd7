"""The RolloutPolicy read beside its set (design §9): parsing, FILE:LINE problems, waves resolved."""

from __future__ import annotations

import datetime
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_disagg.core.delivery.policy import ResolvedWave, RolloutPolicy, Wave, policies_for, position_problems, resolve_waves
from kubectl_disagg.core.delivery.position import GatePassed, Position, Stamp
from kubectl_disagg.core.delivery.sets import load_documents, load_sets
from kubectl_disagg.core.delivery.waves import Progress, State, VerbRefused, abort, decide, pause, promote, resume
from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.reader import parse_stream
from tests.support.policy import POLICY, SET
from tests.support.sets import make_set


def load(text: str):
    return load_documents(parse_stream(text, "ds.yaml"))


def problems(text: str) -> list[str]:
    with pytest.raises(UserError) as raised:
        load(text)
    return raised.value.lines()


def test_a_policy_beside_its_set_is_attached_to_it_and_not_passed_through():
    items, _ = load(SET + POLICY)
    (ds,) = items
    assert len(items) == 1  # render passes nothing through for the policy
    policy = ds.policy
    assert isinstance(policy, RolloutPolicy) and policy.target == "llama" and policy.on_failure == "pause"
    assert policy.waves == (Wave(1, (), True, None), Wave("50%", ("ttft",), True, 900.0))
    assert policy.budget(4) == 2


def test_without_a_policy_a_set_has_none():
    (ds,) = load(SET)[0]
    assert ds.policy is None


def test_waves_resolve_against_the_slices_with_an_implied_last_wave():
    (ds,) = load(SET + POLICY)[0]
    assert resolve_waves(ds.policy, 4) == (
        ResolvedWave(0, 0, 1, (), True, None), ResolvedWave(1, 1, 2, ("ttft",), True, 900.0),
        ResolvedWave(2, 2, 4, implied=True))
    # 50% of 1 slice rounds to the wave before: that wave admits none, its gates follow at once
    assert [(w.start, w.end) for w in resolve_waves(ds.policy, 1)] == [(0, 1), (1, 1)]
    assert resolve_waves(None, 3) == (ResolvedWave(0, 0, 3),)


def test_every_problem_with_file_line_and_path():
    bad = POLICY.replace("maxSlicesInFlight: 2", "maxSlicesInFlight: 0").replace(
        '"50%"', "1").replace("[ttft]", "[ttft, nope]").replace("onFailure: pause", "onFailure: retry").replace(
        "15m", "soon")
    assert problems(SET + bad) == [
        "ds.yaml:21: spec.maxSlicesInFlight: must be an integer of at least 1 or a percentage like \"10%\" "
        "(1% to 100%), got 0",
        "ds.yaml:31: spec.onFailure: Unsupported value: 'retry': supported values: \"abort\", \"pause\"",
        "ds.yaml:25: spec.waves[1].slices: waves are cumulative and strictly increasing: 1 is not more than "
        "wave 0's 1",
        "ds.yaml:26: spec.waves[1].analysis[1]: unknown check \"nope\" (known: ttft)",
        "ds.yaml:27: spec.waves[1].pause.duration: Invalid value: \"soon\": must be a positive duration such as 30s, "
        "15m or 1h30m",
    ]


def test_percentages_above_100_and_unknown_fields_are_refused():
    bad = POLICY.replace('"50%"', '"150%"').replace("pause: {}", "pause: {}\n    when: later")
    assert problems(SET + bad) == [
        'ds.yaml:25: spec.waves[0].when: unknown field "when" (known: analysis, pause, slices)',
        "ds.yaml:26: spec.waves[1].slices: must be a count of at least 1 or a percentage like \"25%\" "
        "(1% to 100%), got '150%'",
    ]


def test_a_policy_must_name_a_set_of_the_input():
    assert problems(SET + POLICY.replace("targetRef: {name: llama}", "targetRef: {name: other}")) == [
        "ds.yaml:20: spec.targetRef.name: names disaggregatedset/other in namespace serving, which is not in "
        "the input (a policy is read beside its set: give both to -f)"]
    assert problems(SET + POLICY.replace("metadata: {name: llama, namespace: serving}",
                                         "metadata: {name: llama, namespace: prod}"))[0].startswith(
        "ds.yaml:20: spec.targetRef.name: names disaggregatedset/llama in namespace prod")


def test_one_policy_per_set():
    second = POLICY.replace("metadata: {name: llama,", "metadata: {name: second,")
    (line,) = problems(SET + POLICY + second)
    assert line.startswith("ds.yaml:37: spec.targetRef.name: a second RolloutPolicy for disaggregatedset/llama "
                           "(the first: rolloutpolicy/llama at ds.yaml:")


def test_waves_that_admit_fewer_slices_than_the_wave_before_are_refused():
    bad = POLICY.replace("slices: 1\n", 'slices: "75%"\n').replace('"50%"', "2").replace("[ttft]", "[]")
    assert problems(SET + bad) == [
        "ds.yaml:25: spec.waves[1].slices: admits 2 of the set's 4 slices, fewer than the 3 the wave before "
        "reached: waves are cumulative"]


def test_an_analysis_name_needs_spec_analysis():
    bad = POLICY.split("  analysis:\n    checks:")[0] + "  onFailure: abort\n"
    assert problems(SET + bad) == ['ds.yaml:26: spec.waves[1].analysis[0]: unknown check "ttft" '
                                   '(known: none: spec.analysis has no checks)']


def test_policies_for_is_pure_over_documents_and_sets():
    documents = parse_stream(SET + POLICY, "ds.yaml")
    sets = load_sets(documents[:1])
    by_set, found = policies_for(documents, sets)
    assert found == [] and list(by_set) == [("serving", "llama")]


def test_a_check_names_a_role_of_the_set():
    assert problems(SET + POLICY.replace("role: prefill", "role: prefil")) == [
        'ds.yaml:29: spec.analysis.checks[0].role: Invalid value: "prefil": not a role of the set '
        "(roles: prefill, decode)"]


def test_a_soak_is_at_most_720h():
    """Issue 37 item 8: `pause: {duration: 876000000h}` validated, then every verb overflowed."""
    for soak, why in (("876000000h", "must be at most 720h"), ("721h", "must be at most 720h"),
                      ("9" * 400 + "s", "must be at most 720h")):
        (line,) = problems(SET + POLICY.replace("duration: 15m", f"duration: {soak}"))
        assert line.startswith("ds.yaml:27: spec.waves[1].pause.duration: Invalid value: ") and why in line
    assert load(SET + POLICY.replace("duration: 15m", "duration: 720h"))[0][0].policy.waves[1].duration == 720 * 3600


UNPLACED_SET = SET.replace("metadata: {name: llama, namespace: serving}", "metadata: {name: llama}")


def test_a_policy_matches_its_set_by_namespace_once_n_has_filled_both_in():
    """Issue 37 item 17d: a policy in "serving" paced a set naming no namespace deployed with -n
    prod. kubectl's one rule (-n, else the context's, fills in a document naming none) is applied
    to both before they are matched."""
    documents = parse_stream(UNPLACED_SET + POLICY, "ds.yaml")
    assert load_sets(documents, "serving")[0].policy is not None
    for namespace, fallback in (("prod", "default"), (None, "default")):
        with pytest.raises(UserError) as raised:
            load_documents(documents, namespace, fallback)
        assert raised.value.lines() == [
            "ds.yaml:20: spec.targetRef.name: names disaggregatedset/llama in namespace serving, which is not in "
            f"the input; the input's is in namespace {namespace or fallback} (a document that names no namespace "
            "is in -n's, else the context's)"]
    assert load_sets(documents, None, "serving")[0].policy is not None
    unplaced_policy = POLICY.replace("metadata: {name: llama, namespace: serving}", "metadata: {name: llama}")
    assert load_sets(parse_stream(UNPLACED_SET + unplaced_policy, "ds.yaml"), "prod")[0].policy is not None


# --- a recorded position is one the planner could have written (issue 37 items 4 and 5) -------

T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
P, F, D = Progress.PENDING, Progress.IN_FLIGHT, Progress.DONE


def _position_case():
    """A 4-slice set rolling to img:2 under a canary with a manual pause, then a 15m soak."""
    paced = RolloutPolicy("llm", "default", "llm", (Wave(1, pause=True), Wave(2, pause=True, duration=900.0)))
    ds = replace(make_set({"prefill": 1, "decode": 1}, "img:2", 4), policy=paced)
    held = decide(paced, ds.revision, Position(ds.revision, "r1"), (D, P, P, P), T0).position
    return ds, held


def test_item4_a_position_past_an_unpassed_gate_is_refused():
    """Issue 37 item 4: `position.wave` patched past the canary's `pause: {}` (no gate recorded)
    was obeyed; it is refused at position.wave, saying how to set it back."""
    ds, held = _position_case()
    assert held.wave == 0 and held.completed and position_problems(ds, held) == []
    assert position_problems(ds, replace(held, wave=1)) == [(("wave",), (
        "is 1 (wave 2), past the pause gate after wave 1, which is not recorded as passed (position.gates): a "
        "rollout leaves a wave only through its gates (edited by hand? set it back to 0: the rollout then waits at "
        "that gate, and a promote passes it)"))]
    # past a wave never recorded completed, and beyond the policy's waves
    assert [path for path, _ in position_problems(ds, replace(held, wave=1, completed={}))] == [("wave",)]
    assert "but the RolloutPolicy has 3 waves" in position_problems(ds, replace(held, wave=7))[0][1]
    # `promote --full` recorded passes every gate: the position may be past them
    full = replace(held, wave=1, full=Stamp("2026-12-01T12:00:00Z", "carol"))
    assert position_problems(ds, full) == []
    # another rollout's position is not read, so not checked either
    assert position_problems(ds, replace(held, revision="r0", wave=1)) == []


def test_item4_a_gate_record_must_fit_its_gate():
    """Issue 37 item 4: who passed a gate, when and how must be what the planner records."""
    ds, held = _position_case()
    at = "2026-12-01T12:00:00Z"

    def problems(*gates, **changes):
        return [(path, message.split(" (edited")[0]) for path, message in
                position_problems(ds, replace(held, gates=gates, **changes))]

    assert problems(GatePassed(0, "pause", at, "alice", "promote")) == []
    assert problems(GatePassed(0, "pause", at, "alice", "verdict")) == [
        (("gates", 0, "how"), "is 'verdict', but the pause gate after wave 1 is passed by promote or duration or "
                              "promote --full")]
    assert problems(GatePassed(0, "pause", at, "soak", "duration")) == [
        (("gates", 0, "how"), "says the soak after wave 1 passed, but its pause has no duration (`pause: {}`): only "
                              "a promote passes it")]
    assert problems(GatePassed(0, "analysis", at, "alice", "promote")) == [
        (("gates", 0, "how"), "is 'promote', but the analysis gate after wave 1 is passed by verdict or promote "
                              "--full")]
    assert problems(GatePassed(0, "pause", at, "carol", "promote --full")) == [
        (("gates", 0, "how"), "says `promote --full` passed the pause gate after wave 1, but no `promote --full` is "
                              "recorded (position.full)")]
    # a gate for a wave not yet completed (the pre-passed gate of item 7), and twice the same gate
    assert problems(GatePassed(1, "pause", at, "alice", "promote")) == [
        (("gates", 0), "records the pause gate after wave 2 as passed, but wave 2 is not recorded as completed "
                       "(position.completed): a gate is passed only once every slice of its wave is done")]
    assert problems(GatePassed(0, "pause", at, "alice", "promote"), GatePassed(0, "pause", at, "bob", "promote")) \
        == [(("gates", 1), "records the pause gate after wave 1 a second time")]
    # a soak passed before its end; a wave recorded completed before the rollout reached it
    soaked = dict(wave=1, completed={0: at, 1: "2026-12-01T12:10:00Z"})
    early = GatePassed(1, "pause", "2026-12-01T12:24:59Z", "soak", "duration")
    assert problems(GatePassed(0, "pause", at, "alice", "promote"), early, **soaked) == [
        (("gates", 1, "at"), "is 2026-12-01T12:24:59Z, before the soak after wave 2 ends (2026-12-01T12:25:00Z: 15m "
                             "after the wave completed at 2026-12-01T12:10:00Z)")]
    assert problems(GatePassed(0, "pause", at, "alice", "promote"), replace(early, at="2026-12-01T12:25:00Z"),
                    **soaked) == []
    assert problems(completed={0: at, 1: at}) == [
        (("completed", "1"), "records wave 2 as completed at 2026-12-01T12:00:00Z, but the rollout has reached only "
                             "wave 1 (position.wave): a wave completes once it is reached")]


def test_item4_an_analysis_gate_passed_on_its_verdict_needs_a_passed_verdict():
    ds, held = _position_case()
    checked = replace(ds, policy=replace(ds.policy, waves=(Wave(1, analysis=("ttft",), pause=True),)))
    gate = GatePassed(0, "analysis", "2026-12-01T12:00:00Z", "analysis", "verdict")
    assert position_problems(checked, replace(held, gates=(gate,), verdicts={0: {"phase": "passed"}})) == []
    (found,) = position_problems(checked, replace(held, gates=(gate,), verdicts={0: {"phase": "failed"}}))
    assert found[0] == ("gates", 0, "how") and "position.verdicts records failed for wave 1" in found[1]
    pause = replace(gate, gate="pause", by="alice", how="promote")
    (found,) = position_problems(checked, replace(held, gates=(pause,)))
    assert found[0] == ("gates", 0) and "before its analysis" in found[1]


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.data())
def test_every_position_the_planner_writes_passes_the_check(data):
    """Random rollouts (decide, and every verb at any time): no position they write is refused,
    and the same position moved one wave past the gate it waits at always is."""
    slices = data.draw(st.integers(1, 6))
    counts = sorted(data.draw(st.sets(st.integers(1, slices), min_size=1, max_size=3)))
    waves = tuple(Wave(c, analysis=data.draw(st.sampled_from([(), ("ttft",)])), pause=data.draw(st.booleans()),
                       duration=data.draw(st.sampled_from([None, 60.0, 0.5]))) for c in counts)
    paced = RolloutPolicy("llm", "default", "llm", waves, data.draw(st.sampled_from([None, 1, 2])),
                          data.draw(st.sampled_from(["abort", "pause"])))
    ds = replace(make_set({"prefill": 1, "decode": 1}, "img:2", slices), policy=paced)
    progress, position = [P] * slices, Position(ds.revision, "r1")
    now = T0
    for _ in range(80):
        decision = decide(paced, ds.revision, position, tuple(progress), now)
        position = decision.position
        assert position_problems(ds, position) == [], (position, paced)
        if decision.gate is not None and position.full is None:  # the edit of item 4: past the gate it waits at
            assert ("wave",) in [path for path, _ in position_problems(ds, replace(position, wave=position.wave + 1))]
        op = data.draw(st.sampled_from(["step"] * 6 + ["tick"] * 2 + ["promote"] * 3 + ["verdict"] * 2 + [
            "full", "pause", "resume", "abort"]))
        try:
            if op == "promote":
                position = promote(decision, now, "alice")
            elif op == "full":
                position = promote(decision, now, "carol", full=True, skip_analysis=True)
            elif op == "pause":
                position = pause(position, now, "bob")
            elif op == "resume":
                position = resume(position)
            elif op == "abort":
                position = abort(decision, now, "dave")
        except VerbRefused:
            pass
        if op == "verdict" and decision.gate is not None and decision.gate.kind == "analysis":
            position = position.with_verdict(decision.gate.wave, {"phase": data.draw(
                st.sampled_from(["passed", "failed"]))})
        elif op == "tick":
            now += datetime.timedelta(seconds=data.draw(st.sampled_from([0.3, 30, 61])))
        elif op == "step" and decision.moves_to == ds.revision:
            for s in decision.moves:
                progress[s] = {P: F, F: D}.get(progress[s], progress[s])
        assert position_problems(ds, position) == [], (op, position, paced)
        if decision.state in (State.COMPLETE, State.ABORTED):
            break
