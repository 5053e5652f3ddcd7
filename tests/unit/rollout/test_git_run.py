"""`rollout.git_run`: a run of `rollout step --gitops` over set files (git's `GitStore`), its writes and its exit code."""

from __future__ import annotations

import os
import shutil

import pytest

from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import StepExit
from kubectl_disagg.gitops import directory
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.rollout import git_run as run
from kubectl_disagg.rollout.git_step import GitopsStep, Outcome
from kubectl_disagg.rollout.outcome import step_exit
from tests.support.gitops import step_paths
from tests.fakes.cluster import MemorySession
from tests.support.paths import EXAMPLES


def test_a_first_step_writes_the_state_beside_the_set(tmp_path):
    shutil.copy(EXAMPLES / "prefill-decode.yaml", tmp_path / "ds.yaml")
    reading = inputs.Reading()
    (result,) = step_paths(MemorySession(watches=False), [str(tmp_path / "ds.yaml")], reading, None)
    assert result.step.outcome == Outcome.ADVANCED and result.code == StepExit.OK
    assert not os.path.exists(result.path)  # stepping writes nothing; write_steps does
    assert run.write_steps([result]) is None and os.path.exists(result.path)  # no commit asked for
    (entry,) = directory.read([str(tmp_path / "ds.yaml")]).sets
    assert entry.state_path == result.path and entry.state == result.step.state


def test_the_run_exits_with_its_most_pressing_set():
    def result(outcome, timed_out=False):
        return run.SetStep(None, "serving", "state.yaml", GitopsStep(outcome, None), timed_out)

    def exit_code(results):
        return step_exit([result.outcome for result in results])

    assert exit_code([result(Outcome.COMPLETE), result(Outcome.ADVANCED)]) == StepExit.OK
    assert exit_code([result(Outcome.ADVANCED), result(Outcome.WAITING)]) == StepExit.WAITING
    assert exit_code([result(Outcome.WAITING, timed_out=True), result(Outcome.WAITING)]) == StepExit.TIMEOUT
    assert exit_code([result(Outcome.COMPLETE), result(Outcome.REFUSED)]) == StepExit.REFUSED


def test_a_state_file_committed_while_the_step_ran_is_not_written_over(tmp_path):
    # A brake through git is a commit: `rollout pause --gitops --commit` while `rollout step
    # --gitops --wait` waits or measures. Before, the step wrote its state over the paused one.
    shutil.copy(EXAMPLES / "prefill-decode.yaml", tmp_path / "ds.yaml")
    reading = inputs.Reading()
    (result,) = step_paths(MemorySession(watches=False), [str(tmp_path / "ds.yaml")], reading, None)
    braked = b"# a state committed meanwhile (paused)\n"
    with open(result.path, "wb") as written:
        written.write(braked)
    with pytest.raises(UserError, match="changed since this step read it") as refused:
        run.write_steps([result])
    assert "nothing was written" in str(refused.value)
    with open(result.path, "rb") as kept:
        assert kept.read() == braked


def test_one_run_through_git_steps_every_set_then_writes_their_states_together(tmp_path):
    # `rollout step --gitops` is `run.step` over git's store: the same run as in the cluster.
    from kubectl_disagg.rollout.run import step
    from tests.fakes.printer import Printer

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ds.yaml").write_text((EXAMPLES / "prefill-decode.yaml").read_text().replace(
            "name: llama\n", f"name: llama-{name}\n", 1))
    reading = inputs.Reading()
    paths = [str(tmp_path / name / "ds.yaml") for name in ("a", "b")]
    tree = inputs.read_tree(paths, reading)
    committed = []
    store = run.GitStore(tree, reading, None, fallback="serving", cluster=MemorySession(watches=False),
                         commit=lambda results: committed.append([result.ds.name for result in results]))
    printer = Printer()
    assert step(store, printer) == StepExit.OK and store.revision is None
    assert printer.written_runs == [(store.results, None)]  # the run's report, shown by its printer
    assert [result.step.outcome for result in store.results] == [Outcome.ADVANCED, Outcome.ADVANCED]
    assert len(committed) == 1  # one transaction for the run
    assert [entry.state == result.step.state for entry, result in zip(directory.read(paths).sets, store.results)] \
        == [True, True]
