"""The commit of a git-driven step or verb (`--gitops --commit`), and its author, through the git CLI.

Before anything is written, `prepare` checks the working tree: it must be a git repository
whose only changes (if any) are the state files the step rewrites, and a `--branch` must not
exist yet. After the states are written, `commit` creates the branch from HEAD (when asked),
stages exactly the state files and commits them with the pull request's text as the message
(its title line is the subject).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from kubectl_disagg.errors import UserError
from kubectl_disagg.inputs.tree import resolved  # how every command compares paths


class Repository:
    """The repository holding `directory`; git runs at its top, with paths relative to it, from
    whatever directory the command was started in."""

    def __init__(self, directory: str, purpose: str = "--commit"):
        if shutil.which("git") is None:
            raise UserError([f"{purpose} needs git on PATH"])
        self.directory = directory
        self.root = self._git("rev-parse", "--show-toplevel", what=f"{directory} is not in a git repository").strip()
        self.directory = self.root
        self.head: str | None = None  # the branch checked out (or the commit, detached), set by prepare

    def _git(self, *args: str, what: str, input: str | None = None) -> str:
        run = subprocess.run(["git", "-C", self.directory, *args], capture_output=True, text=True, input=input)
        if run.returncode != 0:
            raise UserError([f"{what}: git {args[0]}: {said(run)}"])
        return run.stdout

    def relative(self, path: str) -> str:
        return os.path.relpath(resolved(path), resolved(self.root))

    def log(self, paths: list[str]) -> list[tuple[str, str, str, str]]:
        """The commits of HEAD that changed any of `paths`, oldest first: (hash, author's name,
        author date as RFC 3339, subject)."""
        out = self._git("log", "--reverse", "--format=%H%x1f%an%x1f%aI%x1f%s", "HEAD", "--",
                        *[self.relative(path) for path in paths], what="cannot read the history")
        fields = (line.split("\x1f", 3) for line in out.splitlines() if line)  # the format's four, always
        return [(sha, author, date, subject) for sha, author, date, subject in fields]

    def followed(self, path: str) -> dict[str, str]:
        """Where `path` was (its path from the top) at each commit of HEAD that changed it,
        following renames (`git log --follow`: a directory moved by `git mv`)."""
        out = self._git("log", "--follow", "--name-only", "--format=%x1e%H", "HEAD", "--", self.relative(path),
                        what="cannot read the history")
        names = {}
        for block in out.split("\x1e")[1:]:
            lines = [line for line in block.splitlines() if line]
            if len(lines) > 1:
                names[lines[0]] = lines[-1]
        return names

    def last_message(self, path: str) -> str:
        """The whole message of HEAD's last commit that changed `path` (empty: none)."""
        return self._git("log", "-1", "--format=%B", "HEAD", "--", self.relative(path),
                         what="cannot read the history")

    def contents(self, wanted: list[tuple[str, str]]) -> list[bytes | None]:
        """Each (commit, path)'s file as that commit has it (None where it has none), read by one
        `git cat-file --batch`."""
        request = "".join(f"{commit}:{self.relative(path)}\n" for commit, path in wanted).encode()
        run = subprocess.run(["git", "-C", self.directory, "cat-file", "--batch"], input=request,
                             capture_output=True)
        if run.returncode != 0:
            raise UserError([f"cannot read the history: git cat-file: {run.stderr.decode(errors='replace').strip()}"])
        out: list[bytes | None] = []
        at = 0
        for _ in wanted:
            end = run.stdout.index(b"\n", at)
            header = run.stdout[at:end].split()
            at = end + 1
            if header[-1] == b"missing":
                out.append(None)
                continue
            size = int(header[2])
            out.append(run.stdout[at:at + size])
            at += size + 1
        return out

    def prepare(self, state_files: list[str], branch: str | None) -> None:
        """Refuse (nothing written) on changes beyond the state files (none at all without
        any), or a branch that exists."""
        allowed = {self.relative(path) for path in state_files}
        status = self._git("status", "--porcelain=v1", "-z", "--untracked-files=all", what="cannot read the tree")
        dirty = []
        entries = iter(status.split("\0"))
        for entry in entries:
            if not entry:
                continue
            code, path = entry[:2], entry[3:]
            if code[0] in "RC":
                next(entries, None)  # a rename's or copy's source follows
            if path not in allowed:
                dirty.append(path)
        if dirty:
            listed = ", ".join(dirty[:10]) + (f" and {len(dirty) - 10} more" if len(dirty) > 10 else "")
            beyond = " beyond the rollout state" if allowed else ""
            raise UserError([f"--commit: the working tree has changes{beyond} ({listed}): commit or stash them "
                             "first; nothing was written"])
        if branch is not None:
            self._git("check-ref-format", "--branch", branch, what=f"--branch {branch!r} is not a branch name")
            exists = subprocess.run(["git", "-C", self.directory, "rev-parse", "--verify", "--quiet",
                                     f"refs/heads/{branch}"], capture_output=True, text=True)
            if exists.returncode == 0:
                raise UserError([f"--branch {branch}: the branch exists already; nothing was written"])
        self._git("rev-parse", "--verify", "HEAD", what="--commit needs a commit to build on")
        branch_now = subprocess.run(["git", "-C", self.directory, "symbolic-ref", "--quiet", "--short", "HEAD"],
                                    capture_output=True, text=True)
        self.head = branch_now.stdout.strip() if branch_now.returncode == 0 else None

    def commit(self, state_files: list[str], message: str, branch: str | None) -> str:
        """The new commit's hash: the state files on `branch` (created from HEAD) or the current
        branch. When it cannot be made, the index and the branches are put back as they were
        (the caller puts the files back) and the error says what git said."""
        start = self._git("rev-parse", "HEAD", what="cannot read HEAD").strip()
        paths = [self.relative(path) for path in state_files]
        created = False
        try:
            if branch is not None:
                self._git("switch", "--quiet", "--create", branch, what=f"cannot create branch {branch}")
                created = True
            self._git("add", "--", *paths, what="cannot stage the rollout state")
            # --cleanup=whitespace keeps the Markdown headings (#) that the default would strip when editing.
            self._git("commit", "--quiet", "--cleanup=whitespace", "--file=-", "--", *paths, input=message,
                      what="cannot commit the rollout state")
            return self._git("rev-parse", "HEAD", what="cannot read the new commit").strip()
        except UserError:
            self._undo(start, paths, branch if created else None)
            raise

    def _undo(self, start: str, paths: list[str], created: str | None) -> None:
        """Back to where `commit` started: the paths unstaged, a branch it created removed."""
        self._quietly("reset", "--quiet", start, "--", *paths)
        if created is not None:
            back = ["switch", "--quiet", self.head] if self.head else ["switch", "--quiet", "--detach", start]
            self._quietly(*back)
            self._quietly("branch", "--quiet", "-D", created)

    def _quietly(self, *args: str) -> None:
        """git `args`, whatever it answers (`_undo` puts back all it can)."""
        subprocess.run(["git", "-C", self.directory, *args], capture_output=True, text=True)


def said(run: subprocess.CompletedProcess[str]) -> str:
    """What a failed git said, on one line: its stderr (else its stdout), else its exit code."""
    text = run.stderr.strip() or run.stdout.strip()
    return " ".join(text.split()) if text else f"exit {run.returncode}"


def repository_for(paths: Sequence[str | None], branch: str | None, *, clean: bool = False) -> Repository:
    """The repository holding the state files (`paths`), checked for `--commit` (`prepare`):
    changes beyond them refused, and with `clean` (a commit of files a person edits: `rollout
    undo`'s set files) any change at all, so that the commit holds what the command wrote alone."""
    files = sorted({path for path in paths if path})
    if not files:
        raise UserError(["--commit needs the sets in files: their rollout states are kept beside them"])
    repository = Repository(os.path.dirname(files[0]) or ".")
    repository.prepare([] if clean else files, branch)
    return repository


def author(directory: str) -> str | None:
    """Who a commit made in `directory` would name as its author, as git decides it
    (GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL over the repository's `user.name`/`user.email`):
    "Name <email>", the name alone without an email, None without a name (or without git)."""
    def configured(variable: str, key: str) -> str:
        if os.environ.get(variable):
            return os.environ[variable]
        if shutil.which("git") is None:
            return ""
        run = subprocess.run(["git", "-C", directory or ".", "config", "--get", key], capture_output=True,
                             text=True)
        return run.stdout.strip() if run.returncode == 0 else ""

    name = configured("GIT_AUTHOR_NAME", "user.name")
    if not name:
        return None
    email = configured("GIT_AUTHOR_EMAIL", "user.email")
    return f"{name} <{email}>" if email else name
