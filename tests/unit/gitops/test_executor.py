"""The rollout state's executor is held to the protocol a pass runs over, by the type checker."""

from __future__ import annotations

import subprocess
import sys

from kubectl_disagg.gitops.executor import StateExecutor
from tests.support.paths import REPO

USE = """
from kubectl_disagg.gitops.executor import StateExecutor
from kubectl_disagg.rollout.executors import PassExecutor
from kubectl_disagg.rollout.stepper import run_pass

def step(executor: StateExecutor) -> None:
    runs_over: PassExecutor = executor
    run_pass(executor, None, "ns")  # type: ignore[arg-type]
"""


def test_state_executor_is_a_pass_executor_to_the_type_checker(tmp_path):
    """`stepper.run_pass` takes a `PassExecutor`; the rollout state's executor declares it, and
    mypy checks every method a pass calls against the protocol, structurally (no signatures
    compared by hand). Only the cluster's executor is driven (`Executor`: a lease and a watch
    besides)."""
    assert not hasattr(StateExecutor, "lease") and not hasattr(StateExecutor, "wait_for_change")
    use = tmp_path / "use.py"
    use.write_text(USE)
    run = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-incremental",
                          "--warn-unused-ignores", str(use)], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
