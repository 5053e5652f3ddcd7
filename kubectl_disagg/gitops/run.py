"""`rollout step --gitops` over sets, as one library call: each set's committed state read from
beside it, its next step (`step.next_step`, watching the LWS with --wait), the advanced states
written back; and the exit code of the run. The cluster is only read, and only LWS.

Every set is stepped before any state is written: an error on one writes nothing. A state file
that changed while the step ran (a `rollout pause --gitops --commit` or an abort committed
meanwhile, design §9.5) is not written over: the brake is kept and nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kubectl_disagg.core.model import DisaggregatedSet
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.rollout.analysis import gate_analysis
from kubectl_disagg.gitops import files as state_files
from kubectl_disagg.exits import GitopsExit, most_pressing
from kubectl_disagg.gitops.step import GitopsStep, Outcome, directory_steps, next_step
from kubectl_disagg.wait import Deadline

_EXIT = {Outcome.ADVANCED: GitopsExit.ADVANCED, Outcome.WAITING: GitopsExit.WAITING,
         Outcome.COMPLETE: GitopsExit.COMPLETE, Outcome.REFUSED: GitopsExit.REFUSED, Outcome.HELD: GitopsExit.HELD}


@dataclass(frozen=True)
class SetStep:
    """One set's git-driven step: where its state is kept, the step, and whether --wait gave up."""

    ds: DisaggregatedSet
    namespace: str
    path: str
    step: GitopsStep
    timed_out: bool = False
    read: bytes | None = None  # what the state file held when the step read it (None: no file)

    @property
    def code(self) -> int:
        return GitopsExit.TIMEOUT if self.timed_out else _EXIT[self.step.outcome]


def step_files(cluster, tree: inputs.Tree, reading: inputs.Reading, namespace: str | None, *,
               wait: bool = False, timeout: float | None = None,
               analysis_progress=lambda gate: (lambda run: None)) -> list[SetStep]:
    """Step each set of the inputs (`tree`, read from disk once by `inputs`, its state files with it)
    from the state beside it (or in `reading.explicit`, for one set); write the states that
    advanced, all together or none (`directory_steps`: the sets step as one). An analysis gate a
    step reaches is measured first (`analysis_progress`: where it shows), bounded by `timeout`."""
    directory = directories.load(tree, reading, namespace=namespace, fallback=cluster.default_namespace)
    deadline = Deadline.after(timeout if wait else None).at
    analyze = gate_analysis(cluster, Deadline.after(timeout), analysis_progress)
    read = {entry.state_path: tree.files.get(entry.state_path) for entry in directory.sets}  # as read, once
    results = []
    for entry in directory.sets:
        if entry.state_path is None:
            raise UserError([f"{entry.ds.source.file}: --gitops needs the set in a file: its rollout state is "
                             "kept beside it"])
        step, timed_out = next_step(cluster, entry.ds, entry.state, entry.namespace, wait=wait, deadline=deadline,
                                     analyze=analyze)
        results.append(SetStep(entry.ds, entry.namespace, entry.state_path, step, timed_out,
                               read[entry.state_path]))
    steps = directory_steps([(result.ds, result.step) for result in results])
    return [replace(result, step=step) for result, step in zip(results, steps)]


def write_steps(results: Sequence[SetStep]) -> dict[str, bytes | None]:
    """Write the states that advanced, one rename per file; what each file held before (None:
    it did not exist), for `state_files.restore` when the commit of them cannot be made."""
    by_file: dict[str, list] = {}
    for result in results:
        if result.step.outcome == Outcome.ADVANCED:
            by_file.setdefault(result.path, []).append(result.step.state)
    before = inputs.contents(by_file)
    read = {result.path: result.read for result in results}
    changed = [path for path in by_file if before[path] != read[path]]
    if changed:
        raise UserError([f"{path}: changed since this step read it (a commit meanwhile: a `rollout pause` or "
                         "`abort --gitops`?); nothing was written: run the step again from the new state"
                         for path in changed])
    for path, states in by_file.items():
        state_files.write_state(path, before[path], *states)
    return before


def exit_code(results: Sequence[SetStep]) -> int:
    """The run's code: the most pressing of its sets' (refused, timed out, waiting, advanced, complete)."""
    return most_pressing(result.code for result in results)
