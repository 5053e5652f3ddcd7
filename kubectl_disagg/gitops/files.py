"""Writing a set's rollout state (whole, or not at all), and telling a git-driven set.

The state of a set is its RolloutState document in `disagg-rollout-state.yaml`, in the directory
of the file the set came from, unless `--state FILE` names another file. One file holds the
states of every set of its directory, one document each; `inputs` reads them (the one reader).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.errors import UserError
from kubectl_disagg.core.api.model import is_state_document
from kubectl_disagg.gitops.state import RolloutState, state_document
from kubectl_disagg.inputs.tree import Reading, state_path
from kubectl_disagg.manifests.reader import parse_stream
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


def refuse_git_driven(sets, files: Mapping[str, bytes]) -> list[str]:
    """Why a plain `rollout step` may not step these sets: those driven through git."""
    return [f"refusing to step disaggregatedset/{ds.name}: it is driven through git (its rollout state is in "
            f"{path}); step it with `rollout step --gitops`, or give --ignore-rollout-state (Argo CD's "
            "self-heal would undo a direct step)" for ds in sets if (path := git_driven(ds, files))]


def write_state(path: str, held: bytes | None, *states: RolloutState) -> None:
    """Put the sets' documents into the file (the other sets' stay), replacing the file in one
    rename so that a reader never sees half a state, nor some sets' steps without the others'.
    `held` is what the file holds now, as `contents` read it (None: it does not exist): the
    other sets' documents come from it, not from a second read."""
    names = {state.name for state in states}
    others = []
    if held is not None:
        others = [d.data for d in parse_stream(held, path)
                  if isinstance(d.data, dict) and (d.data.get("metadata") or {}).get("name") not in names]
    documents = sorted([*others, *(state_document(state) for state in states)],
                       key=lambda d: (d.get("metadata") or {}).get("name") or "")
    text = HEADER + "---\n".join(to_yaml(document) for document in documents)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_atomically(path, text.encode("utf-8"))


def restore(held: dict[str, bytes | None]) -> None:
    """Put the files back as `contents` found them, each with its mode (a file that did not
    exist is removed)."""
    for path, content in held.items():
        if content is None:
            if os.path.exists(path):
                os.unlink(path)
            continue
        write_atomically(path, content)
