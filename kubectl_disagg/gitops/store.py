"""The position kept in git (design §9.8): `GitStore`, rollout/store.py's `PositionStore` over
the state file beside each set, and `write_states`, the one write → commit → restore
transaction every `--gitops` command that writes states goes through (`files.write_files`).

The store's reads for `rollout history`, `undo` and `plan`: a set's revisions from git's log of
its file and of its state file (gitops/history.py `set_history`), and its plan's start from the
state file alone (its position, and what each slice deploys).

A verb's decision comes from the committed state alone (gitops/waves.py `change_state`); the new
state differs from it only in `position:` (its last step moved no slice). The cluster is not
read. Who acted is the git author (gitops/git.py `author`), not the operating-system user.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from kubectl_disagg.core.api.model import DEFAULT_NAMESPACE, DisaggregatedSet
from kubectl_disagg.core.controller.plan_inputs import Observed
from kubectl_disagg.core.controller.snapshot import SliceLive
from kubectl_disagg.core.delivery.history import RevisionEntry
from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.core.delivery.waves import WaveDecision, WaveEvent
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.gitops import files as state_files
from kubectl_disagg.gitops.git import Repository, author
from kubectl_disagg.gitops.history import set_history
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.waves import change_state
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.core.delivery.change import NotPaced, PositionChange
from kubectl_disagg.kube.who import acting_user


class StateChanged(UserError):
    """State files changed since the command read them (a commit meanwhile): nothing was written."""

    def __init__(self, paths: Sequence[str]):
        self.paths = list(paths)
        super().__init__([f"{path}: changed since this step read it (a commit meanwhile: a `rollout pause` or "
                          "`abort --gitops`?); nothing was written: run the step again from the new state"
                          for path in paths])


def write_states(by_file: Mapping[str, Sequence[RolloutState]], read: Mapping[str, bytes | None] | None = None,
                 commit: state_files.Commit | None = None) -> str | None:
    """Write the sets' states into their files, one rename per file (the other sets' documents
    stay), then, with `commit` (`files.committing`), commit them: the one write → commit →
    restore transaction (`files.write_files`) of every --gitops command that writes states; the
    commit's hash. With `read` (what each file held when the command read it), a file changed
    since (a commit meanwhile: a `rollout pause` or `abort --gitops`) is refused
    (`StateChanged`) and nothing is written."""
    before = inputs.contents(by_file)
    changed = [path for path in by_file if read is not None and before[path] != read.get(path)]
    if changed:
        raise StateChanged(changed)
    return state_files.write_files({path: state_files.state_contents(path, before[path], *states)
                                    for path, states in by_file.items()}, before, commit)


@dataclass
class GitStore:
    """The positions in the state files of the sets of `tree` (read once by `inputs`).

    `repository` (checked by `gitops.git.repository_for` before anything is written) commits
    what `write` writes, with `message(changes)` (the views' pull request text) as the message;
    without one the files are written and left for the user to commit."""

    tree: inputs.Tree
    reading: inputs.Reading
    namespace: str | None
    repository: Repository | None = None
    message: Callable[[Sequence[PositionChange]], str] = lambda changes: ""
    branch: str | None = None
    fallback: str = DEFAULT_NAMESPACE  # where a set that names no namespace is placed when -n does not
    together = True
    revision: str | None = None  # the commit `write` made, if any
    states: bool = True  # False: the states are neither read nor checked (history and undo read git's log)

    def __post_init__(self) -> None:
        self._load(self.tree)
        self._who: str | None = None

    def _load(self, tree: inputs.Tree) -> None:
        self.tree = tree
        self.directory = directories.load(tree, self.reading, namespace=self.namespace, fallback=self.fallback,
                                          states=self.states)

    def sets(self) -> list[tuple[DisaggregatedSet, str]]:
        return [(entry.ds, entry.namespace) for entry in self.directory.sets]

    def who(self) -> str:
        """The git author of the repository the first set's state is kept in (asked once)."""
        if self._who is None:
            entry = self.directory.sets[0] if self.directory.sets else None
            path = (entry.state_path or entry.ds.source.file) if entry is not None else ""
            self._who = acting_user(lambda: author(os.path.dirname(path) or "."))
        return self._who

    def change(self, ds: DisaggregatedSet, namespace: str, change: Callable[[WaveDecision], Position],
               now: datetime.datetime) -> PositionChange:
        entry = self._entry(ds)
        if ds.policy is None:
            raise NotPaced(ds, namespace)
        if entry.state_path is None or entry.state is None:
            raise UserError([f"{ds.source.file}: disaggregatedset/{ds.name} has no rollout state beside it yet: "
                             "`kubectl disagg rollout step --gitops -f DIR` writes the first"])
        before, after, written = change_state(ds, entry.state, change, now)
        return PositionChange(ds, namespace, before, after, written, entry.state_path)

    def write(self, changes: Sequence[PositionChange]) -> list[PositionChange]:
        """Every change's state written and committed (`write_states`, with a repository):
        one transaction, all or nothing. A state file that changed since the store read it (a
        verb committed meanwhile) is not written over: `Conflict`, and the store holds the files
        as they are now, for the verb to decide again from (design §9.8)."""
        by_file: dict[str, list[RolloutState]] = {}
        for change in changes:
            by_file.setdefault(change.where, []).append(change.written)
        commit = None if self.repository is None else state_files.committing(
            self.repository, self.message(changes), self.branch)
        try:
            self.revision = write_states(by_file, {path: self.tree.files.get(path) for path in by_file}, commit)
        except StateChanged as changed:
            files = {**self.tree.files, **inputs.contents(changed.paths)}
            self._load(replace(self.tree, files={path: held for path, held in files.items() if held is not None}))
            raise Conflict(f"{', '.join(changed.paths)} changed since it was read (a commit meanwhile)") from None
        return list(changes)

    def record(self, change: PositionChange, event: WaveEvent) -> PositionChange:
        """Nothing: the commit (or the change the user commits) is the record."""
        return change

    def history(self, ds: DisaggregatedSet, namespace: str) -> list[RevisionEntry]:
        """HEAD's commits of the set's file and of its state file, replayed (design §10.3)."""
        return set_history(ds, namespace, self._entry(ds).state_path)

    def observe(self, ds: DisaggregatedSet, namespace: str) -> Observed:
        """The state file alone: its position, and what each slice deploys (none: no state yet)."""
        state = self._entry(ds).state
        if state is None:
            return Observed(None, (SliceLive({}),) * ds.slices)
        return Observed(state.position, live_from_state(ds, state))

    def _entry(self, ds: DisaggregatedSet) -> directories.SetEntry:
        return next(entry for entry in self.directory.sets if entry.ds is ds)


def live_from_state(ds: DisaggregatedSet, state: RolloutState) -> tuple[SliceLive, ...]:
    """Each slice's progress as a git rollout's state file deploys it."""
    return tuple(SliceLive(state.deployed(s), state.initial.get(s, {})) for s in range(ds.slices))

