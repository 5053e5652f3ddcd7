"""The one input reader: which files the -f inputs and an Argo CD application directory hold, read
from disk once per command: manifests, the state files beside their sets, globs and skipped files.

One module on purpose: it is the one way in from disk (which files, their globs, the bytes read,
where a set's state file is, which kinds of our groups are read); every command and the Argo CD
plugin read through it, and nothing else lists a directory or opens an input file
(tests/unit/test_architecture.py). What the bytes hold is loaded above it (`gitops.directory`).

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
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet, is_disaggregated_set
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.reader import MANIFEST_SUFFIXES, MAX_INPUT_BYTES, STDIN, STDIN_NAME, parse_stream
from kubectl_disagg.manifests.source import Document

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
class Tree:
    """The inputs as read from disk: path → bytes (`files`), the manifests chosen in input order,
    the state files found in walked directories (checked whole), and the names of the sets in
    manifests that `include`/`exclude` left out (their states are left out with them)."""

    files: Mapping[str, bytes]
    chosen: tuple[str, ...]
    walked_states: tuple[str, ...] = ()
    left_out_sets: frozenset[str] = frozenset()


# --- globs, as Argo CD matches a Directory source's include and exclude ----------------------

def glob_regex(pattern: str) -> re.Pattern[str]:
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
    missing: list[Problem | str] = []

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
            missing.append(Problem(raw, 0, "", _not_a_file(raw)))
    if missing:
        raise UserError(missing)
    for path in sorted({beside(path, reading) for path in chosen if path != STDIN_NAME}):  # beside single files
        if path not in files and os.path.isfile(path):
            take(path)
    if reading.explicit and reading.explicit not in files and os.path.exists(reading.explicit):
        take(reading.explicit)
    return Tree(files, tuple(chosen), tuple(dict.fromkeys(walked_states)), frozenset(left_out_sets))


_FILE_TYPES = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_a_file(path: str) -> str:
    """Why `path` is no input: missing, or what it is instead (a pipe would block the read, a
    device such as /dev/zero never ends)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file or directory"
    except OSError as err:  # a component is not a directory, permission denied on one
        return (err.strerror or str(err)).lower()
    kind = next((name for test, name in _FILE_TYPES if test(mode)), "not a file or directory")
    return f"not a regular file ({kind}); give a file, a directory or - for stdin"


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


def state_path(ds: DisaggregatedSet, reading: Reading = Reading()) -> str | None:
    """The state file of `ds`: the explicit one, else `state_name` beside the set's file (None
    for a set read from stdin or from the cluster)."""
    if reading.explicit:
        return reading.explicit
    if ds.source.file == STDIN_NAME or ds.source.file.startswith("disaggregatedset/"):
        return None
    return beside(ds.source.file, reading)


def beside(manifest: str, reading: Reading) -> str:
    """The state file beside a manifest: `state_name` in its directory (the one rule, read by
    `read_tree` and `state_path`)."""
    return os.path.join(os.path.dirname(manifest), reading.state_name)


def contents(paths: Iterable[str]) -> dict[str, bytes | None]:
    """What each file holds now, whole (None: it does not exist): the state files a write is
    about to replace, read once for the write to keep the other sets' documents and for
    `gitops.files.restore` to put back when the commit cannot be made."""
    held: dict[str, bytes | None] = {}
    for path in paths:
        try:
            with open(path, "rb") as handle:
                held[path] = handle.read()
        except FileNotFoundError:
            held[path] = None
    return held


def first_chosen(directory: str, reading: Reading, holds: Callable[[bytes], bool]) -> str | None:
    """The first manifest of `directory` (relative path) that `reading` chooses and whose bytes
    `holds` accepts, read one at a time (Argo CD's discover stops at the first); unreadable
    files are passed over."""
    chosen, _, _ = choose(list_tree(directory, reading.recursive), reading)
    for path in chosen:
        try:
            content = _read_bytes(os.path.join(directory, path))
        except UserError:
            continue
        if holds(content):
            return path
    return None


def documents_leniently(paths: Iterable[str]) -> list[Document]:
    """The documents of these files, and of the manifests directly in these directories, those
    that cannot be read or parsed passed over (shell completion: a half-written file must not
    break it)."""
    found: list[Document] = []
    for path in paths:
        path = os.path.expanduser(path)
        files = [os.path.join(path, name) for name in sorted(list_tree(path, False))
                 if name.endswith(MANIFEST_SUFFIXES)] if os.path.isdir(path) else [path]
        for file in files:
            try:
                found.extend(parse_stream(_read_bytes(file), file))
            except UserError:
                continue
    return found
