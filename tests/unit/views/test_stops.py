"""`views.stops`: the words of why `rollout step` will not act on a set the controller runs."""

from __future__ import annotations

from kubectl_disagg.views.stops import owned_sentence, reconciled_sentence


def test_a_set_the_controller_owns_is_handed_over_by_name():
    assert owned_sentence("llm", ["leaderworkerset/a", "service/a-prv"]) == (
        "the DisaggregatedSet controller owns this set (leaderworkerset/a, service/a-prv: their ownerReferences "
        "name disaggregatedset/llm as controller); it rolls the set out itself, and stepping it too would fight "
        "it. `rollout status` and `rollout plan` follow it read-only; `kubectl disagg handover to-plugin NAME` "
        "hands it over once the controller is stopped")
    many = [f"leaderworkerset/{n}" for n in "abcde"]
    assert "(leaderworkerset/a, leaderworkerset/b, leaderworkerset/c and 2 more: " in owned_sentence("llm", many)


def test_a_stored_status_names_its_signs_and_the_override():
    assert reconciled_sentence("llm", ["status.observedGeneration", "status.conditions"]) == (
        "disaggregatedset/llm has status.observedGeneration, status.conditions, which only the DisaggregatedSet "
        "controller writes: a controller reconciles it (the LWS controller runs one from LWS v0.9 on). Stepping "
        "it too would fight it; pass --ignore-controller if no controller runs any more")
