"""Issue 47: `rollout plan --gitops` promised 27 commits for a rollout that took 33 through git.
The promise is held to the count: a git rollout run to the end on a temporary repository, every
`rollout step --gitops --commit` and `rollout promote --gitops --commit` a commit, synced to the
in-memory cluster as Argo CD would sync it between commits."""

from __future__ import annotations

import contextlib

import pytest

from kubectl_disagg.commands import _session
from tests.fakes.argo import MemoryArgo
from tests.fakes.cluster import MemorySession
from tests.support.git_rollout import commits, git, roll_through_git, write


@pytest.mark.parametrize(("slices", "replicas", "policy"), [
    (4, {"prefill": 1, "decode": 3}, {"maxSlicesInFlight": 2, "waves": [{"slices": 1}, {"slices": "100%"}]}),
    (3, {"prefill": 2, "decode": 1}, {}),
    (12, {"prefill": 1, "decode": 1}, {"maxSlicesInFlight": 3, "waves": [{"slices": 1, "pause": {}},
                                                                         {"slices": "25%", "pause": {}},
                                                                         {"slices": "100%"}]}),
    # before: the step passing the soak committed wave 2's starts alone, one commit the plan missed
    (4, {"prefill": 1, "decode": 1}, {"maxSlicesInFlight": 2, "waves": [{"slices": 1, "pause": {"duration": "1s"}},
                                                                        {"slices": "100%"}]}),
    (6, {"prefill": 3, "decode": 1}, {"maxSlicesInFlight": 2, "waves": [{"slices": 2, "pause": {}},
                                                                        {"slices": "100%", "pause": {}}]}),
])
def test_the_plans_commit_count_is_what_the_git_rollout_commits(tmp_path, monkeypatch, capsys, slices, replicas,
                                                                policy):
    argo = MemoryArgo()
    monkeypatch.setattr(_session, "session", lambda options: contextlib.nullcontext(MemorySession(argo.cluster)))
    git(tmp_path, "init", "-q", "-b", "main")
    write(tmp_path, "img:1", slices, replicas, policy)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "deploy")
    deploy: list[tuple[int, int]] = []
    roll_through_git(tmp_path, argo, capsys, promises=deploy)  # the first deploy
    end = commits(tmp_path)
    assert [(at, promise) for at, promise in deploy if end - at != promise] == [], (end, deploy, git(tmp_path, "log", "--format=%s"))
    write(tmp_path, "img:2", slices, replicas, policy)
    git(tmp_path, "commit", "-q", "-am", "img:2")
    promises: list[tuple[int, int]] = []
    roll_through_git(tmp_path, argo, capsys, promises=promises)
    end = commits(tmp_path)
    assert [(at, promise) for at, promise in promises if end - at != promise] == [], (end, promises, git(tmp_path, "log", "--format=%s"))
