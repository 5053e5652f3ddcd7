"""`rollout history --gitops`: the revisions a set has run, read from git (design §10.3).

Git already keeps the whole story of a git-driven set: each commit of the set's file that
changes its revision starts a rollout (who and when: the commit's author), and the commits of
its state file say how that rollout ended: complete once the state holds the revision alone,
aborted once the state's position records an abort of it, or replaced by the next template
change before either. `revisions` decides that from the versions of the two files, oldest
first (pure); `set_history` reads them with git (one `git log`, one `git cat-file --batch`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kubectl_disagg.core.history import (  # noqa: F401 (the entry and its outcomes, read here)
    ABORTED, COMPLETE, REPLACED, ROLLING, Commit, RevisionEntry, templates_of)
from kubectl_disagg.core.model import DisaggregatedSet
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops.state import record_from_set
from kubectl_disagg.inputs import directory as directories
from kubectl_disagg.inputs.tree import Tree
from kubectl_disagg.manifests.reader import parse_stream

def revisions(versions: Sequence[tuple[Commit, DisaggregatedSet | None, Mapping[str, Any] | None]]
              ) -> list[RevisionEntry]:
    """The revisions of a set, oldest first, from each commit's (set, state document): the set
    None where the commit has no valid set of that name, the state None where it has no state."""
    entries: list[RevisionEntry] = []
    seen: set[str] = set()
    for commit, ds, state in versions:
        if ds is not None and (not entries or entries[-1].revision != ds.revision):
            if entries and entries[-1].outcome == ROLLING:
                entries[-1] = replace(entries[-1], outcome=REPLACED, ended=commit)
            entries.append(RevisionEntry(ds.revision, commit, record_from_set(ds),
                                         entries[-1].record if entries else None, back=ds.revision in seen,
                                         templates=templates_of(ds)))
            seen.add(ds.revision)
        if not entries or entries[-1].outcome != ROLLING or not isinstance(state, Mapping):
            continue
        current = entries[-1]
        position = state.get("position") if isinstance(state.get("position"), Mapping) else {}
        aborted = position.get("aborted")
        if position.get("revision") == current.revision and isinstance(aborted, Mapping):
            entries[-1] = replace(current, outcome=ABORTED, ended=commit, by=str(aborted.get("by") or ""),
                                  why=str(aborted.get("reason") or ""))
        elif _revisions_in(state) == {current.revision}:
            entries[-1] = replace(current, outcome=COMPLETE, ended=commit)
    return entries


def _revisions_in(state: Mapping[str, Any]) -> set[str]:
    """The revisions a state document still holds (a drained one stays until its removal)."""
    out = set()
    for entry in state.get("slices") or ():
        for deployed in (entry.get("revisions") if isinstance(entry, Mapping) else None) or ():
            if isinstance(deployed, Mapping):
                out.add(str(deployed.get("revision")))
    return out


UNDO_TRAILER = "Rollout-Undo"  # `NAME REVISION` in the commit `rollout undo --gitops --commit` makes


UNDO = "`kubectl disagg rollout undo`"
_REVERTS = re.compile(r"^This reverts commit ([0-9a-f]{7,40})\b", re.MULTILINE)  # `git revert`'s own line


def going_back(ds: DisaggregatedSet, namespace: str) -> str:
    """Who wrote an earlier revision back into the set, when the last commit of its file did:
    `rollout undo` (its trailer names the set and this revision: UNDO), or a `git revert`
    of a commit that moved the set off this revision ("the revert of commit <sha>", one more
    `git cat-file` to read the set at that commit and before it). The rollout that follows
    goes back, and its pull requests say so. Empty where neither did, or no git to ask."""
    from kubectl_disagg.gitops.git import Repository

    set_path = ds.source.file
    try:
        repository = Repository(os.path.dirname(set_path) or ".", purpose="reading the set's last commit")
        message = repository.last_message(set_path)
        for line in message.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == UNDO_TRAILER and value.split() == [ds.name, ds.revision]:
                return UNDO
        reverted = _REVERTS.search(message)
        if reverted is None:
            return ""
        before, at = repository.contents([(f"{reverted[1]}^", set_path), (reverted[1], set_path)])
    except UserError:
        return ""
    revisions = [getattr(_set_at(text, set_path, ds.name, namespace), "revision", None) for text in (before, at)]
    return f"the revert of commit `{reverted[1][:12]}`" if revisions[0] == ds.revision != revisions[1] else ""


def set_history(ds: DisaggregatedSet, namespace: str, state_path: str | None) -> list[RevisionEntry]:
    """The revisions of `ds` (in `namespace`), from HEAD's history of its file and of its state
    file at `state_path`, each followed through renames (a moved directory): a `git log
    --follow` of each, one `git log` of every name they had, one `git cat-file --batch`, each
    version of the set's file loaded by the one loader (inputs/)."""
    from kubectl_disagg.gitops.git import Repository

    set_path = ds.source.file
    repository = Repository(os.path.dirname(set_path) or ".", purpose="rollout history")
    paths = [set_path, *([state_path] if state_path else [])]
    followed = [repository.followed(path) for path in paths]
    names = {os.path.join(repository.root, name) for moves in followed for name in moves.values()}
    commits = [Commit(*fields) for fields in repository.log(sorted(names | set(paths)))]
    wanted: list[tuple[str, str]] = []
    at = list(paths)  # each file where the last commit that changed it (oldest first) left it
    for c in commits:
        at = [os.path.join(repository.root, moves[c.sha]) if c.sha in moves else where
              for moves, where in zip(followed, at)]
        wanted += [(c.sha, where) for where in at]
    texts = repository.contents(wanted)
    versions = []
    for index, commit in enumerate(commits):
        set_text = texts[index * len(paths)]
        state_text = texts[index * len(paths) + 1] if state_path else None
        versions.append((commit, _set_at(set_text, set_path, ds.name, namespace), _state_at(state_text, ds.name)))
    return revisions(versions)


def _set_at(text: bytes | None, path: str, name: str, namespace: str) -> DisaggregatedSet | None:
    """The set `name` as one commit's file holds it; None where it has no valid one (that commit
    started no rollout)."""
    if text is None:
        return None
    try:
        loaded = directories.load(Tree({path: text}, (path,)), namespace=namespace)
    except UserError:
        return None
    return next((entry.ds for entry in loaded.sets if entry.ds.name == name), None)


def _state_at(text: bytes | None, name: str) -> Mapping[str, Any] | None:
    """The set `name`'s document of one commit's state file (one document per set of the
    directory), as plain data; None where there is none or the file is unreadable."""
    if text is None:
        return None
    try:
        documents = parse_stream(text, "state")
    except UserError:
        return None
    for document in documents:
        metadata = document.data.get("metadata") if isinstance(document.data, Mapping) else None
        if isinstance(metadata, Mapping) and metadata.get("name") == name:
            return document.data
    return None
