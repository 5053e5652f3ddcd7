"""Writing files (whole, all or none, committed or put back) and a set's rollout state, and
telling a git-driven set.

`write_files` is the one writer of the files a command changes (the state files, the -f edits of
`set image`, `rollout restart` and `rollout undo`): each file keeps its mode and encoding, and,
with a commit (`committing`), one commit of them or every file put back: the one commit path.

The state of a set is its RolloutState document in `disagg-rollout-state.yaml`, in the directory
of the file the set came from, unless `--state FILE` names another file. One file holds the
states of every set of its directory, one document each; `inputs` reads them (the one reader).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.errors import UserError
from kubectl_disagg.core.api.model import is_state_document
from kubectl_disagg.gitops.state import RolloutState, state_document
from kubectl_disagg.inputs.tree import Reading, state_path
from kubectl_disagg.gitops.git import Repository
from kubectl_disagg.manifests.reader import encoding_of, parse_stream
from kubectl_disagg.manifests.writer import to_yaml, write_atomically

HEADER = ("# Rollout state of a git-driven rollout, written by `kubectl disagg rollout step --gitops`\n"
          "# (the first by `kubectl disagg rollout state init`).\n"
          "# Review it like code; see docs/gitops.md before editing it by hand.\n")


def git_driven(ds: DisaggregatedSet, files: Mapping[str, bytes]) -> str | None:
    """The state file beside `ds` when it holds the set's rollout state (the set is driven
    through git, and a direct `rollout step` would fight the sync), else None. `files` are the
    inputs as read (`inputs.Tree.files`: the state files beside the sets among them)."""
    path = state_path(ds, Reading())
    if path is None or path not in files:
        return None
    try:
        documents = parse_stream(files[path], path)
    except UserError:
        return path  # a broken state file still says the set is driven through git
    names = [d.data["metadata"].get("name") for d in documents
             if is_state_document(d.data) and isinstance(d.data.get("metadata"), dict)]
    return path if ds.name in names else None


def refuse_git_driven(sets: Sequence[DisaggregatedSet], files: Mapping[str, bytes]) -> list[str]:
    """Why a plain `rollout step` may not step these sets: those driven through git."""
    return [f"refusing to step disaggregatedset/{ds.name}: it is driven through git (its rollout state is in "
            f"{path}); step it with `rollout step --gitops`, or give --ignore-rollout-state (Argo CD's "
            "self-heal would undo a direct step)" for ds in sets if (path := git_driven(ds, files))]


def state_contents(path: str, held: bytes | None, *states: RolloutState) -> bytes:
    """The file with the sets' documents put in (the other sets' stay), in the encoding the file
    is held in (its byte order mark kept; UTF-8 for a new file). `held` is what the file holds
    now, as `contents` read it (None: it does not exist): the other sets' documents come from
    it, not from a second read."""
    names = {state.name for state in states}
    others = []
    if held is not None:
        others = [d.data for d in parse_stream(held, path)
                  if isinstance(d.data, dict) and (d.data.get("metadata") or {}).get("name") not in names]
    documents = sorted([*others, *(state_document(state) for state in states)],
                       key=lambda d: (d.get("metadata") or {}).get("name") or "")
    text = HEADER + "---\n".join(to_yaml(document) for document in documents)
    return encoding_of(held or b"").encode(text)


def write_state(path: str, held: bytes | None, *states: RolloutState) -> None:
    """Put the sets' documents into the file (`state_contents`), replacing it in one rename
    (`write_files`) so that a reader never sees half a state, nor some sets' steps without the
    others'."""
    write_files({path: state_contents(path, held, *states)}, {path: held})


Commit = Callable[[list[str]], str]  # the commit of the paths written: its hash (UserError: not made)


def write_files(contents: Mapping[str, bytes], held: Mapping[str, bytes | None],
                commit: Commit | None = None) -> str | None:
    """The one writer of files (the state files, the -f edits): each of `contents` replaced in
    one rename (`write_atomically`: the file keeps its mode), then, with `commit`, the paths
    committed (its hash returned; nothing to write: no commit). All or nothing: when a write or the commit fails, every file
    written is put back as `held` had it (what each held before; None: it did not exist), and a
    commit's UserError says so, each problem ending "nothing was written"."""
    written: dict[str, bytes | None] = {}
    try:
        for path, data in contents.items():
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            write_atomically(path, data)  # whole or not at all: a failed one is as it was
            written[path] = held.get(path)
    except BaseException:
        restore(written)
        raise
    if commit is None or not contents:
        return None
    try:
        return commit(sorted(contents))
    except UserError as err:
        restore(written)  # the commit could not be made: nothing stays written
        raise UserError([f"{problem}; nothing was written" for problem in err.problems]) from None
    except BaseException:
        restore(written)
        raise


def committing(repository: Repository, message: str, branch: str | None = None) -> Commit:
    """`write_files`'s commit into `repository` (checked by `git.repository_for` before
    anything is written), with `message`, on a new `branch` when one is named: the one commit
    path of every write through git (a step, a verb, an undo)."""
    return lambda paths: repository.commit(paths, message, branch)


def restore(held: Mapping[str, bytes | None]) -> None:
    """Put the files back as `contents` found them, each with its mode (a file that did not
    exist is removed)."""
    for path, content in held.items():
        if content is None:
            if os.path.exists(path):
                os.unlink(path)
            continue
        write_atomically(path, content)
