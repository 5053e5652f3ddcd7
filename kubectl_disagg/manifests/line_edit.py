"""Writing values into a YAML file in place: only the lines of the edited values change, every
comment, blank line, quote style and key order of the rest stays as it was (design §2.1).

The lines come from our own reader's positions (`Document.lines`, the line of every key); the
result is read again and must hold exactly the data the edits make, else the file is refused
with the line of each value that could not be written in place (a flow mapping, a value split
over lines): nothing is ever half-written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.resolver import plain_reads_as_string
from kubectl_disagg.manifests.source import Document, FieldPath, dotted

Edit = tuple[FieldPath, str]

# `  key: value  # comment` or `- key: value`: a block mapping entry with its value on its line.
_ENTRY = re.compile(r"^(?P<lead>\s*(?:-\s+)*)(?P<key>[^\s#'\"{\[][^:#]*?|'[^']*'|\"[^\"]*\")(?P<colon>\s*:)"
                    r"(?P<space>[ \t]*)(?P<value>[^#]*?)(?P<rest>\s+#.*)?$")
_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9_./][A-Za-z0-9_./:@+-]*$")


def rewrite(text: str, documents: Sequence[Document], edits: Mapping[int, Sequence[Edit]],
            expected: Mapping[int, object]) -> tuple[str, list[Problem]]:
    """`text` (one file, its `documents` as read) with `edits[i]` written into its document of
    index i; `expected[i]` is the data that document must hold afterwards (every other document
    must hold what it held): the result is read again and checked."""
    lines = text.split("\n")
    problems: list[Problem] = []
    changes: list[tuple[int, int, list[str]]] = []  # (line index, lines replaced, new lines)
    by_index = {document.index: document for document in documents}
    for index, document_edits in edits.items():
        document = by_index[index]
        for path, value in document_edits:
            change = _change(lines, document, path, value)
            if isinstance(change, str):
                problems.append(Problem(document.file, document.line(path), dotted(path), change))
            else:
                changes.append(change)
    if problems:
        return text, problems
    for at, replaced, new in sorted(changes, key=lambda change: change[0], reverse=True):
        lines[at:at + replaced] = new
    result = "\n".join(lines)
    try:
        after = {document.index: document for document in parse_stream(result, documents[0].file)}
    except UserError:  # not readable any more: every edit is refused below
        after = {}
    for document in documents:
        if document.index not in after or after[document.index].data != expected.get(document.index, document.data):
            for path, _ in edits.get(document.index, ()):
                problems.append(Problem(document.file, document.line(path), dotted(path),
                                        "cannot be rewritten in place (a flow mapping or a value over several "
                                        "lines): edit it by hand"))
            if document.index not in edits:
                problems.append(Problem(document.file, document.line(()), "", "changed by the rewrite of another "
                                                                               "document: edit the file by hand"))
    return (text, problems) if problems else (result, [])


def _change(lines: list[str], document: Document, path: FieldPath, value: str) -> tuple[int, int, list[str]] | str:
    if path in document.lines:  # the key is there: its value is replaced on its line
        at = document.lines[path] - 1
        match = _ENTRY.match(lines[at])
        if not match or not match["value"]:
            return "cannot be rewritten in place (not a `key: value` line): edit it by hand"
        new = _scalar(value, match["value"])
        return at, 1, [lines[at][:match.start("value")] + new + (match["rest"] or "")]
    depth = len(path) - 1
    while depth > 0 and path[:depth] not in document.lines:
        depth -= 1
    parent = path[:depth]
    node: object = document.data
    for key in parent:
        node = node[key]  # type: ignore[index]
    children = [document.lines[parent + (key,)] for key in node] if isinstance(node, dict) else []
    if not children or parent not in document.lines:
        return f"cannot add {dotted(path[depth:])} under an empty or flow mapping: edit it by hand"
    at = document.lines[parent] - 1
    opened = _ENTRY.match(lines[at])
    first = _ENTRY.match(lines[min(children) - 1])
    if not opened or opened["value"] or not first:
        return f"cannot add {dotted(path[depth:])} in place (a flow mapping): edit it by hand"
    indent = len(first["lead"])
    step = max(indent - len(opened["lead"]), 2)
    new = [" " * (indent + step * n) + _key(str(key)) + ":" for n, key in enumerate(path[depth:-1])]
    new.append(" " * (indent + step * (len(path) - 1 - depth)) + _key(str(path[-1])) + ": " + json.dumps(value))
    return at + 1, 0, new


def _scalar(value: str, old: str) -> str:
    """`value` written as the old one was: plain where it reads back as itself, else quoted."""
    if old.startswith("'") and "'" not in value:
        return f"'{value}'"
    if not old.startswith(("'", '"')) and _PLAIN_SAFE.match(value) and plain_reads_as_string(value):
        return value
    return json.dumps(value)


def _key(key: str) -> str:
    return key if _PLAIN_SAFE.match(key) and plain_reads_as_string(key) else json.dumps(key)

