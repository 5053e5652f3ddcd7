"""What a directory of manifests holds, read one way for every command: the sets, their rollout
states, the documents that pass through, and every check that needs the directory whole.

`render`, `validate`, `rollout state init`, `rollout step --gitops`, `rollout status --gitops`
(their `-f` inputs, `-R`) and the Argo CD plugin's `cmp generate` and `cmp discover` (its
`recurse`, `include`, `exclude` and `rollout-state` parameters) all call `read` or `load` here.

The files themselves are read from disk by `inputs` (the one input reader: which files, their
globs, Argo CD's skipped files, the state files beside their sets), once per command; this
module loads what it read.

A state names its set; one that names no set of the directory is refused (design §8 rule 1),
except a state of a set that `include`/`exclude` left out: what they leave out is left out
whole, the set with its state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubectl_disagg.core import naming
from kubectl_disagg.core.model import (DEFAULT_NAMESPACE, DisaggregatedSet, is_state_document, namespace_conflict,
                                       namespace_for)
from kubectl_disagg.core.render import passthrough_collisions, render_set
from kubectl_disagg.core.sets import load_documents
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.gitops.autoscalers import scaler_targets
from kubectl_disagg.inputs.tree import Reading, Tree, read_tree, state_path, unread_kind
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.source import Document

if TYPE_CHECKING:  # read where a state file holds something (`_state_of`)
    from kubectl_disagg.gitops.state import RolloutState


@dataclass(frozen=True)
class SetEntry:
    """One set as its directory has it: its namespace, its state file and state (None: none
    yet), and the other documents read beside it, by kind (`documents`: see PER_SET_KINDS)."""

    ds: DisaggregatedSet
    namespace: str
    state_path: str | None
    state: RolloutState | None
    documents: Mapping[str, tuple[Document, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Directory:
    """What the inputs hold: sets and passed-through documents in input order; the files read
    (manifests, then state files); the manifests that held no document; warnings."""

    items: tuple[SetEntry | Document, ...]
    files: tuple[str, ...]
    empty: tuple[str, ...]
    warnings: tuple[Problem, ...]

    @property
    def sets(self) -> list[SetEntry]:
        return [item for item in self.items if isinstance(item, SetEntry)]

    @property
    def passthrough(self) -> list[Document]:
        return [item for item in self.items if isinstance(item, Document)]


# --- what the files hold ---------------------------------------------------------------------

# Documents of these kinds are read by their set, never passed through: kind → what to do with
# those found among the manifests (attach them to their set, or refuse them). A kind read
# beside the set (a policy) adds its entry here.
def _state_outside_its_file(entries: list[SetEntry], documents: list[Document],
                            reading: Reading) -> tuple[list[SetEntry], list[Problem]]:
    return entries, [Problem(d.file, d.line(("kind",)), "kind",
                             f"a {naming.STATE_KIND} is read from the state file beside its set ({reading.state_name}, "
                             "or the file --state names), not from a manifest") for d in documents]


PER_SET_KINDS: dict[str, Callable[[list[SetEntry], list[Document], Reading],
                                  tuple[list[SetEntry], list[Problem]]]] = {
    naming.STATE_KIND: _state_outside_its_file,
}


def _state_of(documents: list[Document], ds: DisaggregatedSet, namespace: str) -> RolloutState | None:
    """The state of `ds` in its state file's documents, or None. The state document's reader
    (gitops/state.py) is loaded where a state file holds something: a directory without one does
    not pay for it."""
    if not documents:
        return None
    from kubectl_disagg.gitops.state import find_state
    return find_state(documents, ds, namespace)


def _per_set_kind(document: Document) -> str | None:
    data = document.data
    if is_state_document(data):
        return naming.STATE_KIND
    kind = data.get("kind") if isinstance(data, dict) else None
    return kind if kind in PER_SET_KINDS and kind != naming.STATE_KIND else None


def load(tree: Tree, reading: Reading = Reading(), *, namespace: str | None = None,
         fallback: str = DEFAULT_NAMESPACE, flag: str = "--namespace", explicit_must_hold: bool = False,
         states: bool = True) -> Directory:
    """The sets, states and passed-through documents of `tree`; pure. Every problem at once.

    `namespace` fills in a set's that names none (-n, the plugin's parameter) and may not
    contradict one (`flag` says which spelling to blame), else `fallback` (the context's
    namespace, Argo CD's destination, `default`). `explicit_must_hold`: the --state file must
    exist and hold the set's state (render, status); a step or init writes the first one.
    `states` False: the sets only, their states neither read nor checked (the commands that
    drive the cluster directly, `rollout plan`; they refuse a git-driven set by its state file).
    """
    loaded, empty = _manifests(tree, namespace, fallback)
    sets = loaded.sets
    problems: list[Problem | str] = []
    if reading.explicit and len(sets) != 1:
        raise UserError([f"--state {reading.explicit}: names the rollout state of one DisaggregatedSet, and the "
                         f"input holds {len(sets)}"])
    state_documents: dict[str, list[Document]] = {}

    def documents_of(path: str) -> list[Document]:
        if path not in state_documents:
            state_documents[path] = []
            if path in tree.files:
                try:
                    state_documents[path] = parse_stream(tree.files[path], path)
                except UserError as err:
                    problems.extend(err.problems)
        return state_documents[path]

    entries: dict[int, SetEntry] = {}
    for position, ds in enumerate(sets):  # keyed by position: sets are values, two may be equal
        if flag != "--namespace" and namespace_conflict(ds, namespace) is not None:
            problems.append(Problem(ds.source.file, ds.source.line(("metadata", "namespace")), "metadata.namespace",
                                    f'namespace "{ds.namespace}" contradicts the {flag} "{namespace}"'))
            continue
        try:
            target = namespace_for(ds, namespace, fallback)
        except UserError as err:
            problems.extend(err.problems)
            continue
        path = state_path(ds, reading)
        state = None
        if path is not None and states:
            if reading.explicit and explicit_must_hold and path not in tree.files:
                problems.append(Problem(path, 0, "", "no such file or directory"))
            try:
                state = _state_of(documents_of(path), ds, target)
            except UserError as err:
                problems.extend(err.problems)
            if state is None and reading.explicit and explicit_must_hold and path in tree.files:
                problems.append(Problem(path, 0, "", f"holds no rollout state for disaggregatedset/{ds.name}"))
        entries[position] = SetEntry(ds, target, path, state)
    # The directory is checked whole (design §8 rule 1): every state of a walked state file names a
    # set of it; the states of sets that include/exclude left out are left out with them.
    matched = [(entry.ds.name, entry.namespace) for entry in entries.values()]
    for path in tree.walked_states if states else ():
        from kubectl_disagg.gitops.state import unmatched_states  # a state file was walked: its reader
        problems.extend(unmatched_states([d for d in documents_of(path)
                                          if _state_name(d) not in tree.left_out_sets], matched))
    items = _per_set_documents(loaded.items, entries, reading, problems)
    if problems:
        raise UserError(problems)
    read = [*tree.chosen, *(path for path in state_documents if path in tree.files)]
    return Directory(tuple(items), tuple(dict.fromkeys(read)), tuple(empty), loaded.warnings)


def _manifests(tree: Tree, namespace: str | None, fallback: str):
    """The chosen manifests parsed and loaded (`core.sets.load_documents`: sets validated, each
    with its policy, placed by `namespace` and `fallback`), and those that held no document;
    every problem of every file at once."""
    documents: list[Document] = []
    problems: list[Problem] = []
    empty = []
    for path in tree.chosen:
        try:
            found = parse_stream(tree.files[path], path)
        except UserError as err:
            problems.extend(err.problems)
            continue
        if not found:
            empty.append(path)
        documents.extend(found)
        problems.extend(problem for problem in map(unread_kind, found) if problem is not None)
    if problems:
        raise UserError(problems)
    return load_documents(documents, namespace, fallback), empty


def _per_set_documents(loaded_items, entries: Mapping[int, SetEntry], reading: Reading,
                       problems: list) -> list[SetEntry | Document]:
    """Sets and passed-through documents in input order; the documents of PER_SET_KINDS handed
    to their kind's entry (attached to their sets, or refused into `problems`). `entries` are
    keyed by the set's position among the sets of `loaded_items`."""
    by_kind: dict[str, list[Document]] = {}
    items: list[SetEntry | Document] = []
    sets_seen = 0
    for item in loaded_items:
        if isinstance(item, DisaggregatedSet):
            if sets_seen in entries:
                items.append(entries[sets_seen])
            sets_seen += 1
        elif (kind := _per_set_kind(item)) is not None:
            by_kind.setdefault(kind, []).append(item)
        else:
            items.append(item)
    for kind, found in by_kind.items():
        sets = [item for item in items if isinstance(item, SetEntry)]
        updated, refused = PER_SET_KINDS[kind](sets, found, reading)
        problems.extend(refused)
        replaced = iter(updated)  # one updated entry per set, in order
        items = [next(replaced, item) if isinstance(item, SetEntry) else item for item in items]
    return items


def _state_name(document: Document) -> str | None:
    metadata = document.data.get("metadata") if isinstance(document.data, dict) else None
    return metadata.get("name") if isinstance(metadata, dict) else None


def read(paths: Sequence[str], reading: Reading = Reading(), **options) -> Directory:
    """`load` of the -f inputs read from disk (`read_tree`)."""
    return load(read_tree(paths, reading), reading, **options)


# --- rendering a directory -------------------------------------------------------------------

def render(directory: Directory, *, require_state: bool = False, namespace: str | None = None,
           reading: Reading = Reading()) -> tuple[list[tuple[object, list[dict]]], list[Problem]]:
    """Every item rendered, in input order: (SetEntry, its objects) or (Document, [its data]);
    and the problems of the directory as a whole (passthrough collisions, autoscaler targets).
    `namespace` is where a passed-through document naming none lands (-n, the destination)."""
    out: list[tuple[object, list[dict]]] = []
    problems: list[Problem | str] = []
    rendered, git_sets, objects = [], [], []
    for item in directory.items:
        if isinstance(item, SetEntry):
            try:
                own = _rendered_set(item, require_state, reading)
            except UserError as err:
                problems.extend(err.problems)
                continue
            out.append((item, own))
            rendered.extend((obj, item.ds) for obj in own)
            objects.extend(own)
            if item.state is not None:
                git_sets.append((item.ds, item.namespace))
        else:
            out.append((item, [item.data]))
            objects.append(item.data)
    if problems:
        raise UserError(problems)
    problems = passthrough_collisions(rendered, directory.passthrough, namespace)
    problems += scaler_targets(git_sets, directory.passthrough, objects, namespace)
    return out, problems


def _rendered_set(item: SetEntry, require_state: bool, reading: Reading) -> list[dict]:
    """A set's objects: the steady state, or as far as its rollout state has rolled it. The rules
    a state must keep (design §8, design §9: gitops/render.py, and the replay they run) are loaded for a
    set with a state only: `render | kubectl apply` of a plain set does not pay for them."""
    if item.state is None and not require_state:
        return list(render_set(item.ds, item.namespace))
    from kubectl_disagg.gitops.render import render_with_state
    return render_with_state(item.ds, item.state, item.namespace, require_state=require_state,
                             state_file=reading.state_name)


def render_objects(directory: Directory, *, require_state: bool = False, namespace: str | None = None,
                   reading: Reading = Reading()) -> list[dict]:
    """The objects to apply, in input order; raises on any problem (nothing half-rendered)."""
    out, problems = render(directory, require_state=require_state, namespace=namespace, reading=reading)
    if problems:
        raise UserError(problems)
    return [obj for _, objects in out for obj in objects]


def render_files(paths: Sequence[str], recursive: bool = False, namespace: str | None = None,
                 explicit: str | None = None, require_state: bool = False) -> tuple[list[dict], tuple[Problem, ...]]:
    """`render` of -f inputs: the objects to apply, in input order, and the warnings. Every set
    is loaded, validated and rendered before anything is returned: on any error nothing is
    printed. `namespace` is -n; `explicit` is --state (one set only); `require_state` refuses a
    set without a state."""
    reading = Reading(recursive, explicit=explicit)
    directory = read(paths, reading, namespace=namespace, explicit_must_hold=True)
    return render_objects(directory, require_state=require_state, namespace=namespace, reading=reading), \
        directory.warnings
