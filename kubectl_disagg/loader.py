"""Reading manifests: files, directories and stdin, several documents per stream.

Every value keeps the line it came from, so validation can say `FILE:LINE: path: message`.
PyYAML's composer gives us nodes with marks; we turn them into plain Python data ourselves,
which is also where duplicate keys, alias bombs and absurd nesting are refused.
"""

from __future__ import annotations

import os
import sys
from collections import namedtuple
from collections.abc import Iterable

import yaml

from kubectl_disagg.errors import Problem, UserError

MAX_INPUT_BYTES = 10 * 1024 * 1024
MAX_DEPTH = 100
MAX_VALUES_PER_DOCUMENT = 1_000_000
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_NAME = "<stdin>"

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # LibYAML's parser when PyYAML has it
_scalars = yaml.constructor.SafeConstructor()
_YAML = "tag:yaml.org,2002:"
_STR = _YAML + "str"
_MERGE = _YAML + "merge"
_NULL_WORDS = frozenset(("", "~", "null", "Null", "NULL"))


def load_plain(stream) -> object:
    """One YAML document as plain data, without positions or our checks (a kubeconfig)."""
    return yaml.load(stream, Loader=_Loader)


def _null(node: yaml.ScalarNode) -> None:
    if node.value not in _NULL_WORDS:
        raise ValueError
    return None


def _float(node: yaml.ScalarNode) -> float:
    value = _scalars.construct_yaml_float(node)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError  # JSON, and so the API server, has no NaN or infinity
    return value


def _timestamp(node: yaml.ScalarNode) -> str:
    _scalars.construct_yaml_timestamp(node)  # raises unless it is one
    return node.value  # JSON has no timestamps: Kubernetes reads them as strings


# What each core-schema tag reads as; a value the tag cannot read is refused, as go-yaml does.
_SCALAR_BUILDERS = {
    _STR: lambda node: node.value,
    "!": lambda node: node.value,  # the non-specific tag: a string
    _YAML + "null": _null,
    _YAML + "bool": _scalars.construct_yaml_bool,
    _YAML + "int": _scalars.construct_yaml_int,
    _YAML + "float": _float,
    _YAML + "timestamp": _timestamp,
    # `<<` and `=` as plain values (not keys) are just strings.
    _MERGE: lambda node: node.value,
    _YAML + "value": lambda node: node.value,
}
_COLLECTION_TAGS = {yaml.MappingNode: (_YAML + "map",), yaml.SequenceNode: (_YAML + "seq",)}


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML):] if tag.startswith(_YAML) else tag

FieldPath = tuple  # a field path: keys and list indices, e.g. ("spec", "roles", 1, "name")


class Document(namedtuple("Document", "data file index lines")):
    """One YAML document: its data, its file, its position in the stream (0-based), and
    `lines`, the 1-based line of every value by field path."""

    __slots__ = ()

    def line(self, path: FieldPath) -> int:
        """The line of the value at `path`, or of its nearest ancestor that exists."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)


class _TooDeep(Exception):
    pass


class _TooBig(Exception):
    pass


class _Builder:
    """Turns one composed node tree into plain data plus a path → line table."""

    def __init__(self, file: str):
        self.file = file
        self.lines: dict[FieldPath, int] = {}
        self.problems: list[Problem] = []
        self._sizes: dict[int, int] = {}
        self._budget = MAX_VALUES_PER_DOCUMENT

    def build(self, node: yaml.Node) -> object:
        self._check_expansion(node, 0)
        return self._value(node, (), 0)

    def _check_expansion(self, node: yaml.Node, depth: int) -> int:
        """Size of the value once aliases are expanded, memoised so an alias bomb costs little."""
        key = id(node)
        if key in self._sizes:
            size = self._sizes[key]
        else:
            if depth > MAX_DEPTH:
                raise _TooDeep(node.start_mark.line + 1)
            size = 1
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    size += self._check_expansion(k, depth + 1) + self._check_expansion(v, depth + 1)
            elif isinstance(node, yaml.SequenceNode):
                for item in node.value:
                    size += self._check_expansion(item, depth + 1)
            self._sizes[key] = size
        if size > self._budget:
            raise _TooBig(node.start_mark.line + 1)
        return size

    def _value(self, node: yaml.Node, path: FieldPath, depth: int) -> object:
        if path not in self.lines:
            self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if node.tag not in _COLLECTION_TAGS[type(node)]:
            # !!set, !!omap, !!pairs, custom tags: JSON (what the API server reads) has none of them.
            self._refuse(node, path, f"unsupported YAML tag {_short_tag(node.tag)}: "
                                     "Kubernetes manifests are plain mappings, lists and scalars")
            return None
        if isinstance(node, yaml.SequenceNode):
            return [self._value(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        return self._mapping(node, path, depth)

    def _scalar(self, node: yaml.ScalarNode, path: FieldPath) -> object:
        builder = _SCALAR_BUILDERS.get(node.tag)
        if builder is None:
            self._refuse(node, path, f"unsupported YAML tag {_short_tag(node.tag)}: "
                                     "write the value as a plain string, number, boolean or null")
            return None
        try:
            return builder(node)
        except Exception:  # PyYAML's constructors fail in many ways on values they cannot read
            self._refuse(node, path, f"cannot read {node.value!r} as {_short_tag(node.tag)}")
            return None

    def _refuse(self, node: yaml.Node, path: FieldPath, message: str) -> None:
        self.problems.append(Problem(self.file, node.start_mark.line + 1, _dotted(path), message))

    def _mapping(self, node: yaml.MappingNode, path: FieldPath, depth: int) -> dict:
        result: dict = {}
        first_seen: dict = {}
        merged: dict = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merged.update(self._merge_sources(value_node, path, depth))
                continue
            key = self._key(key_node, path)
            if key is None:
                continue
            line = key_node.start_mark.line + 1
            if key in first_seen:
                self.problems.append(
                    Problem(self.file, line, _dotted(path + (key,)),
                            f"duplicate key {key!r} (first at line {first_seen[key]})")
                )
                continue
            first_seen[key] = line
            self.lines[path + (key,)] = line
            result[key] = self._value(value_node, path + (key,), depth + 1)
        # Explicit keys win over merged ones, as YAML's merge key specifies.
        return {**merged, **result} if merged else result

    def _merge_sources(self, node: yaml.Node, path: FieldPath, depth: int) -> dict:
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        merged: dict = {}
        for source in reversed(sources):  # earlier sources take precedence
            value = self._value(source, path, depth + 1)
            if isinstance(value, dict):
                merged.update(value)
            else:
                self.problems.append(Problem(self.file, source.start_mark.line + 1, _dotted(path),
                                             "merge key '<<' needs a mapping"))
        return merged

    def _key(self, node: yaml.Node, path: FieldPath) -> object:
        # Kubernetes reads YAML as JSON, where every key is a string: `1: x` has key "1".
        if isinstance(node, yaml.ScalarNode):
            return node.value
        self.problems.append(Problem(self.file, node.start_mark.line + 1, _dotted(path),
                                     "mapping keys must be scalars"))
        return None


def _dotted(path: FieldPath) -> str:
    """("spec", "roles", 1, "name") → "spec.roles[1].name"."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


dotted = _dotted


def parse_stream(text: str | bytes, file: str) -> list[Document]:
    """Every non-empty document of one YAML or JSON stream; raises UserError on bad input."""
    if len(text) > MAX_INPUT_BYTES:
        raise UserError([Problem(file, 0, "", f"input is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")])
    documents: list[Document] = []
    problems: list[Problem] = []
    try:
        for index, node in enumerate(yaml.compose_all(text, Loader=_Loader)):
            if node is None or (isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")):
                continue  # an empty document, e.g. a trailing `---`
            builder = _Builder(file)
            try:
                data = builder.build(node)
            except _TooDeep as err:
                problems.append(Problem(file, err.args[0], "", f"nested more than {MAX_DEPTH} levels deep"))
                continue
            except _TooBig as err:
                problems.append(Problem(file, err.args[0], "",
                                        f"document expands to more than {MAX_VALUES_PER_DOCUMENT:,} values "
                                        "(YAML alias bomb?)"))
                continue
            problems.extend(builder.problems)
            documents.append(Document(data, file, index, builder.lines))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else 0
        message = " ".join(filter(None, [err.context, err.problem]))
        problems.append(Problem(file, line, "", f"invalid YAML: {message}"))
    except yaml.reader.ReaderError as err:
        line = _line_at(text, err.position) if isinstance(err.position, int) else 0
        character = err.character if isinstance(err.character, int) else ord(err.character or "?")
        problems.append(Problem(file, line, "", f"invalid YAML: unacceptable character #x{character:04x}: "
                                                "control characters are not allowed"))
    except yaml.YAMLError as err:
        problems.append(Problem(file, 0, "", "invalid YAML: " + " ".join(str(err).split())))
    except (UnicodeDecodeError, ValueError) as err:
        problems.append(Problem(file, 0, "", f"cannot read input: {err}"))
    if problems:
        raise UserError(problems)
    return documents


def _line_at(text: str | bytes, position: int) -> int:
    newline = b"\n" if isinstance(text, bytes) else "\n"
    return text[:position].count(newline) + 1


def expand_paths(paths: Iterable[str], recursive: bool = False) -> list[str]:
    """Files named on the command line, directories expanded in a stable (byte-wise) order."""
    files: list[str] = []
    missing: list[Problem] = []
    for raw in paths:
        if raw == STDIN:
            files.append(STDIN)
        elif os.path.isdir(raw):
            files.extend(sorted(_manifests_in(raw, recursive), key=os.fsencode))
        elif os.path.isfile(raw):
            files.append(raw)
        else:
            missing.append(Problem(raw, 0, "", "no such file or directory"))
    if missing:
        raise UserError(missing)
    return files


def _manifests_in(directory: str, recursive: bool) -> list[str]:
    found = []
    for root, dirs, names in os.walk(directory):
        found.extend(os.path.join(root, name) for name in names if name.endswith(MANIFEST_SUFFIXES))
        if not recursive:
            break
        dirs.sort()
    return [path for path in found if os.path.isfile(path)]


def read_documents(paths: Iterable[str], recursive: bool = False) -> list[Document]:
    """All documents of all inputs, in order; every problem of every file reported at once."""
    documents: list[Document] = []
    problems: list[Problem] = []
    for file in expand_paths(paths, recursive):
        try:
            documents.extend(parse_stream(*_read(file)))
        except UserError as err:
            problems.extend(err.problems)
    if problems:
        raise UserError(problems)
    return documents


def _read(file: str) -> tuple[bytes, str]:
    if file == STDIN:
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        return data, STDIN_NAME
    try:
        with open(file, "rb") as handle:
            return handle.read(MAX_INPUT_BYTES + 1), file
    except OSError as err:
        raise UserError([Problem(file, 0, "", err.strerror or str(err))]) from None
