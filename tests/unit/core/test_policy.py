"""The RolloutPolicy read beside its set (design §9): parsing, FILE:LINE problems, waves resolved."""

from __future__ import annotations

import pytest

from kubectl_disagg.core.policy import ResolvedWave, RolloutPolicy, Wave, policies_for, resolve_waves
from kubectl_disagg.core.sets import load_documents
from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.reader import parse_stream
from tests.support.policy import POLICY, SET


def load(text: str):
    return load_documents(parse_stream(text, "ds.yaml"))


def problems(text: str) -> list[str]:
    with pytest.raises(UserError) as raised:
        load(text)
    return raised.value.lines()


def test_a_policy_beside_its_set_is_attached_to_it_and_not_passed_through():
    loaded = load(SET + POLICY)
    (ds,) = loaded.sets
    assert len(loaded.items) == 1  # render passes nothing through for the policy
    policy = ds.policy
    assert isinstance(policy, RolloutPolicy) and policy.target == "llama" and policy.on_failure == "pause"
    assert policy.waves == (Wave(1, (), True, None), Wave("50%", ("ttft",), True, 900.0))
    assert policy.budget(4) == 2


def test_without_a_policy_a_set_has_none():
    (ds,) = load(SET).sets
    assert ds.policy is None


def test_waves_resolve_against_the_slices_with_an_implied_last_wave():
    (ds,) = load(SET + POLICY).sets
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
    sets = load_documents(documents[:1]).sets
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
    assert load(SET + POLICY.replace("duration: 15m", "duration: 720h")).sets[0].policy.waves[1].duration == 720 * 3600


UNPLACED_SET = SET.replace("metadata: {name: llama, namespace: serving}", "metadata: {name: llama}")


def test_a_policy_matches_its_set_by_namespace_once_n_has_filled_both_in():
    """Issue 37 item 17d: a policy in "serving" paced a set naming no namespace deployed with -n
    prod. kubectl's one rule (-n, else the context's, fills in a document naming none) is applied
    to both before they are matched."""
    documents = parse_stream(UNPLACED_SET + POLICY, "ds.yaml")
    assert load_documents(documents, "serving").sets[0].policy is not None
    for namespace, fallback in (("prod", "default"), (None, "default")):
        with pytest.raises(UserError) as raised:
            load_documents(documents, namespace, fallback)
        assert raised.value.lines() == [
            "ds.yaml:20: spec.targetRef.name: names disaggregatedset/llama in namespace serving, which is not in "
            f"the input; the input's is in namespace {namespace or fallback} (a document that names no namespace "
            "is in -n's, else the context's)"]
    assert load_documents(documents, None, "serving").sets[0].policy is not None
    unplaced_policy = POLICY.replace("metadata: {name: llama, namespace: serving}", "metadata: {name: llama}")
    assert load_documents(parse_stream(UNPLACED_SET + unplaced_policy, "ds.yaml"), "prod").sets[0].policy is not None
