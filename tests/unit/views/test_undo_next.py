"""The line after `rollout undo` (views/history.py `undo_next`): the `rollout step` that takes
the rollout back, spelled as the user named the set, so that it runs as it stands."""

from __future__ import annotations

from kubectl_disagg.core.delivery.undo import ByHand
from kubectl_disagg.views.history import undo_next, undo_refusal
from kubectl_disagg.views.invocation import Invocation


def test_issue48_the_next_step_after_an_undo_repeats_the_namespace_and_each_file():
    """Issue 48: the hint was composed in the command from NAME or the -f paths alone: `-n` was
    dropped (the step it named acted on the context's namespace) and several files shared one
    `-f`, which kubectl's flags do not read."""
    assert undo_next(Invocation(name="my-llm", namespace="serving"), False) == (
        "next: the rollout back is paced like any other: kubectl disagg rollout step my-llm -n serving")
    assert undo_next(Invocation(files=("a.yaml", "b.yaml")), False) == (
        "next: the rollout back is paced like any other: kubectl disagg rollout step -f a.yaml -f b.yaml")
    assert undo_next(Invocation(files=("apps/llama/",), gitops=True), True) == (
        "next: the rollout back is paced like any other: kubectl disagg rollout step --gitops -f apps/llama/ "
        "(commit the file first)")


def test_issue48_a_value_to_write_by_hand_is_worded_in_the_view_with_the_command_that_shows_it():
    """Issue 48: core/delivery/undo.py spelled `rollout history --revision R -o yaml` in its refusal;
    it now says which revision and value (`ByHand`), and the view words it as before."""
    assert undo_refusal(ByHand("7b04d5c1", "a list of 2 items")) == (
        "revision 7b04d5c1 has a list of 2 items here: write it by hand (`rollout history --revision 7b04d5c1 "
        "-o yaml` shows the template)")
    assert undo_refusal("the set is at revision 7b04d5c1 already") == "the set is at revision 7b04d5c1 already"
