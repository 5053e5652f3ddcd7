"""The rollout states of a directory's sets (design §8), read and rendered: what `inputs.directory`
loads, with each set's state from the state file beside it, the state files checked whole, and
the sets that have a state rendered as far as it has rolled them.

`validate`, `rollout state init`, `rollout step|status|promote|pause|resume|abort --gitops` and
the Argo CD plugin's `cmp generate` load through `load` here; `render` does where the inputs
hold a state file (`inputs.directory.holds_states`), and renders a plain set without gitops/.
The files themselves are read from disk by `inputs` (the one input reader), once per command.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kubectl_disagg.core.api.model import DEFAULT_NAMESPACE, DisaggregatedSet
from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.gitops.autoscalers import scaler_targets
from kubectl_disagg.inputs import directory as inputs
from kubectl_disagg.inputs.directory import Directory, Rendered, SetEntry, objects_of
from kubectl_disagg.inputs.tree import Reading, Tree, read_tree
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.source import Document

if TYPE_CHECKING:  # read where a state file holds something (`_state_of`)
    from kubectl_disagg.gitops.state import RolloutState

__all__ = ["Directory", "SetEntry", "load", "read", "render", "render_objects"]


def _state_of(documents: list[Document], ds: DisaggregatedSet, namespace: str) -> RolloutState | None:
    """The state of `ds` in its state file's documents, or None. The state document's reader
    (gitops/state.py) is loaded where a state file holds something: a directory without one does
    not pay for it."""
    if not documents:
        return None
    from kubectl_disagg.gitops.state import find_state
    return find_state(documents, ds, namespace)


class StateFiles:
    """The `inputs.directory.States` of git: each state file of `tree` parsed once, each set
    given its state, the walked state files checked whole (design §8 rule 1: every state names
    a set of the directory; the states of sets that include/exclude left out are left out with
    them). `explicit_must_hold`: the --state file must exist and hold the set's state (render,
    status); a step or init writes the first one."""

    def __init__(self, tree: Tree, reading: Reading, explicit_must_hold: bool = False):
        self.tree, self.reading, self.explicit_must_hold = tree, reading, explicit_must_hold
        self.documents: dict[str, list[Document]] = {}

    def _documents_of(self, path: str, problems: list[Problem | str]) -> list[Document]:
        if path not in self.documents:
            self.documents[path] = []
            if path in self.tree.files:
                try:
                    self.documents[path] = parse_stream(self.tree.files[path], path)
                except UserError as err:
                    problems.extend(err.problems)
        return self.documents[path]

    def attach(self, entry: SetEntry, problems: list[Problem | str]) -> SetEntry:
        path, reading, files = entry.state_path, self.reading, self.tree.files
        assert path is not None
        must_hold = bool(reading.explicit) and self.explicit_must_hold
        if must_hold and path not in files:
            problems.append(Problem(path, 0, "", "no such file or directory"))
        state = None
        try:
            state = _state_of(self._documents_of(path, problems), entry.ds, entry.namespace)
        except UserError as err:
            problems.extend(err.problems)
        if state is None and must_hold and path in files:
            problems.append(Problem(path, 0, "", f"holds no rollout state for disaggregatedset/{entry.ds.name}"))
        return SetEntry(entry.ds, entry.namespace, path, state, entry.documents)

    def whole(self, matched: list[tuple[str, str]], problems: list[Problem | str]) -> None:
        for path in self.tree.walked_states:
            from kubectl_disagg.gitops.state import unmatched_states  # a state file was walked: its reader
            problems.extend(unmatched_states([d for d in self._documents_of(path, problems)
                                              if _state_name(d) not in self.tree.left_out_sets], matched))

    def read(self) -> list[str]:
        return [path for path in self.documents if path in self.tree.files]


def _state_name(document: Document) -> str | None:
    metadata = document.data.get("metadata") if isinstance(document.data, dict) else None
    return metadata.get("name") if isinstance(metadata, dict) else None


def load(tree: Tree, reading: Reading = Reading(), *, namespace: str | None = None,
         fallback: str = DEFAULT_NAMESPACE, flag: str = "--namespace", explicit_must_hold: bool = False,
         states: bool = True) -> Directory:
    """`inputs.directory.load` of `tree` with each set's rollout state (`StateFiles`); pure.
    `states` False: the sets only, their states neither read nor checked."""
    return inputs.load(tree, reading, namespace=namespace, fallback=fallback, flag=flag,
                       states=StateFiles(tree, reading, explicit_must_hold) if states else None)


def read(paths: Sequence[str], reading: Reading = Reading(), **options: Any) -> Directory:
    """`load` of the -f inputs read from disk (`read_tree`)."""
    return load(read_tree(paths, reading), reading, **options)


# --- rendering a directory -------------------------------------------------------------------

def render(directory: Directory, *, require_state: bool = False, namespace: str | None = None,
           reading: Reading = Reading()) -> tuple[Rendered, list[Problem]]:
    """`inputs.directory.render`, each set with a state rendered as far as it has rolled it; and
    the problems of the directory as a whole (passthrough collisions, autoscaler targets)."""
    out, problems = inputs.render(directory, namespace=namespace,
                                  render_entry=lambda item: _rendered_set(item, require_state, reading))
    git_sets = [(item.ds, item.namespace) for item in directory.sets if item.state is not None]
    problems += scaler_targets(git_sets, directory.passthrough, objects_of(out), namespace)
    return out, problems


def _rendered_set(item: SetEntry, require_state: bool, reading: Reading) -> list[dict[str, Any]]:
    """A set's objects: the steady state, or as far as its rollout state has rolled it. The rules
    a state must keep (design §8, design §9: gitops/render.py, and the replay they run) are loaded for a
    set with a state only: `render | kubectl apply` of a plain set does not pay for them."""
    if item.state is None and not require_state:
        return list(render_set(item.ds, item.namespace))
    from kubectl_disagg.gitops.render import render_with_state
    return render_with_state(item.ds, item.state, item.namespace, require_state=require_state,
                             state_file=reading.state_name)


def render_objects(directory: Directory, *, require_state: bool = False, namespace: str | None = None,
                   reading: Reading = Reading()) -> list[dict[str, Any]]:
    """The objects to apply, in input order; raises on any problem (nothing half-rendered)."""
    out, problems = render(directory, require_state=require_state, namespace=namespace, reading=reading)
    if problems:
        raise UserError(problems)
    return objects_of(out)


def render_tree(tree: Tree, reading: Reading, namespace: str | None = None,
                require_state: bool = False) -> tuple[list[dict[str, Any]], tuple[Problem, ...]]:
    """`render` of -f inputs read: the objects to apply, in input order, and the warnings. Every
    set is loaded, validated and rendered before anything is returned: on any error nothing is
    printed. `namespace` is -n; `reading.explicit` is --state (one set only); `require_state`
    refuses a set without a state."""
    directory = load(tree, reading, namespace=namespace, explicit_must_hold=True)
    return render_objects(directory, require_state=require_state, namespace=namespace, reading=reading), \
        directory.warnings
