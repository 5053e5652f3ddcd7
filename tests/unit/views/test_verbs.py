"""What the rollout verbs print (views/verbs.py): `promote --full` names every gate it passes."""

from __future__ import annotations

from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.core.delivery.waves import Progress, decide, promote
from kubectl_disagg.rollout.verbs import PROMOTE, VerbResult
from kubectl_disagg.views.verbs import VerbConsole, passed_document, verb_line
from tests.support.sets import NS, make_set
from tests.support.waves import T0

P, F = Progress.PENDING, Progress.IN_FLIGHT
D, E = Progress.DONE, Progress.EMPTY


def policy(*waves: Wave) -> RolloutPolicy:
    return RolloutPolicy("llm", NS, "llm", tuple(waves), None, "abort")


def test_promote_full_names_each_gate_it_passes_and_the_analyses_it_skips(capsys):
    gated = policy(Wave(1, pause=True), Wave(2, analysis=("ttft", "errors")), Wave(3, analysis=("ttft",)))
    canary = decide(gated, "r2", Position("r2", "r1"), (F, P, P, P), T0)
    full = promote(canary, T0, "carol", full=True, skip_analysis=True)
    ds = make_set({"prefill": 1, "decode": 1}, slices=4)
    result = VerbResult(ds, NS, PROMOTE, canary, decide(gated, "r2", full, (F, P, P, P), T0), True)
    assert [(g.wave, g.kind) for g in result.passed] == [(0, "pause"), (1, "analysis"), (2, "analysis")]
    assert verb_line(result).strip() == (
        f"disaggregatedset/llm in {NS} promoted --full: the pause after wave 1, the analysis after wave 2 (ttft, "
        "errors), without its verdict, and the analysis after wave 3 (ttft), without its verdict, pass as their "
        "waves complete, and maxSlicesInFlight is lifted; the next `kubectl disagg rollout step` rolls every "
        "slice")
    assert passed_document(result.passed) == [
        {"wave": 1, "gate": "pause"}, {"wave": 2, "gate": "analysis", "checks": ["ttft", "errors"], "skipped": True},
        {"wave": 3, "gate": "analysis", "checks": ["ttft"], "skipped": True}]
    VerbConsole("json").done(result)
    assert '"passes": [' in capsys.readouterr().out


def test_promote_full_with_no_gate_ahead_says_so():
    done = decide(policy(Wave(1)), "r2", Position("r2", "r1"), (F, P), T0)
    result = VerbResult(make_set({"prefill": 1, "decode": 1}, slices=2), NS, PROMOTE, done, done, True)
    assert result.passed == () and " promoted --full: no gate was ahead, and maxSlicesInFlight is lifted" in \
        verb_line(result)


def test_promote_full_over_a_persons_pause_says_it_stays_paused():
    from kubectl_disagg.core.delivery.waves import pause

    paced = policy(Wave(1, pause=True), Wave(2))
    paused = pause(Position("r2", "r1"), T0, "bob")
    before = decide(paced, "r2", paused, (F, P), T0)
    after = decide(paced, "r2", promote(before, T0, "carol", full=True), (F, P), T0)
    line = verb_line(VerbResult(make_set({"prefill": 1, "decode": 1}, slices=2), NS, PROMOTE, before, after, True))
    assert line.strip().endswith("and maxSlicesInFlight is lifted; it stays paused by bob: "
                                 "`kubectl disagg rollout resume` continues it")


def test_issue47_item7_an_abort_names_only_the_slices_that_run_the_revision_as_rolled_back():
    """Paused at the canary with `slices` raised and no pass since: the abort listed the slices
    the set gained (nothing deployed) among those it rolls back; they start at the stable revision."""
    from kubectl_disagg.core.delivery.waves import abort, pause

    paced = policy(Wave(1, pause=True), Wave(4))
    before = decide(paced, "r2", pause(Position("r2", "r1"), T0, "bob"), (D, P, P, E, E), T0)
    after = decide(paced, "r2", abort(before, T0, "dave"), (D, P, P, E, E), T0)
    line = verb_line(VerbResult(make_set({"prefill": 1, "decode": 1}, slices=5), NS, "abort", before, after))
    assert "rolls slice 0 back to revision r1; slices 1-4 never started and stay as they are" in line, line
