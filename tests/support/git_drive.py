"""A git remote and an Argo CD that syncs it, for the rollout driver's tests (issue 49).

`Remote`: a bare repository (a file remote, optionally with a `pre-receive` hook that protects
`main`), the bot's working clone (`work`, where the driver runs) and a person's clone (`desk`:
template changes, merges of decision branches, verbs). `RemoteArgo`: the in-memory cluster
(tests/fakes/argo.py) as the driver's session, syncing what the remote's `main` holds each time
the step watches (as Argo CD syncs a pushed commit while the bot waits); `syncs=False`: a sync
that never comes. `on_watch` runs a fault at a watch (another push meanwhile).
"""

from __future__ import annotations

import os
import subprocess
import tarfile
import io
import tempfile
from pathlib import Path
from typing import Callable

import yaml

from tests.fakes.argo import MemoryArgo
from tests.fakes.cluster import MemorySession
from tests.support.cli import on, run
from tests.support.git_rollout import loaded, write

BOT = ("disagg-bot", "bot@example.invalid")
PERSON = ("carol", "carol@example.invalid")
APP = "app"
PROTECT = """#!/bin/sh
while read old new ref; do
  if [ "$ref" = refs/heads/main ]; then
    echo "main is protected: changes land through a pull request" >&2
    exit 1
  fi
done
"""


def as_person() -> dict[str, str]:
    """The environment without the bot's identity (the driver runs in this process)."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
            "GIT_AUTHOR_NAME": PERSON[0], "GIT_AUTHOR_EMAIL": PERSON[1],
            "GIT_COMMITTER_NAME": PERSON[0], "GIT_COMMITTER_EMAIL": PERSON[1]}


def git(directory: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(directory), *args], check=True, capture_output=True, text=True,
                          env=as_person()).stdout.strip()


class Remote:
    def __init__(self, root: Path, slices: int, replicas: dict[str, int], policy: dict):
        self.root, self.slices, self.replicas, self.policy = root, slices, replicas, policy
        self.bare = root / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.bare)], check=True)
        self.desk = self._clone("desk")
        (self.desk / APP).mkdir()
        write(self.desk / APP, "img:1", slices, replicas, policy)
        git(self.desk, "add", ".")
        git(self.desk, "commit", "-q", "-m", "llm: deploy through git")
        git(self.desk, "push", "-q", "origin", "main")
        self.work = self._clone("work")

    def _clone(self, name: str) -> Path:
        subprocess.run(["git", "clone", "-q", str(self.bare), str(self.root / name)], check=True, capture_output=True)
        return self.root / name

    def protect(self) -> None:
        hook = self.bare / "hooks" / "pre-receive"
        hook.write_text(PROTECT)
        hook.chmod(0o755)

    def person_pushes(self, image: str | None = None, message: str = "llm: a change") -> None:
        """A person's commit on main: the template to `image`, else a README line."""
        git(self.desk, "pull", "-q", "--ff-only", "origin", "main")
        if image is not None:
            write(self.desk / APP, image, self.slices, self.replicas, self.policy)
        else:
            with open(self.desk / "README.md", "a", encoding="utf-8") as readme:
                readme.write("a line\n")
            git(self.desk, "add", "README.md")
        git(self.desk, "commit", "-q", "-am", message)
        git(self.desk, "push", "-q", "origin", "main")

    def decision_branches(self) -> dict[str, str]:
        out = git(self.desk, "ls-remote", "--heads", "origin", "refs/heads/disagg/*")
        return {ref.removeprefix("refs/heads/"): sha for sha, ref in (line.split("\t") for line in out.splitlines())}

    def merge(self, branch: str) -> None:
        """A person merges a decision branch (a merge commit: its author is who approved)."""
        git(self.desk, "fetch", "-q", "origin")
        git(self.desk, "checkout", "-q", "main")
        git(self.desk, "reset", "-q", "--hard", "origin/main")
        git(self.desk, "merge", "-q", "--no-ff", "-m", f"Merge {branch}", f"origin/{branch}")
        git(self.desk, "push", "-q", "origin", "main")

    def promote(self, capsys, session) -> None:
        """A person passes the pause: `rollout promote --gitops --commit`, pushed."""
        git(self.desk, "pull", "-q", "--ff-only", "origin", "main")
        saved = dict(os.environ)
        os.environ.update(as_person())
        try:
            code, _, err = run(["rollout", "promote", "--gitops", "-f", str(self.desk / APP), "--commit"], capsys,
                               options=on(session))
        finally:
            os.environ.clear()
            os.environ.update(saved)
        assert code == 0, err
        git(self.desk, "push", "-q", "origin", "main")

    def main_states(self) -> list[tuple[int, str]]:
        """(state's commits, subject) of each commit of main that changed the state file, oldest first."""
        out = []
        git(self.desk, "fetch", "-q", "origin")
        for sha in git(self.desk, "rev-list", "--reverse", "--first-parent", "origin/main").split():
            shown = subprocess.run(["git", "-C", str(self.desk), "show", f"{sha}:{APP}/disagg-rollout-state.yaml"],
                                   capture_output=True, text=True)
            if shown.returncode == 0:
                documents = list(yaml.safe_load_all(shown.stdout))
                out.append((documents[0].get("commits", 0), git(self.desk, "log", "-1", "--format=%s", sha)))
        return out

    def main(self) -> str:
        return git(self.bare, "rev-parse", "main")

    def tree(self) -> Path:
        """main's tree, as Argo CD reads it."""
        archive = subprocess.run(["git", "--git-dir", str(self.bare), "archive", "main"], check=True,
                                 capture_output=True).stdout
        where = Path(tempfile.mkdtemp(dir=self.root))
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(where, filter="data")
        return where / APP


class RemoteArgo(MemorySession):
    """The session the driver gets: each watch, Argo CD syncs the remote's main (`syncs`)."""

    def __init__(self, remote: Remote, syncs: bool = True):
        self.argo = MemoryArgo()
        super().__init__(self.argo.cluster)
        self.remote, self.syncs = remote, syncs
        self.on_watch: Callable[[], None] | None = None
        self.sync()

    def sync(self) -> None:
        self.argo.sync(*loaded(self.remote.tree()))
        self.argo.cluster.settle()

    def wait_for_change(self, set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet",
                        state_version=None):
        self.watched.append(timeout)
        if self.on_watch is not None:
            fault, self.on_watch = self.on_watch, None
            fault()
        if not self.syncs:
            return False
        self.sync()
        return True


def drive(remote: Remote, session: RemoteArgo, capsys, *flags: str, timeout: str = "20s") -> tuple[int, str]:
    """One run of the driver in the bot's clone: its code and what it printed."""
    saved = dict(os.environ)
    os.environ.update({"GIT_AUTHOR_NAME": BOT[0], "GIT_AUTHOR_EMAIL": BOT[1], "GIT_COMMITTER_NAME": BOT[0],
                       "GIT_COMMITTER_EMAIL": BOT[1]})  # the bot's identity, as its Job gives it
    try:
        code, out, err = run(["rollout", "step", "--gitops", "-f", str(remote.work / APP), "--push", "origin",
                              "--timeout", timeout, *flags], capsys, options=on(session))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return code, out + err
