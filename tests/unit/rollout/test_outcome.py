"""`rollout.outcome`: one outcome type for both modes, its priority, one mapping and one
aggregation per exit table, whichever store ran the command."""

from __future__ import annotations

from kubectl_disagg.exits import StatusExit, StepExit
from kubectl_disagg.rollout.outcome import STATUS_EXIT, STEP_EXIT, step_exit
from kubectl_disagg.core.delivery.outcome import Outcome, most_pressing


def test_most_pressing_asks_most_of_the_operator():
    o = Outcome
    assert most_pressing([o.COMPLETE, o.ADVANCED]) == o.ADVANCED
    assert most_pressing([o.ADVANCED, o.HELD, o.WAITING]) == o.WAITING
    assert most_pressing([o.COMPLETE, o.TIMEOUT, o.REFUSED]) == o.REFUSED
    assert step_exit([o.COMPLETE, o.TIMEOUT, o.REFUSED]) == StepExit.REFUSED


def test_the_git_priority_is_the_one_its_exit_codes_had():
    """Refused, timeout, waiting, held, advanced, complete: the order `rollout step|status
    --gitops` combined their sets' codes in before the outcome type carried it."""
    git = [Outcome.REFUSED, Outcome.TIMEOUT, Outcome.WAITING, Outcome.HELD, Outcome.ADVANCED, Outcome.COMPLETE]
    assert sorted(git, key=list(Outcome).index) == git


def test_a_run_to_the_end_and_nothing_left_to_do_are_two_outcomes():
    """The cluster's --until-complete that completed the set took its steps (0); through git a
    rollout with nothing left to do writes nothing (6): one table, two meanings, two members."""
    assert STEP_EXIT[Outcome.FINISHED] == STEP_EXIT[Outcome.ADVANCED] == StepExit.OK
    assert STEP_EXIT[Outcome.COMPLETE] == StepExit.COMPLETE
    assert step_exit([Outcome.FINISHED, Outcome.FINISHED]) == StepExit.OK


def test_each_exit_table_is_reached_from_one_mapping():
    """Every code a command family ends with by its outcome (all but usage, which click gives;
    status's error too) is the image of its one mapping; the numbers are the contract."""
    assert set(STEP_EXIT.values()) == set(StepExit) - {StepExit.USAGE}
    assert set(STATUS_EXIT.values()) == set(StatusExit) - {StatusExit.ERROR, StatusExit.USAGE}
    assert str(Outcome.COMPLETE) == "complete" and str(Outcome.ADVANCED) == "advanced"  # the -o json words
