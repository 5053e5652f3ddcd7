"""The line after `rollout undo` (views/history.py `undo_next`): the `rollout step` that takes
the rollout back, spelled as the user named the set, so that it runs as it stands."""

from __future__ import annotations

from kubectl_disagg.views.history import undo_next
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
