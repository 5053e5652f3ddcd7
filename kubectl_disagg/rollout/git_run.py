"""`rollout step --gitops` over sets, as one library call: each set's committed state read from
beside it, its next step (`git_step.next_step`, watching the LWS with --wait), the advanced states
written back; and the exit code of the run. The cluster is only read, and only LWS.

Every set is stepped before any state is written: an error on one writes nothing. A state file
that changed while the step ran (a `rollout pause --gitops --commit` or an abort committed
meanwhile, design §9.5) is not written over: the brake is kept and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops.history import WrittenBack, going_back
from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.rollout.analysis import GateRun, gate_analysis
from kubectl_disagg.rollout.git_step import GitopsStep, directory_steps, next_step
from kubectl_disagg.gitops.files import Commit
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.store import write_states
from kubectl_disagg.rollout.outcome import GITOPS_EXIT, Outcome, gitops_exit
from kubectl_disagg.wait import NEVER, Deadline

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
    def code(self) -> int:
        return GITOPS_EXIT[self.outcome]


def step_files(cluster: Any, directory: directories.Directory, files: Mapping[str, bytes], *,
               wait: bool = False, deadline: Deadline = NEVER,
               analysis_progress: Callable[[str], Callable[[GateRun], None]] = lambda gate: (lambda run: None)
               ) -> list[SetStep]:
    """Step each set of the inputs (`directory`, loaded by the command from what `inputs` read
    from disk once: `files`, the state files with them) from the state beside it (or the
    explicit one, for one set); write the states that advanced, all together or none
    (`directory_steps`: the sets step as one). An analysis gate a step reaches is measured first
    (`analysis_progress`: where it shows), bounded by `deadline`, which bounds --wait too."""
    analyze = gate_analysis(cluster, deadline, analysis_progress)
    read = {entry.state_path: files.get(entry.state_path) for entry in directory.sets
            if entry.state_path is not None}  # as read, once
    results = []
    for entry in directory.sets:
        if entry.state_path is None:
            raise UserError([f"{entry.ds.source.file}: --gitops needs the set in a file: its rollout state is "
                             "kept beside it"])
        step, timed_out = next_step(cluster, entry.ds, entry.state, entry.namespace, wait=wait,
                                     deadline=deadline if wait else NEVER, analyze=analyze, clock=deadline.clock)
        results.append(SetStep(entry.ds, entry.namespace, entry.state_path, step, timed_out,
                               read[entry.state_path], going_back(entry.ds, entry.namespace)))
    steps = directory_steps([(result.ds, result.step) for result in results])
    return [replace(result, step=step) for result, step in zip(results, steps)]


def write_steps(results: Sequence[SetStep], commit: Commit | None = None) -> str | None:
    """Write the states that advanced (`gitops.store.write_states`: one rename per file, a file
    changed since this step read it refused), then, with `commit`, commit them (or put every
    file back); the commit's hash."""
    by_file: dict[str, list[RolloutState]] = {}
    for result in results:
        if result.step.outcome == Outcome.ADVANCED and result.step.state is not None:
            by_file.setdefault(result.path, []).append(result.step.state)
    return write_states(by_file, {result.path: result.read for result in results}, commit)


def exit_code(results: Sequence[SetStep]) -> int:
    """The run's code: its most pressing set's outcome's (`outcome.most_pressing`)."""
    return gitops_exit(result.outcome for result in results)
