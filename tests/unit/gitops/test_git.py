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


def test_undo_commit_refuses_an_uncommitted_edit_of_the_set_s_file(tmp_path, capsys):
    """Issue 47 item 5: `rollout undo --gitops --commit` swept an uncommitted edit of the set's
    own file (replicas 1 → 3) into its "Roll back" commit. It refuses a tree with changes as
    `rollout step --gitops --commit` does, before anything is written."""
    from tests.support.cli import run
    from tests.support.sets import NS
    from tests.support.stepping import write_set

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=alice", "-c",
                               "user.email=a@example.invalid", *args], check=True, capture_output=True,
                              text=True).stdout

    git("init", "-q", "-b", "main")
    path = write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:1")
    assert run(["rollout", "state", "init", "-f", str(tmp_path)], capsys)[0] == 0  # img:1 ran
    git("add", ".")
    git("commit", "-q", "-m", "deploy")
    write_set(tmp_path, NS, {"prefill": 1, "decode": 1}, image="img:2").replace(path)
    git("commit", "-q", "-am", "img:2")
    edited = path.read_text().replace("replicas: 1", "replicas: 3", 1)  # a change not committed yet
    path.write_text(edited)
    head = git("rev-parse", "HEAD")
    code, out, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--commit"], capsys)
    assert (code, out) == (1, ""), err
    assert err == (f"--commit: the working tree has changes ({path.name}): commit or stash them first; nothing "
                   "was written\n")
    assert path.read_text() == edited and git("rev-parse", "HEAD") == head
