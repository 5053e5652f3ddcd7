"""git's parts of the position store (design §9.8; the store is rollout/git_run.py `GitStore`):
`write_states`, the one write → commit → restore transaction every `--gitops` command that writes
states goes through (`files.write_files`), the refusal of a state file changed since it was read
(`StateChanged`), and what each slice deploys by a state file (`live_from_state`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.snapshot import SliceLive
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops import files as state_files
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.inputs import tree as inputs


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


def live_from_state(ds: DisaggregatedSet, state: RolloutState) -> tuple[SliceLive, ...]:
    """Each slice's progress as a git rollout's state file deploys it."""
    return tuple(SliceLive(state.deployed(s), state.initial.get(s, {})) for s in range(ds.slices))

