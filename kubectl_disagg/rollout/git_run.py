"""`rollout step --gitops`: git's store for `rollout.run.step` (`GitSteps`): each set's committed
state read from beside it, its next step (`git_step.next_step`, watching the LWS with --wait), the
advanced states written back. The cluster is only read, and only LWS.

Every set is stepped before any state is written: an error on one writes nothing. A state file
that changed while the step ran (a `rollout pause --gitops --commit` or an abort committed
meanwhile, design §9.5) is not written over: the brake is kept and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops.history import WrittenBack, going_back
from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.exits import StepExit
from kubectl_disagg.rollout.analysis import gate_analysis
from kubectl_disagg.rollout.git_step import GitopsStep, directory_steps, next_step
from kubectl_disagg.gitops.files import Commit
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.store import write_states
from kubectl_disagg.kube.seam import ClusterSession
from kubectl_disagg.rollout.outcome import STEP_EXIT
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.rollout.pacer import Analyze
from kubectl_disagg.rollout.run import StepOptions, StepPrinter
from kubectl_disagg.wait import NEVER

@dataclass(frozen=True)
class SetStep:
    """One set's git-driven step: where its state is kept, the step, and whether --wait gave up."""

    ds: DisaggregatedSet
    namespace: str
    path: str
    step: GitopsStep
    timed_out: bool = False
    read: bytes | None = None  # what the state file held when the step read it (None: no file)
    returning: WrittenBack | None = None  # who wrote the set's revision back (`history.going_back`): a rollback

    @property
    def outcome(self) -> Outcome:
        """The step's outcome, or TIMEOUT where --wait gave up."""
        return Outcome.TIMEOUT if self.timed_out else self.step.outcome

    @property
    def code(self) -> StepExit:
        return STEP_EXIT[self.outcome]


class GitSteps:
    """`rollout.run.step` through git: each set of the inputs (`directory`, loaded by the command
    from what `inputs` read from disk once: `files`, the state files with them) stepped from the
    state beside it (or the explicit one, for one set) and the live LWS, watched with --wait; the
    run's transaction the states that advanced, written all together or none (`directory_steps`:
    the sets step as one), committed with `commit(results)` (None: left for the user to commit).
    An analysis gate a step reaches is measured first (shown on the printer), bounded by the
    run's deadline, which bounds --wait too."""

    def __init__(self, cluster: ClusterSession, directory: directories.Directory, files: Mapping[str, bytes],
                 commit: Callable[[Sequence[SetStep]], Commit | None] = lambda results: None):
        self.cluster, self.directory, self.commit = cluster, directory, commit
        self.read = {entry.state_path: files.get(entry.state_path) for entry in directory.sets
                     if entry.state_path is not None}  # as read, once
        self.results: list[SetStep] = []  # each set's step, as `write` leaves it
        self.revision: str | None = None  # the commit `write` made, if any
        self.written = False  # whether the run got as far as its writes (its report is then shown)
        self._analyze: Analyze | None = None

    def targets(self, how: StepOptions, printer: StepPrinter) -> list[tuple[DisaggregatedSet, str]]:
        self._analyze = gate_analysis(self.cluster, how.deadline, lambda gate: printer.analysis_progress(gate))
        return [(entry.ds, entry.namespace) for entry in self.directory.sets]

    def step_set(self, ds: DisaggregatedSet, namespace: str, how: StepOptions, printer: StepPrinter) -> Outcome:
        entry = next(entry for entry in self.directory.sets if entry.ds is ds)
        if entry.state_path is None:
            raise UserError([f"{entry.ds.source.file}: --gitops needs the set in a file: its rollout state is "
                             "kept beside it"])
        step, timed_out = next_step(self.cluster, entry.ds, entry.state, namespace, wait=how.wait,
                                     deadline=how.deadline if how.wait else NEVER, analyze=self._analyze,
                                     clock=how.deadline.clock)
        self.results.append(SetStep(entry.ds, namespace, entry.state_path, step, timed_out,
                                    self.read[entry.state_path], going_back(entry.ds, namespace)))
        return self.results[-1].outcome

    def decided(self) -> list[SetStep]:
        """The sets' steps as they are written: together or not at all (`directory_steps`)."""
        steps = directory_steps([(result.ds, result.step) for result in self.results])
        self.results = [replace(result, step=step) for result, step in zip(self.results, steps)]
        return self.results

    def write(self, outcomes: Sequence[Outcome]) -> list[Outcome]:
        results = self.decided()
        self.revision = write_steps(results, self.commit(results))
        self.written = True
        return [result.outcome for result in results]


def write_steps(results: Sequence[SetStep], commit: Commit | None = None) -> str | None:
    """Write the states that advanced (`gitops.store.write_states`: one rename per file, a file
    changed since this step read it refused), then, with `commit`, commit them (or put every
    file back); the commit's hash."""
    by_file: dict[str, list[RolloutState]] = {}
    for result in results:
        if result.step.outcome == Outcome.ADVANCED and result.step.state is not None:
            by_file.setdefault(result.path, []).append(result.step.state)
    return write_states(by_file, {result.path: result.read for result in results}, commit)
