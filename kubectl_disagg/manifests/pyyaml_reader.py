"""Any YAML, through PyYAML: the reader for what `block_yaml` leaves out, and for errors.

PyYAML's composer gives us nodes with marks; we turn them into plain Python data ourselves,
which is also where duplicate keys, alias bombs and absurd nesting are refused. Imported
only when a text needs it: PyYAML's import alone costs a command about 25 ms.
"""

from __future__ import annotations

import yaml

from kubectl_disagg.manifests.block_yaml import implicit_type
from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests.source import MAX_DEPTH, MAX_VALUES_PER_DOCUMENT, FieldPath, dotted as _dotted

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # LibYAML's parser when PyYAML has it
_scalars = yaml.constructor.SafeConstructor()
_YAML = "tag:yaml.org,2002:"
_STR = _YAML + "str"
_MERGE = _YAML + "merge"


def load_plain(text: bytes) -> object:
    """One YAML document as plain data, without positions or our checks (a kubeconfig);
    raises ValueError with PyYAML's message when the text is not YAML."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as err:
        raise ValueError(str(err)) from None


def _null(node: yaml.ScalarNode) -> None:
    if implicit_type(node.value) != "null":
        raise ValueError  # `!!null x`
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


def read(text: str | bytes, file: str) -> tuple[list[tuple[int, object, dict]], list[Problem]]:
    """`(index, data, lines)` of every non-empty document, and every problem found."""
    documents: list[tuple[int, object, dict]] = []
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
            documents.append((index, data, builder.lines))
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
    return documents, problems


def _line_at(text: str | bytes, position: int) -> int:
    newline = b"\n" if isinstance(text, bytes) else "\n"
    return text[:position].count(newline) + 1
