"""The position kept in git (design §9.8): `GitStore`, the one store of every `--gitops` command:
rollout/store.py's `Store` over the state file beside each set.

The verbs' part (rollout/store.py `PositionStore`): a verb's decision comes from the committed
state alone (gitops/waves.py `change_state`); the new state differs from it only in `position:`
(its last step moved no slice). Who acted is the git author (gitops/git.py `author`), not the
operating-system user. `rollout history`, `undo` and `plan` read a set's revisions from git's log
of its file and of its state file (gitops/history.py `set_history`), and its plan's start from
the state file alone (its position, and what each slice deploys).

The step's part (rollout/run.py `StepStore`, run by `rollout.run.step`): each set's committed
state read from beside it, its next step decided by the rollout (`git_step.looks`, watching
the LWS with --wait; the cluster is only read, and only LWS), the advanced states written back.
Every set is stepped before any state is written: an error on one writes nothing.

Both write through one transaction (gitops/store.py `write_states`: one rename per file, then one
commit, or every file put back). A state file that changed since it was read (a `rollout pause
--gitops --commit` or an abort committed meanwhile, design §9.5) is not written over: a verb
reads it again (`Conflict`), a step keeps the brake and writes nothing.

What is git's alone (the directory, the state file, its rules, the writer, the log) is
`gitops/`'s, below the rollout; this module composes it with the rollout's decision.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from kubectl_disagg.core.api.model import DEFAULT_NAMESPACE, DisaggregatedSet
from kubectl_disagg.core.controller.plan_inputs import Observed
from kubectl_disagg.core.controller.snapshot import SliceLive
from kubectl_disagg.core.delivery.change import NotPaced, PositionChange
from kubectl_disagg.core.delivery.history import RevisionEntry
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.core.delivery.waves import WaveDecision, WaveEvent
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.gitops import files as state_files
from kubectl_disagg.gitops.files import Commit
from kubectl_disagg.gitops.git import Repository, author
from kubectl_disagg.gitops.history import going_back, set_history
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.store import StateChanged, live_from_state, write_states
from kubectl_disagg.gitops.waves import change_state
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.kube.seam import ClusterSession
from kubectl_disagg.kube.who import acting_user
from kubectl_disagg.rollout.analysis import gate_analysis
from kubectl_disagg.rollout.git_step import GitopsStep, SetStep, directory_steps, looks
from kubectl_disagg.rollout.stepper import Look
from kubectl_disagg.rollout.pacer import Analyze
from kubectl_disagg.rollout.run import StepOptions, StepPrinter
from kubectl_disagg.wait import NEVER

__all__ = ["GitStore", "SetStep", "write_steps"]


@dataclass
class GitStore:
    """The positions in the state files of the sets of `tree` (read once by `inputs`; `loaded`:
    its directory, where the command loaded it already, else loaded here).

    `repository` (checked by `gitops.git.repository_for` before anything is written) commits
    what a verb's `write` writes, with `message(changes)` (the views' pull request text) as the
    message; without one the files are written and left for the user to commit. A step reads
    the live LWS of `cluster`, and commits what it writes with `commit(results)` (None: left
    for the user to commit)."""

    tree: inputs.Tree
    reading: inputs.Reading
    namespace: str | None
    repository: Repository | None = None
    message: Callable[[Sequence[PositionChange]], str] = lambda changes: ""
    branch: str | None = None
    fallback: str = DEFAULT_NAMESPACE  # where a set that names no namespace is placed when -n does not
    together = True
    revision: str | None = None  # the commit a write made, if any
    states: bool = True  # False: the states are neither read nor checked (history and undo read git's log)
    cluster: ClusterSession | None = None  # what a step reads (LWS only); None: git alone is read
    loaded: directories.Directory | None = None
    commit: Callable[[Sequence[SetStep]], Commit | None] = lambda results: None

    def __post_init__(self) -> None:
        if self.loaded is None:
            self._load(self.tree)
        else:
            self.directory = self.loaded
        self._who: str | None = None
        self.results: list[SetStep] = []  # each set's step, as `write_run` leaves it
        self._analyze: Analyze | None = None

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

    def targets(self, how: StepOptions, printer: StepPrinter) -> list[tuple[DisaggregatedSet, str]]:
        """Every set of the directory. An analysis gate a step reaches is measured first (shown
        on the printer), bounded by the run's deadline, which bounds --wait too."""
        assert self.cluster is not None  # the step's command gives its session
        self._analyze = gate_analysis(self.cluster, how.deadline, lambda gate: printer.analysis_progress(gate))
        return self.sets()

    def looks(self, ds: DisaggregatedSet, namespace: str, how: StepOptions,
              printer: StepPrinter) -> Iterator[Look[GitopsStep]]:
        """The set's looks from the state beside it (or the explicit one, for one set) and the
        live LWS, watched with --wait (`git_step.looks`); nothing written yet: the last is kept
        for `write_run`."""
        assert self.cluster is not None  # the step's command gives its session
        entry = self._entry(ds)
        if entry.state_path is None:
            raise UserError([f"{entry.ds.source.file}: --gitops needs the set in a file: its rollout state is "
                             "kept beside it"])
        last = None
        for last in looks(self.cluster, entry.ds, entry.state, namespace, wait=how.wait,
                          deadline=how.deadline if how.wait else NEVER, analyze=self._analyze,
                          clock=how.deadline.clock):
            yield last
        assert last is not None and last.kept is not None  # the first look is always taken
        self.results.append(SetStep(entry.ds, namespace, entry.state_path, last.kept, not last.settled,
                                    self.tree.files.get(entry.state_path), going_back(entry.ds, namespace)))

    def decided(self) -> list[SetStep]:
        """The sets' steps as they are written: together or not at all (`directory_steps`)."""
        steps = directory_steps([(result.ds, result.step) for result in self.results])
        self.results = [replace(result, step=step) for result, step in zip(self.results, steps)]
        return self.results

    def write_run(self, outcomes: Sequence[Outcome], how: StepOptions, printer: StepPrinter) -> list[Outcome]:
        """The states that advanced, written all together or none (`directory_steps`: the sets
        step as one) and committed with `commit(results)`; the run's report shown."""
        results = self.decided()
        self.revision = write_steps(results, self.commit(results))
        printer.written(results, how, self.revision)
        return [result.outcome for result in results]

    def _entry(self, ds: DisaggregatedSet) -> directories.SetEntry:
        return next(entry for entry in self.directory.sets if entry.ds is ds)


def write_steps(results: Sequence[SetStep], commit: Commit | None = None) -> str | None:
    """Write the states that advanced (`gitops.store.write_states`: one rename per file, a file
    changed since this step read it refused), then, with `commit`, commit them (or put every
    file back); the commit's hash."""
    by_file: dict[str, list[RolloutState]] = {}
    for result in results:
        if result.step.outcome == Outcome.ADVANCED and result.step.state is not None:
            by_file.setdefault(result.path, []).append(result.step.state)
    return write_states(by_file, {result.path: result.read for result in results}, commit)
