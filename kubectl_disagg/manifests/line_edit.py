"""Writing values into a YAML file in place: only the lines of the edited values change, every
comment, blank line, quote style and key order of the rest stays as it was (design §2.1).

A text value is written on its line, quoted as the old one was. Any other value (a list, a
mapping, a number) replaces its field's whole block, all the lines below its key line, in the
block style our writer prints (the comments inside that block go with it); `REMOVED` deletes
the block (the first key of a list item hands the item's dash to the next). A field not in the
file is added under its nearest ancestor that is. An edit inside a flow collection (`{...}`,
`[...]`) is lifted to the nearest key on a block line above it and writes that key whole. Edits
whose lines overlap are made in rounds, the file read again between them. Each line keeps its
own ending (CRLF or LF); a line added takes the ending of the line it replaces or follows.

The lines come from our own reader's positions (`Document.lines`, the line of every key); the
result is read again and must hold exactly the data the edits make, else the file is refused
with the line of each value that could not be written in place (a value split over lines):
nothing is ever half-written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.resolver import plain_reads_as_string
from kubectl_disagg.manifests.source import REMOVED, Document, FieldPath, dotted
from kubectl_disagg.manifests.writer import entry_lines

Edit = tuple[FieldPath, object]  # a field and its new value (a text value, any JSON value, or REMOVED)

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
    crlf = [line.endswith("\r") for line in lines]  # each line's ending, kept: the lines are edited without it
    lines = [line[:-1] if cr else line for line, cr in zip(lines, crlf)]
    # What follows the last line break has none (and a CR at the very end stays there); should lines
    # come after it, it ends as the line above it does.
    tail, crlf[-1] = "\r" * crlf[-1], len(crlf) > 1 and crlf[-2]
    problems: list[Problem] = []
    lifted = {index: _lifted(lines, document, edits[index], expected.get(index, document.data))
              for document in documents for index in [document.index] if index in edits}
    # An edit under a YAML alias is not written: its lines are the anchor's, shared with every other
    # user of it. The anchor's own edit may make it; if the file then does not read as intended, the
    # edits that a shared anchor holds are refused below, naming the alias and the anchor.
    pending = {document.index: [(path, value) for path, value in lifted[document.index] if not document.alias(path)]
               for document in documents if document.index in lifted}
    current = list(documents)
    while pending:  # in rounds: an edit whose lines another's change touches waits for the text after it
        by_index = {document.index: document for document in current}
        changes: list[tuple[int, int, list[str]]] = []  # (line index, lines replaced, new lines)
        deferred: dict[int, list[Edit]] = {}
        for index, document_edits in pending.items():
            document = by_index[index]
            for path, value in document_edits:
                change = _change(lines, document, path, value)
                if isinstance(change, str):
                    problems.append(Problem(document.file, document.line(path), dotted(path), change))
                elif any(change[0] <= at + replaced and at <= change[0] + change[1] for at, replaced, _ in changes):
                    deferred.setdefault(index, []).append((path, value))
                else:
                    changes.append(change)
        if problems:
            return text, problems
        for at, replaced, new in sorted(changes, key=lambda change: change[0], reverse=True):
            lines[at:at + replaced] = new
            crlf[at:at + replaced] = _endings(crlf, at, replaced, len(new))
        pending = deferred
        if pending:
            try:
                current = parse_stream("\n".join(lines), documents[0].file)
            except UserError:  # not readable any more: refused below
                break
    result = "\n".join(line + "\r" * cr for line, cr in zip(lines, [*crlf[:-1], False])) + tail
    try:
        after = {document.index: document for document in parse_stream(result, documents[0].file)}
    except UserError:  # not readable any more: every edit is refused below
        after = {}
    for document in documents:
        if document.index not in after or after[document.index].data != expected.get(document.index, document.data):
            shared = [problem for path, _ in lifted.get(document.index, ()) if (problem := _shared(document, path))]
            if shared:
                problems += shared
                continue
            for path, _ in edits.get(document.index, ()):
                problems.append(Problem(document.file, document.line(path), dotted(path),
                                        "cannot be rewritten in place (a flow mapping or a value over several "
                                        "lines): edit it by hand"))
            if document.index not in edits:
                problems.append(Problem(document.file, document.line(()), "", "changed by the rewrite of another "
                                                                               "document: edit the file by hand"))
    return (text, problems) if problems else (result, [])


def _shared(document: Document, path: FieldPath) -> Problem | None:
    """Why the edit at `path` cannot be made alone when a YAML alias shares its value: under
    the alias (at the alias's line), or in the anchor (at its own); None when none does."""
    alias = document.alias(path)
    if alias is not None:
        name, used, anchor = document.aliases[alias]
        return Problem(document.file, used, dotted(path),
                       f"comes through the alias *{name}, whose text is the anchor &{name} at line {anchor}: editing "
                       f"it there would change every role sharing it; give them all the same change, or write this "
                       f"one out in full in place of *{name}")
    for name, used, anchor in document.aliases.values():
        if any(document.lines.get(path[:depth]) == anchor for depth in range(1, len(path) + 1)):
            return Problem(document.file, document.line(path), dotted(path),
                           f"is in the anchor &{name} at line {anchor}, which the alias *{name} at line {used} shares: "
                           f"editing it would change every role sharing it; give them all the same change, or write "
                           f"the other out in full in place of *{name}")
    return None


def _endings(crlf: list[bool], at: int, replaced: int, count: int) -> list[bool]:
    """Whether each of `count` lines written over lines `at` to `at + replaced` ends in CRLF:
    as the line it replaces (past the last, as the last), or, when none is, the line above."""
    if not replaced:
        return [crlf[at - 1] if at else crlf[0]] * count
    return [crlf[at + min(n, replaced - 1)] for n in range(count)]


def _lifted(lines: list[str], document: Document, edits: Sequence[Edit], expected: object) -> list[Edit]:
    """The edits, each one inside a flow collection (`{...}`, `[...]`) lifted to the nearest
    key on a block line above it, written whole with what the document holds there afterwards
    (a flow collection cannot take a key or an item in place); an edit inside another dropped."""
    out: dict[FieldPath, object] = {}
    for path, value in edits:
        for depth in range(1, len(path)):
            if _is_flow(lines, document, path[:depth]):
                keyed = next((d for d in range(depth, 0, -1) if isinstance(path[d - 1], str)
                              and _block_entry(lines, document, path[:d])), None)
                if keyed is not None:
                    path, value = path[:keyed], _at(expected, path[:keyed])
                break
        out[path] = value
    return [(path, value) for path, value in out.items()
            if not any(path[:len(other)] == other and path != other for other in out)]


def _is_flow(lines: list[str], document: Document, path: FieldPath) -> bool:
    """Whether the value at `path` is a flow collection on its line."""
    if path not in document.lines:
        return False
    line = lines[document.lines[path] - 1]
    if isinstance(path[-1], str):
        match = _ENTRY.match(line)
        return bool(match and match["key"].strip("'\"") == path[-1] and match["value"].startswith(("[", "{")))
    return re.sub(r"^\s*(?:-\s+)+", "", line).startswith(("[", "{"))  # a list item


def _block_entry(lines: list[str], document: Document, path: FieldPath) -> bool:
    match = _ENTRY.match(lines[document.lines[path] - 1]) if path in document.lines else None
    return bool(match and match["key"].strip("'\"") == path[-1])


def _at(data: object, path: FieldPath) -> object:
    for key in path:
        data = data[key]  # type: ignore[index]
    return data


def _change(lines: list[str], document: Document, path: FieldPath, value: object) -> tuple[int, int, list[str]] | str:
    if path in document.lines:
        at = document.lines[path] - 1
        match = _ENTRY.match(lines[at])
        if not match or not isinstance(path[-1], str):
            return "cannot be rewritten in place (not a `key: value` line): edit it by hand"
        if isinstance(value, str) and match["value"] and not match["value"].startswith(("[", "{", "|", ">")):
            new = _scalar(value, match["value"])  # a text value on its line, quoted as it was
            return at, 1, [lines[at][:match.start("value")] + new + (match["rest"] or "")]
        head = lines[at][:match.end("colon")]  # else the whole block replaced (or removed)
        end = _block_end(lines, at, len(match["lead"]), not match["value"])
        if value is REMOVED and "-" in match["lead"]:  # the first key of a list item: the next takes its dash
            return _first_key_removed(lines, at, end, match["lead"])
        new_lines = [] if value is REMOVED else entry_lines(head, value)
        if len(new_lines) > 1 and not match["value"]:
            new_lines[0] = lines[at]  # a block under a block: the key line stays as it is, comment and all
        elif new_lines and match["rest"]:  # the key line's comment stays with it
            new_lines[0] += match["rest"]
        return at, end - at, new_lines
    if value is REMOVED:
        return 0, 0, []  # not in the file: nothing to remove
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
    item = isinstance(parent[-1], int)  # `- key: value`: the mapping starts on the item's line
    if not opened or not first or (opened["value"] and not item):
        return f"cannot add {dotted(path[depth:])} in place (a flow mapping): edit it by hand"
    indent = len(first["lead"])
    step = 2 if item else max(indent - len(opened["lead"]), 2)
    if item:  # after the first key's block, at its column
        at = _block_end(lines, at, indent, not first["value"]) - 1
    added = [" " * (indent + step * n) + _key(str(key)) + ":" for n, key in enumerate(path[depth:-1])]
    head = " " * (indent + step * (len(path) - 1 - depth)) + _key(str(path[-1])) + ":"
    added += [head + " " + json.dumps(value)] if isinstance(value, str) else entry_lines(head, value)
    return at + 1, 0, added


def _first_key_removed(lines: list[str], at: int, end: int, lead: str) -> tuple[int, int, list[str]]:
    """The change that removes the entry at `at` (to `end`), the first of a list item's mapping:
    the item's next key moves up onto the dash (comments between come along before it); an
    item with no other key is left an empty mapping."""
    column = len(lead)
    following = next((index for index in range(end, len(lines))
                      if lines[index].strip() and not lines[index].strip().startswith("#")), len(lines))
    sibling = following < len(lines) and len(lines[following]) - len(lines[following].lstrip(" ")) == column \
        and not lines[following].strip().startswith("-")
    if not sibling:
        return at, end - at, [lead.rstrip() + " {}"]
    return at, following + 1 - at, [*lines[end:following], lead + lines[following][column:]]


def _block_end(lines: list[str], at: int, column: int, opens_block: bool) -> int:
    """The index after the last line of the entry whose key is at line `at`, column `column`:
    the lines indented past the key, and (`opens_block`: nothing after its colon) a list's
    items at the key's own column; comments and blank lines after the last of them are not
    the block's."""
    end = at + 1
    for index in range(at + 1, len(lines)):
        stripped = lines[index].strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(lines[index]) - len(lines[index].lstrip(" "))
        if indent > column or (opens_block and indent == column and (stripped == "-" or stripped.startswith("- "))):
            end = index + 1
            continue
        break
    return end


def _scalar(value: str, old: str) -> str:
    """`value` written as the old one was: plain where it reads back as itself, else quoted."""
    if old.startswith("'") and "'" not in value:
        return f"'{value}'"
    if not old.startswith(("'", '"')) and _PLAIN_SAFE.match(value) and plain_reads_as_string(value):
        return value
    return json.dumps(value)


def _key(key: str) -> str:
    return key if _PLAIN_SAFE.match(key) and plain_reads_as_string(key) else json.dumps(key)

