"""`--commit`'s git (gitops/git.py): what a failed git says, and where git runs."""

from __future__ import annotations

import subprocess

import pytest

from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops.git import Repository, said


def test_a_failed_git_is_quoted_in_its_own_words():
    assert said(subprocess.CompletedProcess([], 128, "", "fatal: Unable to create 'x/index.lock': File exists.\n\n"
                                                         "Another git process seems to be running.\n")) == (
        "fatal: Unable to create 'x/index.lock': File exists. Another git process seems to be running.")
    # A commit another process made first: git says so on stdout only.
    assert said(subprocess.CompletedProcess([], 1, "nothing to commit, working tree clean\n", "")) == (
        "nothing to commit, working tree clean")
    assert said(subprocess.CompletedProcess([], 1, "", "")) == "exit 1"


def test_git_runs_at_the_top_of_the_repository(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a" / "b").mkdir(parents=True)
    repository = Repository(str(tmp_path / "a" / "b"))
    assert repository.directory == repository.root == str(tmp_path.resolve())
    assert repository.relative(str(tmp_path / "a" / "b" / "state.yaml")) == "a/b/state.yaml"
    with pytest.raises(UserError, match="is not in a git repository"):
        Repository("/")
