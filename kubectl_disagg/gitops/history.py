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


def undone_to(set_path: str) -> dict[str, str]:
    """Set name → the revision the last commit of `set_path` wrote back by `rollout undo` (its
    trailers): the rollout that follows goes back to it, and its pull requests say so. Empty
    where there is none, or no git to ask (a directory outside a repository)."""
    from kubectl_disagg.gitops.git import Repository

    try:
        repository = Repository(os.path.dirname(set_path) or ".", purpose="reading the set's last commit")
        message = repository.last_message(set_path)
    except UserError:
        return {}
    out = {}
    for line in message.splitlines():
        key, _, value = line.partition(":")
        words = value.split()
        if key.strip() == UNDO_TRAILER and len(words) == 2:
            out[words[0]] = words[1]
    return out


def set_history(ds: DisaggregatedSet, namespace: str, state_path: str | None) -> list[RevisionEntry]:
    """The revisions of `ds` (in `namespace`), from HEAD's history of its file and of its state
    file at `state_path`: one `git log`, one `git cat-file --batch`, each version of the set's
    file loaded by the one loader (inputs/)."""
    from kubectl_disagg.gitops.git import Repository

    set_path = ds.source.file
    repository = Repository(os.path.dirname(set_path) or ".", purpose="rollout history")
    paths = [set_path, *([state_path] if state_path else [])]
    commits = [Commit(*fields) for fields in repository.log(paths)]
    texts = repository.contents([(c.sha, path) for c in commits for path in paths])
    versions = []
    for index, commit in enumerate(commits):
        set_text = texts[index * len(paths)]
        state_text = texts[index * len(paths) + 1] if state_path else None
        versions.append((commit, _set_at(set_text, set_path, ds.name, namespace), _state_at(state_text)))
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


def _state_at(text: bytes | None) -> Mapping[str, Any] | None:
    """One commit's state document, as plain data; None where there is none or it is unreadable."""
    if text is None:
        return None
    try:
        documents = parse_stream(text, "state")
    except UserError:
        return None
    return documents[0].data if documents and isinstance(documents[0].data, Mapping) else None
