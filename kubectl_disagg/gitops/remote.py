"""The git remote a rollout driver lands its steps on (issue 49), through the git CLI.

`Clone` is the driver's working clone: fetch the rollout's branch, compare the local branch
with the remote's, move the local branch to the remote's (never a rebase: a step not pushed is
dropped and decided again), push a commit to a branch, and say how a push ended: landed, the
remote moved (someone pushed first: decide again), or refused (a protected branch's hook, a
permission: the remote's own words). Nothing here decides a step.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from enum import Enum

from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops.git import said


class Pushed(Enum):
    LANDED = "landed"
    MOVED = "moved"  # the remote's branch is not where this push built on: fetch and decide again
    REFUSED = "refused"  # the remote said no (a hook, a protected branch, a permission)


@dataclass(frozen=True)
class Push:
    result: Pushed
    words: tuple[str, ...] = ()  # what the remote said, when it refused


@dataclass(frozen=True)
class Author:
    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


class Clone:
    """The working clone at `root` and its `remote`'s `branch`."""

    def __init__(self, root: str, remote: str, branch: str):
        self.root, self.remote, self.branch = root, remote, branch

    def git(self, *args: str, what: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        run = subprocess.run(["git", "-C", self.root, *args], capture_output=True, text=True)
        if check and run.returncode != 0:
            raise UserError([f"{what}: git {args[0]}: {said(run)}"])
        return run

    def out(self, *args: str, what: str) -> str:
        return self.git(*args, what=what).stdout.strip()

    @property
    def tracking(self) -> str:
        return f"refs/remotes/{self.remote}/{self.branch}"

    def fetch(self, prefix: str | None = None) -> str:
        """The remote branch's commit, fetched now (with the branches under `prefix`)."""
        also = [f"+refs/heads/{prefix.rstrip('/')}/*:refs/remotes/{self.remote}/{prefix.rstrip('/')}/*"] if prefix else []
        self.git("fetch", "--quiet", "--prune", self.remote, f"+refs/heads/{self.branch}:{self.tracking}", *also,
                 what=f"cannot fetch {self.remote}")
        return self.out("rev-parse", self.tracking, what=f"cannot read {self.remote}/{self.branch}")

    def remote_head(self) -> str:
        """The remote branch's commit, asked now (nothing fetched)."""
        listed = self.out("ls-remote", "--heads", self.remote, f"refs/heads/{self.branch}",
                          what=f"cannot ask {self.remote}")
        return listed.split("\t", 1)[0] if listed else ""

    def head(self) -> str:
        return self.out("rev-parse", "HEAD", what="cannot read HEAD")

    def dirty(self) -> list[str]:
        """The paths changed in the working tree or the index (untracked files too)."""
        status = self.out("status", "--porcelain=v1", "--untracked-files=all", what="cannot read the tree")
        return [line[3:] for line in status.splitlines() if line]

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.git("merge-base", "--is-ancestor", older, newer, what="", check=False).returncode == 0

    def ahead(self, base: str) -> list[str]:
        """The commits of HEAD that `base` has not, oldest first."""
        listed = self.out("rev-list", "--reverse", f"{base}..HEAD", what="cannot compare with the remote")
        return listed.split()

    def author(self, commit: str) -> Author:
        name, _, email = self.out("log", "-1", "--format=%an%x1f%ae", commit, what="cannot read a commit").partition(
            "\x1f")
        return Author(name, email)

    def subject(self, commit: str) -> str:
        return self.out("log", "-1", "--format=%s", commit, what="cannot read a commit")

    def changed(self, commit: str) -> list[str]:
        return self.out("diff-tree", "--no-commit-id", "--name-only", "-r", commit,
                        what="cannot read a commit").split()

    def move_to(self, commit: str) -> None:
        """The local branch (and the tree) at `commit`: `git reset --keep`, which refuses to
        lose a change in the tree."""
        self.git("reset", "--quiet", "--keep", commit, what=f"cannot move the local branch to {commit[:12]}")

    def push(self, commit: str, branch: str) -> Push:
        """`commit` pushed to `branch` of the remote, fast-forward only."""
        run = self.git("push", "--porcelain", self.remote, f"{commit}:refs/heads/{branch}", what="", check=False)
        if run.returncode == 0:
            return Push(Pushed.LANDED)
        text = run.stdout + run.stderr
        status = [line for line in run.stdout.splitlines() if line.startswith("!")]
        if status and ("non-fast-forward" in text or "fetch first" in text or "stale info" in text) \
                and "remote rejected" not in text:
            return Push(Pushed.MOVED)
        if "cannot lock ref" in text and "but expected" in text:  # another push landed while this one ran
            return Push(Pushed.MOVED)
        said_lines = [line.removeprefix("remote:").strip() for line in run.stderr.splitlines()
                      if line.startswith("remote:") and line.removeprefix("remote:").strip()]
        words = said_lines or [line.strip() for line in text.splitlines() if line.strip()][-3:]
        return Push(Pushed.REFUSED, tuple(words))

    def remote_branches(self, prefix: str) -> dict[str, str]:
        """The remote's branches under `prefix` (branch → commit), asked now."""
        listed = self.out("ls-remote", "--heads", self.remote, f"refs/heads/{prefix.rstrip('/')}/*",
                          what=f"cannot list the branches of {self.remote}")
        pairs = (line.split("\t", 1) for line in listed.splitlines() if "\t" in line)
        return {ref.removeprefix("refs/heads/"): sha for sha, ref in pairs}

    def delete_branch(self, branch: str) -> None:
        """The remote's `branch` deleted (a decision merged); a refusal is not an error."""
        self.git("push", "--quiet", self.remote, f":refs/heads/{branch}", what="", check=False)

