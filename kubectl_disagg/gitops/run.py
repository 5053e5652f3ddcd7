"""`rollout step --gitops` over sets, as one library call: each set's committed state read from
beside it, its next step (`step.next_step`, watching the LWS with --wait), the advanced states
written back; and the exit code of the run. The cluster is only read, and only LWS.

Every set is stepped before any state is written: an error on one writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kubectl_disagg.core.model import DisaggregatedSet, namespace_for
from kubectl_disagg.errors import UserError
from kubectl_disagg.rollout.analysis import gate_analysis
from kubectl_disagg.gitops import files as state_files
from kubectl_disagg.gitops.exit_codes import (EXIT_ADVANCED, EXIT_COMPLETE, EXIT_HELD, EXIT_REFUSED, EXIT_TIMEOUT,
                                              EXIT_WAITING, most_pressing)
from kubectl_disagg.gitops.step import GitopsStep, Outcome, directory_steps, next_step
from kubectl_disagg.kube.wait import Deadline

_EXIT = {Outcome.ADVANCED: EXIT_ADVANCED, Outcome.WAITING: EXIT_WAITING, Outcome.COMPLETE: EXIT_COMPLETE,
         Outcome.REFUSED: EXIT_REFUSED, Outcome.HELD: EXIT_HELD}


@dataclass(frozen=True)
class SetStep:
    """One set's git-driven step: where its state is kept, the step, and whether --wait gave up."""

    ds: DisaggregatedSet
    namespace: str
    path: str
    step: GitopsStep
    timed_out: bool = False

    @property
    def code(self) -> int:
        return EXIT_TIMEOUT if self.timed_out else _EXIT[self.step.outcome]


def step_files(cluster, sets: Sequence[DisaggregatedSet], namespace: str | None, *, wait: bool = False,
               timeout: float | None = None, state_file: str | None = None,
               analysis_progress=lambda gate: (lambda run: None)) -> list[SetStep]:
    """Step each set from the state beside it (or in `state_file`, for one set); write the
    states that advanced, all together or none (`directory_steps`: the sets step as one). An
    analysis gate a step reaches is measured first (`analysis_progress`: where it shows), bounded
    by `timeout`."""
    if state_file and len(sets) != 1:
        raise UserError([f"--state {state_file}: names the rollout state of one DisaggregatedSet, and the input "
                         f"holds {len(sets)}"])
    deadline = Deadline.after(timeout if wait else None).at
    analyze = gate_analysis(cluster, Deadline.after(timeout).at, analysis_progress)
    results = []
    for ds in sets:
        target = namespace_for(ds, namespace, cluster.default_namespace)
        path = state_files.state_path(ds, state_file)
        if path is None:
            raise UserError([f"{ds.source.file}: --gitops needs the set in a file: its rollout state is "
                             "kept beside it"])
        state = state_files.read_state(ds, target, state_file, missing_ok=True)
        step, timed_out = next_step(cluster, ds, state, target, wait=wait, deadline=deadline, analyze=analyze)
        results.append(SetStep(ds, target, str(path), step, timed_out))
    steps = directory_steps([(result.ds, result.step) for result in results])
    results = [replace(result, step=step) for result, step in zip(results, steps)]
    by_file: dict[str, list] = {}
    for result in results:
        if result.step.outcome == Outcome.ADVANCED:
            by_file.setdefault(result.path, []).append(result.step.state)
    for path, states in by_file.items():  # one rename per file
        state_files.write_state(path, *states)
    return results


def exit_code(results: Sequence[SetStep]) -> int:
    """The run's code: the most pressing of its sets' (refused, timed out, waiting, advanced, complete)."""
    return most_pressing(result.code for result in results)
