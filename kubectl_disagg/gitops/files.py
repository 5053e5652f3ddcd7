"""Where a set's rollout state lives on disk, reading it and writing it (whole, or not at all).

The state of a set is its RolloutState document in `disagg-rollout-state.yaml`, in the directory
of the file the set came from, unless `--state FILE` names another file. One file holds the
states of every set of its directory, one document each.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable

from kubectl_disagg.core.model import DisaggregatedSet, namespace_conflict, namespace_for
from kubectl_disagg.core.render import passthrough_collisions, render_set
from kubectl_disagg.core.sets import load_sets
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.gitops.autoscalers import scaler_targets
from kubectl_disagg.gitops.render import render_with_state
from kubectl_disagg.gitops.state import (STATE_FILE, RolloutState, find_state, is_state_document, state_document,
                                         unmatched_states)
from kubectl_disagg.manifests.reader import STDIN_NAME, read_documents
from kubectl_disagg.manifests.writer import to_yaml

HEADER = ("# Rollout state of a git-driven rollout, written by `kubectl disagg rollout step --gitops`\n"
          "# (the first by `kubectl disagg rollout state init`).\n"
          "# Review it like code; see docs/gitops.md before editing it by hand.\n")


def state_path(ds: DisaggregatedSet, explicit: str | None = None) -> str | None:
    """The state file of `ds`: `explicit`, else beside the set's file (None for stdin)."""
    if explicit:
        return explicit
    if ds.source.file == STDIN_NAME or ds.source.file.startswith("disaggregatedset/"):
        return None
    return os.path.join(os.path.dirname(ds.source.file), STATE_FILE)


def read_state(ds: DisaggregatedSet, namespace: str, explicit: str | None = None, *,
               missing_ok: bool = False) -> RolloutState | None:
    """The state of `ds` (checked against it), or None when there is none yet.

    An `explicit` file must exist and hold the set's state (unless `missing_ok`: a step writes
    the first state into it); the file beside the set may be missing, or hold only other sets'.
    """
    path = state_path(ds, explicit)
    if path is None or ((not explicit or missing_ok) and not os.path.isfile(path)):
        return None
    state = find_state(read_documents([path]), ds, namespace)
    if state is None and explicit and not missing_ok:
        raise UserError([Problem(path, 0, "", f"holds no rollout state for disaggregatedset/{ds.name}")])
    return state


def git_driven(ds: DisaggregatedSet) -> str | None:
    """The state file beside `ds` when it holds the set's rollout state (the set is driven
    through git, and a direct `rollout step` would fight the sync), else None."""
    path = state_path(ds)
    if path is None or not os.path.isfile(path):
        return None
    try:
        documents = read_documents([path])
    except UserError:
        return path  # a broken state file still says the set is driven through git
    names = [d.data["metadata"].get("name") for d in documents
             if is_state_document(d.data) and isinstance(d.data.get("metadata"), dict)]
    return path if ds.name in names else None


def refuse_git_driven(sets) -> list[str]:
    """Why a plain `rollout step` may not step these sets: those driven through git."""
    return [f"refusing to step disaggregatedset/{ds.name}: it is driven through git (its rollout state is in "
            f"{path}); step it with `rollout step --gitops`, or give --ignore-rollout-state (Argo CD's "
            "self-heal would undo a direct step)" for ds in sets if (path := git_driven(ds))]


def render_files(paths: Iterable[str], recursive: bool = False, namespace: str | None = None,
                 explicit: str | None = None, require_state: bool = False) -> tuple[list[dict], tuple[Problem, ...]]:
    """`render` of -f inputs: the objects to apply, in input order, and the warnings.

    Every set is loaded, validated and rendered before anything is returned, so that on any
    error nothing is printed. Other documents pass through; a rollout state is read by its set,
    never applied. `namespace` is -n (it may not contradict a document's own); `explicit` is
    --state (one set only); `require_state` refuses a set without a state.
    """
    loaded = load_sets(paths, recursive)
    conflicts = [namespace_conflict(ds, namespace) for ds in loaded.sets]
    if any(conflicts):
        raise UserError([problem for problem in conflicts if problem])
    if explicit and len(loaded.sets) != 1:
        raise UserError([f"--state {explicit}: names the rollout state of one DisaggregatedSet, and the "
                         f"input holds {len(loaded.sets)}"])
    # A directory is checked whole: every rollout state read as input belongs to a set of it.
    unmatched = unmatched_states([item for item in loaded.items if not isinstance(item, DisaggregatedSet)],
                                 [(ds.name, namespace_for(ds, namespace)) for ds in loaded.sets])
    if unmatched:
        raise UserError(unmatched)
    objects: list[dict] = []
    rendered: list = []
    passed: list = []
    git_sets: list = []  # (set, namespace) of the sets rendered from a rollout state
    for item in loaded.items:
        if isinstance(item, DisaggregatedSet):
            own, state = render_with_state_file(item, namespace, explicit, require_state)
            objects.extend(own)
            rendered.extend((obj, item) for obj in own)
            if state is not None:
                git_sets.append((item, state.namespace))
        elif not is_state_document(item.data):
            objects.append(item.data)
            passed.append(item)
    problems = passthrough_collisions(rendered, passed, namespace)
    problems += scaler_targets(git_sets, passed, objects, namespace)
    if problems:
        raise UserError(problems)
    return objects, loaded.warnings


def render_with_state_file(ds: DisaggregatedSet, namespace: str | None = None, explicit: str | None = None,
                           require_state: bool = False) -> tuple[list[dict], RolloutState | None]:
    """`render` of one set: from its rollout state when it has one (docs/gitops.md), else steady;
    and the state it was rendered from (None: none).

    `namespace` is -n; `explicit` is --state; `require_state` refuses a set without a state.
    """
    path = state_path(ds, explicit)
    if not explicit and not require_state and (path is None or not os.path.isfile(path)):
        return list(render_set(ds, namespace)), None  # no state: the steady state
    state = read_state(ds, namespace_for(ds, namespace), explicit)
    return render_with_state(ds, state, namespace, require_state=require_state), state


def _file_mode(path: str) -> int:
    """The mode the state file keeps (an existing file's), or a new file gets under the umask, as
    git and editors write files; mkstemp's own 0600 would hide a committed state from the group."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def write_state(path: str, *states: RolloutState) -> None:
    """Put the sets' documents into the file (the other sets' stay), replacing the file in one
    rename so that a reader never sees half a state, nor some sets' steps without the others'."""
    names = {state.name for state in states}
    others = []
    if os.path.isfile(path):
        others = [d.data for d in read_documents([path])
                  if isinstance(d.data, dict) and (d.data.get("metadata") or {}).get("name") not in names]
    documents = sorted([*others, *(state_document(state) for state in states)],
                       key=lambda d: (d.get("metadata") or {}).get("name") or "")
    text = HEADER + "---\n".join(to_yaml(document) for document in documents)
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=directory)
    try:
        os.fchmod(handle, _file_mode(path))
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
