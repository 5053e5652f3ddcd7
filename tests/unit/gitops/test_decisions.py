"""Which step commits are decisions (gitops/decisions.py, issue 49): told from the position each
step writes, over the 12-slice fleet of docs/gitops.md ("How many commits")."""

from __future__ import annotations

from collections import Counter

from kubectl_disagg.gitops.decisions import ABORT, ANALYSIS, PAUSE, STEP, WAVE, decision_branch, step_kind
from tests.support.gitops_pr import fleet_steps


def kinds(ttft: float) -> list[str]:
    return [step_kind(ds, step.before, step.state) for ds, step in fleet_steps(12, ttft=ttft, limit=2000)]


def test_a_good_rollout_has_three_decisions_the_rest_are_steps():
    found = kinds(0.1)
    assert Counter(found) == {STEP: len(found) - 3, ANALYSIS: 1, PAUSE: 1, WAVE: 1}
    assert found.index(ANALYSIS) < found.index(PAUSE) < found.index(WAVE)


def test_a_bad_canary_has_one_decision_the_abort():
    found = kinds(2.0)
    assert Counter(found) == {STEP: len(found) - 1, ABORT: 1}


def test_a_decision_branch_is_named_for_the_decision():
    assert decision_branch("disagg/", "llama", "92eb31e9c0", 9, ANALYSIS) == "disagg/llama/92eb31e9/step-9-analysis"
