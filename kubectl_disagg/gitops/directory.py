"""What a directory of manifests holds, read one way for every command: the sets, their rollout
states, the documents that pass through, and every check that needs the directory whole.

`render`, `validate`, `rollout state init`, `rollout step --gitops`, `rollout status --gitops`
(their `-f` inputs, `-R`) and the Argo CD plugin's `cmp generate` and `cmp discover` (its
`recurse`, `include`, `exclude` and `rollout-state` parameters) all call `read` or `load` here.

About 500 lines on purpose: it is the one directory pipeline (which files, their globs, the
per-set documents, the checks over the whole directory); a second module for any of its stages
would be a second way in, which is what this module replaced.

Which files are read (docs/argocd.md "Which files are read"):

- the files under each directory, its subdirectories too with `recursive` (`-R`, the plugin's
  `recurse`), symbolic links to files followed, links to directories not entered;
- never a file or directory whose name starts with a dot: Argo CD's own files
  (`.argocd-source.yaml`, `.argocd-source-<app>.yaml`, the `.argocd-helm-dep-up` marker), the
  checkout's `.git`, editors' and our own temporary files (`.disagg-rollout-state.yaml.*`);
- of those, the manifests (`*.yaml`, `*.yml`, `*.json`) that an `include` glob matches and no
  `exclude` glob does, matched as Argo CD matches a Directory source's: against the path
  relative to the directory, `*` crossing `/`, `{a,b}`, `[a-z]`, `?`; a file holding Argo CD's
  `+argocd:skip-file-rendering` marker is skipped as Argo CD skips it;
- the rollout state of a set from the state file (`disagg-rollout-state.yaml`, or the name
  given) in the directory of the set's own file; state files are never manifests.

What Argo CD v3.5.1 itself does, which this follows: reposerver/repository/repository.go reads
`.argocd-source.yaml` and `.argocd-source-<app>.yaml` at the application's path and merges them
into its source (mergeSourceParameters), and for a Directory source takes `*.yaml|yml|json`
files, matches `include`/`exclude` against the path relative to the application with
util/glob (gobwas/glob, no separators) and skips files holding the skip-file-rendering marker
(getPotentiallyValidManifestFile); the cmp-server gets the whole checkout, `.git` included
(util/cmp/stream.go), so skipping it is the plugin's to do.

A state names its set; one that names no set of the directory is refused (design §8 rule 1),
except a state of a set that `include`/`exclude` left out: what they leave out is left out
whole, the set with its state.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubectl_disagg.core import naming
from kubectl_disagg.core.model import (DEFAULT_NAMESPACE, DisaggregatedSet, is_disaggregated_set, is_state_document, namespace_conflict,
                                       namespace_for)
from kubectl_disagg.core.render import passthrough_collisions, render_set
from kubectl_disagg.core.sets import load_documents
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.gitops.autoscalers import scaler_targets
from kubectl_disagg.manifests.reader import MANIFEST_SUFFIXES, MAX_INPUT_BYTES, STDIN, STDIN_NAME, parse_stream
from kubectl_disagg.manifests.source import Document

if TYPE_CHECKING:  # read where a state file holds something (`_state_of`)
    from kubectl_disagg.gitops.state import RolloutState

DEFAULT_INCLUDE = ("*.yaml", "*.yml", "*.json")
SKIP_MARKER = b"+argocd:skip-file-rendering"  # Argo CD's Directory source skips a file holding it


@dataclass(frozen=True)
class Reading:
    """How a directory is read: `recursive` (-R, `recurse`), the `include` and `exclude` globs,
    the state file's name beside each set (`state_name`), or one `explicit` state file for a
    single set (--state FILE)."""

    recursive: bool = False
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = ()
    state_name: str = naming.STATE_FILE
    explicit: str | None = None

    def is_explicit(self, path: str) -> bool:
        """`path` names the --state file, however either is spelled (`resolved`)."""
        return self.explicit is not None and resolved(path) == resolved(self.explicit)


def resolved(path: str) -> str:
    """What a path names, for comparing it with another: its real absolute path (relative to
    the working directory, `..` and symbolic links resolved). Every path compared here (-f
    inputs, --state, the files found walking a directory) and by `gitops.git` goes through this
    one function, so one file named two ways is one file; messages keep each path as spelled."""
    return os.path.realpath(path)


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


@dataclass(frozen=True)
class Tree:
    """The inputs as read from disk: path → bytes (`files`), the manifests chosen in input order,
    the state files found in walked directories (checked whole), and the names of the sets in
    manifests that `include`/`exclude` left out (their states are left out with them)."""

    files: Mapping[str, bytes]
    chosen: tuple[str, ...]
    walked_states: tuple[str, ...] = ()
    left_out_sets: frozenset[str] = frozenset()


# --- globs, as Argo CD matches a Directory source's include and exclude ----------------------

def glob_regex(pattern: str) -> re.Pattern:
    """github.com/gobwas/glob compiled without separators (Argo CD's util/glob.Match): `*` and
    `**` match any run of characters, `/` included; `?` one; `[a-z]`, `[!a-z]`; `{a,b}`; `\\`
    escapes. Matched against the whole relative path."""
    out, depth, i = [], 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if char == "*":
            out.append(".*")
            while i + 1 < len(pattern) and pattern[i + 1] == "*":
                i += 1
        elif char == "?":
            out.append(".")
        elif char == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1:end]
            negated = body.startswith("!")
            body = body[1:] if negated else body
            out.append("[" + ("^" if negated else "") + "".join(
                part if part == "-" else re.escape(part) for part in body) + "]")
            i = end
        elif char == "{":
            out.append("(?:")
            depth += 1
        elif char == "}" and depth:
            out.append(")")
            depth -= 1
        elif char == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(char))
        i += 1
    if depth:
        raise ValueError(f"unclosed {{ in {pattern!r}")
    return re.compile("".join(out), re.DOTALL)


def check_globs(reading: Reading) -> list[str]:
    """Why `include`/`exclude` cannot be used as given (an include naming a subdirectory while
    the walk stays at the top would silently read nothing there)."""
    problems = []
    for name, patterns in (("include", reading.include), ("exclude", reading.exclude)):
        for pattern in patterns:
            try:
                glob_regex(pattern)
            except ValueError as err:
                problems.append(f"parameter {name}: {err}")
    if not reading.recursive:
        nested = [pattern for pattern in reading.include if "/" in pattern]
        if nested:
            problems.append(f"parameter include: {', '.join(nested)} names files in subdirectories, which are "
                            "read only with the recurse parameter true (as Argo CD's directory.recurse)")
    return problems


def is_state_file(relative: str, reading: Reading) -> bool:
    return relative == reading.state_name or relative.endswith("/" + reading.state_name)


def choose(listing: Iterable[str], reading: Reading) -> tuple[list[str], list[str], list[str]]:
    """Of the relative paths of a walk: the manifests chosen, those left out by the globs, and
    the state files, each in a stable byte-wise order. Dot names are never in a listing."""
    include = [glob_regex(pattern) for pattern in reading.include]
    exclude = [glob_regex(pattern) for pattern in reading.exclude]
    chosen, left_out, states = [], [], []
    for path in sorted(set(listing), key=lambda p: p.encode("utf-8", "surrogateescape")):
        if not reading.recursive and "/" in path:
            continue
        if is_state_file(path, reading):
            states.append(path)
        elif not path.endswith(MANIFEST_SUFFIXES):
            continue
        elif any(p.fullmatch(path) for p in include) and not any(p.fullmatch(path) for p in exclude):
            chosen.append(path)
        else:
            left_out.append(path)
    return chosen, left_out, states


# --- reading from disk -----------------------------------------------------------------------

def list_tree(root: str, recursive: bool) -> list[str]:
    """Relative paths (with `/`) of the regular files under `root`: dot names skipped at every
    level, links to files followed, links to directories not entered."""
    listing = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
        relative = os.path.relpath(directory, root)
        for name in names:
            if name.startswith(".") or not os.path.isfile(os.path.join(directory, name)):
                continue
            listing.append(name if relative == "." else f"{relative}/{name}".replace(os.sep, "/"))
    return listing


def _read_bytes(path: str) -> bytes:
    if path == STDIN:
        return sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_INPUT_BYTES + 1)
    except OSError as err:
        raise UserError([Problem(path, 0, "", err.strerror or str(err))]) from None


def read_tree(paths: Sequence[str], reading: Reading) -> Tree:
    """The -f inputs (files, directories, `-`) read from disk as `Tree`; every missing input at once.

    A directory named on the command line is walked (`recursive` below it); a file is read as
    given. Paths keep the spelling of the input (`apps/two/sub/beta.yaml`).
    """
    files: dict[str, bytes] = {}
    chosen: list[str] = []
    walked_states: list[str] = []
    left_out_sets: set[str] = set()
    missing: list[Problem] = []

    def take(path: str, content: bytes | None = None) -> None:
        if path not in files:
            try:
                files[path] = _read_bytes(path) if content is None else content
            except UserError as err:  # every input that cannot be read, at once
                missing.extend(err.problems)

    for raw in paths:
        if raw == STDIN:
            take(STDIN_NAME, _read_bytes(STDIN))
            chosen.append(STDIN_NAME)
        elif os.path.isdir(raw):
            walk = read_walk(raw, reading)
            for path, content in walk.files.items():
                take(path, content)
            chosen.extend(walk.chosen)
            walked_states.extend(walk.walked_states)
            left_out_sets.update(walk.left_out_sets)
        elif os.path.isfile(raw):
            take(raw)
            if raw not in files:
                continue
            if reading.is_explicit(raw):
                continue  # --state FILE named with -f too: read as the state it is
            if is_state_file(os.path.basename(raw), reading):
                walked_states.append(raw)
            else:
                chosen.append(raw)
        else:
            missing.append(Problem(raw, 0, "", "no such file or directory"))
    if missing:
        raise UserError(missing)
    for path in sorted({os.path.join(os.path.dirname(path), reading.state_name) for path in chosen
                        if path != STDIN_NAME}):  # the state files beside single files
        if path not in files and os.path.isfile(path):
            take(path)
    if reading.explicit and reading.explicit not in files and os.path.exists(reading.explicit):
        take(reading.explicit)
    return Tree(files, tuple(chosen), tuple(dict.fromkeys(walked_states)), frozenset(left_out_sets))


def read_walk(directory: str, reading: Reading, shown_as: str | None = None) -> Tree:
    """One directory read from disk (`walked`); paths shown joined to `shown_as` (default: the
    directory as given; "" shows them relative to it, as Argo CD does)."""
    picked, left_out, states = choose(list_tree(directory, reading.recursive), reading)
    contents = {relative: _read_bytes(os.path.join(directory, relative)) for relative in (*picked, *states)}
    contents.update({relative: _lenient(os.path.join(directory, relative)) for relative in left_out})
    return walked(directory if shown_as is None else shown_as, contents, reading)


def _lenient(path: str) -> bytes:
    """A left-out manifest's bytes, or none when it cannot be read (it is not read for use)."""
    try:
        return _read_bytes(path)
    except UserError:
        return b""


def walked(root: str, files: Mapping[str, bytes], reading: Reading) -> Tree:
    """The `Tree` of one directory walk, pure (but for `resolved` --state, which reads links):
    `files` maps each listed path relative to `root` (with `/`) to its bytes. Paths come back
    joined to `root` ("" keeps them relative)."""
    picked, left_out, states = choose(files, reading)
    chosen = [relative for relative in picked if SKIP_MARKER not in files[relative]
              and not reading.is_explicit(os.path.join(root, relative))]  # --state FILE: a state file
    names: set[str] = set()
    for relative in left_out:
        names.update(_set_names(files[relative], relative))
    return Tree({os.path.join(root, relative): files[relative] for relative in (*chosen, *states, *left_out)},
                tuple(os.path.join(root, relative) for relative in chosen),
                tuple(os.path.join(root, relative) for relative in states), frozenset(names))


def _set_names(content: bytes, path: str) -> set[str]:
    """The names of the sets in a left-out manifest (it need not parse: it is not read)."""
    try:
        documents = parse_stream(content, path)
    except UserError:
        return set()
    return {str((d.data.get("metadata") or {}).get("name")) for d in documents
            if is_disaggregated_set(d.data) and isinstance(d.data.get("metadata"), dict)}


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
    for ds in sets:
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
        entries[id(ds)] = SetEntry(ds, target, path, state)
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


# The kinds of our API groups that we read, and the version of each (config/crd/). A document
# of these groups naming another kind or version would otherwise pass through, or be taken
# for no policy at all: a mistyped policy's rollout would start every slice at once.
SERVED = {naming.PLUGIN_GROUP: (naming.PLUGIN_VERSION, (naming.POLICY_KIND, naming.STATE_KIND)),
          naming.SET_GROUP: (naming.SET_VERSION, (naming.SET_KIND, naming.SCALER_KIND))}


def unread_kind(document: Document) -> Problem | None:
    """Why `document` is of one of our API groups yet of no kind and version we read, as kubectl
    refuses it ("no matches for kind ... in version ..."); None for every other document. A
    DisaggregatedSet of another version is its validation's to refuse (a set's own message)."""
    data = document.data
    api_version = data.get("apiVersion") if isinstance(data, dict) else None
    if not isinstance(api_version, str) or api_version.split("/")[0] not in SERVED or is_disaggregated_set(data) \
            and data.get("kind") != naming.SCALER_KIND:
        return None
    group, _, version = api_version.partition("/")
    served, kinds = SERVED[group]
    kind = data.get("kind")
    if version == served and kind in kinds:
        return None
    field = "apiVersion" if kind in kinds else "kind"
    return Problem(document.file, document.line((field,)), field,
                   f'no matches for kind "{kind}" in version "{api_version}": {group} serves '
                   f'{", ".join(kinds)} in version {group}/{served} only')


def _per_set_documents(loaded_items, entries: Mapping[int, SetEntry], reading: Reading,
                       problems: list) -> list[SetEntry | Document]:
    """Sets and passed-through documents in input order; the documents of PER_SET_KINDS handed
    to their kind's entry (attached to their sets, or refused into `problems`)."""
    by_kind: dict[str, list[Document]] = {}
    items: list[SetEntry | Document] = []
    for item in loaded_items:
        if isinstance(item, DisaggregatedSet):
            if id(item) in entries:
                items.append(entries[id(item)])
        elif (kind := _per_set_kind(item)) is not None:
            by_kind.setdefault(kind, []).append(item)
        else:
            items.append(item)
    for kind, found in by_kind.items():
        sets = [item for item in items if isinstance(item, SetEntry)]
        updated, refused = PER_SET_KINDS[kind](sets, found, reading)
        problems.extend(refused)
        replaced = {id(old.ds): new for old, new in zip(sets, updated)}
        items = [replaced.get(id(item.ds), item) if isinstance(item, SetEntry) else item for item in items]
    return items


def _state_name(document: Document) -> str | None:
    metadata = document.data.get("metadata") if isinstance(document.data, dict) else None
    return metadata.get("name") if isinstance(metadata, dict) else None


def state_path(ds: DisaggregatedSet, reading: Reading = Reading()) -> str | None:
    """The state file of `ds`: the explicit one, else `state_name` beside the set's file (None
    for a set read from stdin or from the cluster)."""
    if reading.explicit:
        return reading.explicit
    if ds.source.file == STDIN_NAME or ds.source.file.startswith("disaggregatedset/"):
        return None
    return os.path.join(os.path.dirname(ds.source.file), reading.state_name)


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
