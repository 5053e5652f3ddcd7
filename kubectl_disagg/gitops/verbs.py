"""`rollout promote|pause|resume|abort --gitops -f DIR`: the position changed in the state file
beside each set (design §9.6), one reviewed commit; the cluster is not read.

The decision comes from the committed state alone (gitops/waves.py `state_decision`); the new
state differs from it only in `position:` (its last step moved no slice). Every set's verb is
decided before any state is written: one refusal writes nothing.
"""

from __future__ import annotations

import datetime
import getpass
from dataclasses import dataclass

from kubectl_disagg.core.model import DEFAULT_NAMESPACE
from kubectl_disagg.core.waves import VerbRefused
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.gitops import files as state_files
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.waves import change_state
from kubectl_disagg.rollout.progressive import utcnow
from kubectl_disagg.rollout.verbs import VerbResult, change_for


@dataclass(frozen=True)
class GitVerb:
    """One set's verb through git: what it did (`result`), the state to write and where."""

    result: VerbResult
    state: RolloutState
    path: str
    by: str


def local_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def verb_files(tree: inputs.Tree, reading: inputs.Reading, namespace: str | None, verb: str, *,
               full: bool = False, by: str | None = None, now: datetime.datetime | None = None) -> list[GitVerb]:
    """The verb over each set's committed state (the inputs `tree`, read as `gitops.directory`
    reads every directory), written beside it; VerbRefused names the set."""
    directory = directories.load(tree, reading, namespace=namespace, fallback=DEFAULT_NAMESPACE)
    now, by = now or utcnow(), by or local_user()
    out = []
    for entry in directory.sets:
        ds, target, path, state = entry.ds, entry.namespace, entry.state_path, entry.state
        if ds.policy is None:
            raise UserError([f"{ds.source.file}: disaggregatedset/{ds.name} has no RolloutPolicy beside it: its "
                             "rollouts are not paced"])
        if path is None or state is None:
            raise UserError([f"{ds.source.file}: disaggregatedset/{ds.name} has no rollout state beside it yet: "
                             "`kubectl disagg rollout step --gitops -f DIR` writes the first"])
        try:
            before, after, written = change_state(ds, state, change_for(verb, now, by, full), now)
        except VerbRefused as refused:
            raise VerbRefused(f"disaggregatedset/{ds.name} in {target}: {refused}") from None
        out.append(GitVerb(VerbResult(ds, target, verb, before, after, full), written, path, by))
    return out


def write_verbs(done: list[GitVerb]) -> dict[str, bytes | None]:
    """Write the states, one rename per file; what each file held before, for
    `state_files.restore` when the commit of them cannot be made."""
    by_file: dict[str, list[RolloutState]] = {}
    for each in done:
        by_file.setdefault(each.path, []).append(each.state)
    before = inputs.contents(by_file)
    for path, states in by_file.items():
        state_files.write_state(path, before[path], *states)
    return before
