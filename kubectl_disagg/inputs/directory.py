"""What the inputs hold, loaded one way for every command: the sets (each placed in its
namespace, with the path of its state file), the documents that pass through, the checks that
need the inputs whole, and the steady render of sets without a rollout state.

`render`, `validate`, `rollout plan|step|status` (their `-f` inputs, `-R`) and the Argo CD
plugin's `cmp generate` load what `inputs.tree` read through `load` here. A set's rollout state
is git's (design §8): `gitops.directory` hands `load` the reader of the state files (`States`)
and renders the sets that have one; without it no state is read, and `render -f` of inputs with
no state file never reaches gitops/.

A state names its set; one that names no set of the directory is refused (design §8 rule 1),
except a state of a set that `include`/`exclude` left out: what they leave out is left out
whole, the set with its state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import (DEFAULT_NAMESPACE, DisaggregatedSet, is_state_document, namespace_conflict,
                                       namespace_for)
from kubectl_disagg.core.controller.render import passthrough_collisions, render_set
from kubectl_disagg.core.delivery.sets import load_documents
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.inputs.tree import Reading, Tree, is_state_file, state_path, unread_kind
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.source import Document


@dataclass(frozen=True)
class SetEntry:
    """One set as its directory has it: its namespace, its state file and state (None: none
    yet, or not read: `gitops.state.RolloutState` where read), and the other documents read
    beside it, by kind (`documents`: see PER_SET_KINDS)."""

    ds: DisaggregatedSet
    namespace: str
    state_path: str | None
    state: Any = None
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


class States(Protocol):
    """The reader of the sets' rollout states (`gitops.directory`'s): `attach` gives an entry
    its state (problems appended to `problems`), `whole` checks the state files walked against
    the sets found (`matched`: (name, namespace) each), `read` says which state files it read."""

    def attach(self, entry: SetEntry, problems: list[Problem | str]) -> SetEntry: ...

    def whole(self, matched: list[tuple[str, str]], problems: list[Problem | str]) -> None: ...

    def read(self) -> list[str]: ...


def problems_of(documents: Sequence[Document]) -> list[Problem | str]:
    """Why `documents` would not load as an -f input (every problem at once; none: they would):
    what a command that rewrote a file checks before it writes it."""
    try:
        load_documents(documents)
    except UserError as err:
        return list(err.problems)
    return []


def holds_states(tree: Tree, reading: Reading = Reading()) -> bool:
    """Whether the inputs hold a state file (walked, beside a set's file, or --state): what only
    `gitops.directory` loads and renders."""
    return bool(reading.explicit) or any(is_state_file(path.rsplit("/", 1)[-1], reading) for path in tree.files)


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


def _per_set_kind(document: Document) -> str | None:
    data = document.data
    if is_state_document(data):
        return naming.STATE_KIND
    kind = data.get("kind") if isinstance(data, dict) else None
    return kind if kind in PER_SET_KINDS and kind != naming.STATE_KIND else None


def load(tree: Tree, reading: Reading = Reading(), *, namespace: str | None = None,
         fallback: str = DEFAULT_NAMESPACE, flag: str = "--namespace", states: States | None = None) -> Directory:
    """The sets, their states (read by `states`; None: not read) and the passed-through
    documents of `tree`; pure. Every problem at once.

    `namespace` fills in a set's that names none (-n, the plugin's parameter) and may not
    contradict one (`flag` says which spelling to blame), else `fallback` (the context's
    namespace, Argo CD's destination, `default`).
    """
    items, warnings, empty = _manifests(tree, namespace, fallback)
    sets = [item for item in items if isinstance(item, DisaggregatedSet)]
    problems: list[Problem | str] = []
    if reading.explicit and len(sets) != 1:
        raise UserError([f"--state {reading.explicit}: names the rollout state of one DisaggregatedSet, and the "
                         f"input holds {len(sets)}"])
    entries: list[SetEntry | None] = []  # one per set, in order (None: not placed)
    for ds in sets:
        entries.append(None)
        if flag != "--namespace" and namespace_conflict(ds, namespace) is not None:
            problems.append(Problem(ds.source.file, ds.source.line(("metadata", "namespace")), "metadata.namespace",
                                    f'namespace "{ds.namespace}" contradicts the {flag} "{namespace}"'))
            continue
        try:
            placed = namespace_for(ds, namespace, fallback)
        except UserError as err:
            problems.extend(err.problems)
            continue
        entry = SetEntry(ds, placed, state_path(ds, reading))
        entries[-1] = entry if states is None or entry.state_path is None else states.attach(entry, problems)
    if states is not None:
        states.whole([(entry.ds.name, entry.namespace) for entry in entries if entry is not None], problems)
    listed = _per_set_documents(items, entries, reading, problems)
    if problems:
        raise UserError(problems)
    read = [*tree.chosen, *(states.read() if states is not None else ())]
    return Directory(tuple(listed), tuple(dict.fromkeys(read)), tuple(empty), warnings)


def _manifests(tree: Tree, namespace: str | None, fallback: str
               ) -> tuple[tuple[DisaggregatedSet | Document, ...], tuple[Problem, ...], list[str]]:
    """The chosen manifests parsed and loaded (`core.delivery.sets.load_documents`: sets validated, each
    with its policy, placed by `namespace` and `fallback`), their warnings, and the manifests
    that held no document; every problem of every file at once."""
    documents: list[Document] = []
    problems: list[Problem | str] = []
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
    items, warnings = load_documents(documents, namespace, fallback)
    return items, warnings, empty


def _per_set_documents(loaded: tuple[DisaggregatedSet | Document, ...], entries: list[SetEntry | None],
                       reading: Reading, problems: list[Problem | str]) -> list[SetEntry | Document]:
    """Sets and passed-through documents in input order; the documents of PER_SET_KINDS handed
    to their kind's entry (attached to their sets, or refused into `problems`). `entries` are
    the sets of `loaded`, in order (None: a set not placed)."""
    by_kind: dict[str, list[Document]] = {}
    items: list[SetEntry | Document] = []
    placed = iter(entries)
    for item in loaded:
        if isinstance(item, DisaggregatedSet):
            entry = next(placed)
            if entry is not None:
                items.append(entry)
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


# --- rendering ---------------------------------------------------------------------------------

Rendered = list[tuple[SetEntry | Document, list[dict[str, Any]]]]


def render(directory: Directory, *, namespace: str | None = None,
           render_entry: Callable[[SetEntry], list[dict[str, Any]]] | None = None) -> tuple[Rendered, list[Problem]]:
    """Every item rendered, in input order: (SetEntry, its objects) or (Document, [its data]);
    and the problems of the inputs as a whole (a passed-through document colliding with a
    rendered object). `render_entry` renders a set (default: its steady state; git's renders
    one with a state as far as its state has rolled it); `namespace` is where a passed-through
    document naming none lands (-n, the destination)."""
    out: Rendered = []
    problems: list[Problem | str] = []
    rendered: list[tuple[dict[str, Any], DisaggregatedSet]] = []
    for item in directory.items:
        if isinstance(item, SetEntry):
            try:
                own = list(render_set(item.ds, item.namespace)) if render_entry is None else render_entry(item)
            except UserError as err:
                problems.extend(err.problems)
                continue
            out.append((item, own))
            rendered.extend((obj, item.ds) for obj in own)
        else:
            out.append((item, [item.data]))
    if problems:
        raise UserError(problems)
    return out, passthrough_collisions(rendered, directory.passthrough, namespace)


def objects_of(rendered: Rendered) -> list[dict[str, Any]]:
    """The objects to apply, in input order."""
    return [obj for _, objects in rendered for obj in objects]


def render_steady(tree: Tree, reading: Reading, namespace: str | None = None
                  ) -> tuple[list[dict[str, Any]], tuple[Problem, ...]]:
    """`render` of inputs that hold no state file (`holds_states` false): the objects to apply,
    in input order, and the warnings; raises on any problem (nothing half-rendered)."""
    directory = load(tree, reading, namespace=namespace)
    out, problems = render(directory, namespace=namespace)
    if problems:
        raise UserError(problems)
    return objects_of(out), directory.warnings
