"""`rollout.outcome`: one outcome type for both modes, its priority, one mapping per exit table."""

from __future__ import annotations

from kubectl_disagg.exits import StatusExit, StepExit
from kubectl_disagg.rollout.outcome import GITOPS_EXIT, STATUS_EXIT, STEP_EXIT, gitops_exit
from kubectl_disagg.core.delivery.outcome import Outcome, most_pressing


def test_most_pressing_asks_most_of_the_operator():
    o = Outcome
    assert most_pressing([o.COMPLETE, o.ADVANCED]) == o.ADVANCED
    assert most_pressing([o.ADVANCED, o.HELD, o.WAITING]) == o.WAITING
    assert most_pressing([o.COMPLETE, o.TIMEOUT, o.REFUSED]) == o.REFUSED
    assert gitops_exit([o.COMPLETE, o.TIMEOUT, o.REFUSED]) == StepExit.REFUSED


def test_the_git_priority_is_the_one_its_exit_codes_had():
    """Refused, timeout, waiting, held, advanced, complete: the order `rollout step|status
    --gitops` combined their sets' codes in before the outcome type carried it."""
    assert sorted(GITOPS_EXIT, key=list(Outcome).index) == [
        Outcome.REFUSED, Outcome.TIMEOUT, Outcome.WAITING, Outcome.HELD, Outcome.ADVANCED, Outcome.COMPLETE]


def test_each_exit_table_is_reached_from_one_mapping():
    """Every code a command family ends with by its outcome (all but error and usage, which
    the CLI's errors give) is the image of its one mapping; the numbers are the contract."""
    assert set(GITOPS_EXIT.values()) == set(StepExit) - {StepExit.ERROR, StepExit.USAGE}
    assert set(STEP_EXIT.values()) == set(StepExit) - {StepExit.USAGE, StepExit.WAITING, StepExit.COMPLETE}
    assert set(STATUS_EXIT.values()) == set(StatusExit) - {StatusExit.ERROR, StatusExit.USAGE}
    assert str(Outcome.COMPLETE) == "complete" and str(Outcome.ADVANCED) == "advanced"  # the -o json words
