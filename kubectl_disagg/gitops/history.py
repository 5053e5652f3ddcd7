"""`rollout history --gitops`: the revisions a set has run, read from git (design §10.3).

Git already keeps the whole story of a git-driven set: each commit of the set's file that
changes its revision starts a rollout (who and when: the commit's author), and the commits of
its state file are the passes and verbs over it, which say how that rollout ended. `revisions`
replays the versions of the two files, oldest first, through the cluster's own rules
(core/delivery/history.py `advance`: one history model in both stores, design §10.3; pure);
`set_history` reads them with git, each file followed through renames.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_disagg.core.delivery.history import (  # noqa: F401 (the entry and its outcomes, read here)
    ABORTED, COMPLETE, REPLACED, ROLLING, Commit, RevisionEntry, advance, entries)
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.position import Stamp
from kubectl_disagg.errors import UserError
from kubectl_disagg.inputs import directory as directories
from kubectl_disagg.inputs.tree import Tree
from kubectl_disagg.manifests.reader import parse_stream

def revisions(versions: Sequence[tuple[Commit, DisaggregatedSet | None, Mapping[str, Any] | None]]
              ) -> list[RevisionEntry]:
    """The revisions of a set, oldest first, from each commit's (set, state document): the set
    None where the commit has no valid set of that name, the state None where it has no state.
    The commits are replayed through the cluster's own rules (core/delivery/history.py `advance`), so both
    stores keep one history: a commit whose state was written for the set's revision (by a step
    or a verb: its `target`), or whose position records an abort of it (the step that aborts
    writes the stable revision as its target), is a pass over it, and the revision's entry
    starts at the commit that made the set name it (its author, its date). A revision replaced before any step
    recorded it never ran, and is not listed; the set's revision, committed and not stepped
    yet, is (a commit is a rollout under way through git)."""
    history: list[dict[str, Any]] = []
    current: DisaggregatedSet | None = None
    start = None  # the commit that made the set name its revision

    def started(history: list[dict[str, Any]], ds: DisaggregatedSet, at: Commit) -> list[dict[str, Any]]:
        return advance(history, ds, now=at.date, who=_author(at), complete=False, limit=UNBOUNDED, mark=_mark(at))

    for commit, ds, state in versions:
        if ds is not None and (current is None or ds.revision != current.revision):
            start = commit
        current = ds or current
        if current is None or start is None or not isinstance(state, Mapping):
            continue
        position: Mapping[str, Any] = state["position"] if isinstance(state.get("position"), Mapping) else {}
        mine = position.get("revision") == current.revision
        # (a step that aborts rolls toward the stable revision, its `target`: its position
        # still records the abort of the set's revision, as the cluster's does; and a verb's
        # commit, an abort or a retry, is one over the set's revision before any step too)
        if not (_stepped(state, current.revision)
                or mine and (_stamp(position.get("aborted")) or _stamp(position.get("retried")))):
            continue
        history = advance(started(history, current, start), current, now=commit.date, who=_author(start),
                          complete=_revisions_in(state) == {current.revision}, limit=UNBOUNDED, mark=_mark(commit),
                          aborted=_stamp(position.get("aborted")) if mine else None,
                          retried=_stamp(position.get("retried")) if mine else None)
    if current is not None and start is not None:
        history = started(history, current, start)
    return entries(history)


UNBOUNDED = sys.maxsize  # git keeps every commit: no entry is dropped


def _author(commit: Commit) -> Callable[[], str]:
    return lambda: commit.author


def _mark(commit: Commit) -> dict[str, str]:
    return {"commit": commit.sha, "subject": commit.subject}


def _stamp(raw: object) -> Stamp | None:
    """A position's stamp (`aborted`, `retried`) as recorded; None where there is none."""
    if not isinstance(raw, Mapping):
        return None
    return Stamp(str(raw.get("at") or ""), str(raw.get("by") or ""), str(raw.get("reason") or ""))


def _stepped(state: Mapping[str, Any] | None, revision: str) -> bool:
    """Whether a state document was written for `revision` (its `target`; an older document
    without one: a slice holds it)."""
    if not isinstance(state, Mapping):
        return False
    target = state.get("target")
    if isinstance(target, Mapping) and "revision" in target:
        recorded: object = target["revision"]  # as the document holds it: any JSON value
        return recorded == revision
    return revision in _revisions_in(state)


def _revisions_in(state: Mapping[str, Any]) -> set[str]:
    """The revisions a state document still holds (a drained one stays until its removal)."""
    out = set()
    for entry in state.get("slices") or ():
        for deployed in (entry.get("revisions") if isinstance(entry, Mapping) else None) or ():
            if isinstance(deployed, Mapping):
                out.add(str(deployed.get("revision")))
    return out


UNDO_TRAILER = "Rollout-Undo"  # `NAME REVISION` in the commit `rollout undo --gitops --commit` makes


@dataclass(frozen=True)
class WrittenBack:
    """Who wrote an earlier revision back into a set: `rollout undo` (`reverts` empty), or a `git
    revert` of the commit `reverts` (views/gitops_pr.py words it)."""

    reverts: str = ""


_REVERTS = re.compile(r"^This reverts commit ([0-9a-f]{7,40})\b", re.MULTILINE)  # `git revert`'s own line


def going_back(ds: DisaggregatedSet, namespace: str) -> WrittenBack | None:
    """Who wrote an earlier revision back into the set, when the last commit of its file did:
    `rollout undo` (its trailer names the set and this revision), or a `git revert` of a
    commit that moved the set off this revision (its hash; one more `git cat-file` to read the
    set at that commit and before it). The rollout that follows goes back, and its pull
    requests say so. None where neither did, or no git to ask."""
    from kubectl_disagg.gitops.git import Repository

    set_path = ds.source.file
    try:
        repository = Repository(os.path.dirname(set_path) or ".", purpose="reading the set's last commit")
        message = repository.last_message(set_path)
        for line in message.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == UNDO_TRAILER and value.split() == [ds.name, ds.revision]:
                return WrittenBack()
        reverted = _REVERTS.search(message)
        if reverted is None:
            return None
        before, at = repository.contents([(f"{reverted[1]}^", set_path), (reverted[1], set_path)])
    except UserError:
        return None
    revisions = [getattr(_set_at(text, set_path, ds.name, namespace), "revision", None) for text in (before, at)]
    return WrittenBack(reverted[1]) if revisions[0] == ds.revision != revisions[1] else None


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
        data = document.data
        metadata = data.get("metadata") if isinstance(data, Mapping) else None
        if isinstance(data, Mapping) and isinstance(metadata, Mapping) and metadata.get("name") == name:
            return data
    return None
