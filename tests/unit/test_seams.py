"""The seams the type checker holds: each mode's one store is a `Store` (rollout/store.py: the
verbs' `PositionStore` and the step's `StepStore`, rollout/run.py), and a
command's session, its writing executor and the in-memory test double are what `rollout/` and
the git store call on them (kube/seam.py, rollout/executors.py).

The functions below are checked, not run: `make lint` runs mypy over this module (pyproject.toml,
[tool.mypy] `modules`), so a store or a session that drifts from its Protocol (a member missing,
a signature changed) fails there by its signature, not by a comparison of names. The one test
holds that mypy still reads this module.
"""

from __future__ import annotations

import tomllib

from kubectl_disagg.rollout.git_run import GitStore
from kubectl_disagg.kube.executor import ClusterExecutor
from kubectl_disagg.kube.seam import (ClusterReads, ClusterSession, EventRecorder, HandoverWrites, PacingSession,
                                      SetPatches, StoredSets)
from kubectl_disagg.kube.session import Session
from kubectl_disagg.rollout.executors import Executor
from kubectl_disagg.rollout.run import StepPrinter
from kubectl_disagg.rollout.store import ClusterStore, Store
from kubectl_disagg.views.step_console import Console
from tests.fakes.cluster import MemorySession
from tests.support.paths import REPO


def stores(cluster: ClusterStore, git: GitStore) -> list[Store]:
    """One store per mode: the verbs, history, undo, plan and `rollout step`'s one run
    (`rollout.run.step`) over either."""
    return [cluster, git]


def printers(console: Console) -> StepPrinter:
    """`rollout step` shows itself, in either mode, on the one console."""
    return console


def sessions(session: Session, executor: ClusterExecutor) -> list[ClusterSession]:
    return [session, executor]


def fake_reads(fake: MemorySession) -> ClusterReads:
    """The double is a `ClusterReads`; its `client` is a stub answering `serves` alone."""
    return fake



def stored_sets(session: Session) -> StoredSets:
    return session


def set_patches(session: Session) -> SetPatches:
    return session


def pacing(session: Session, executor: ClusterExecutor) -> list[PacingSession]:
    """`rollout status` records a completion over its session as a step does over its executor."""
    return [session, executor]


def writers(executor: ClusterExecutor, fake: MemorySession) -> tuple[list[Executor], list[EventRecorder],
                                                                    HandoverWrites]:
    return [executor, fake], [executor, fake], executor


def test_the_type_checker_reads_this_module() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert __name__ in config["modules"]
    assert config["strict"] is True
