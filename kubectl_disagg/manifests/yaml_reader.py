"""YAML text → the JSON documents kubectl sends, each value with its line.

About 800 lines on purpose: it is go-yaml v2's composer and decoder and sigs.k8s.io/yaml's
conversion to JSON, step by step, plus the handful of places where LibYAML's events and go-yaml's
differ (each rewritten and tested); the scalar rules live in `resolver.py`. The alternatives cost
more: a parser of our own (the bulk of go-yaml) or calling kubectl (a process per file). Every
line is held to the Go code by the differential test named at the end of this docstring.

The one YAML reader. LibYAML (PyYAML's C parser) turns the text into events; go-yaml v2.4.3,
under sigs.k8s.io/yaml v1.6.0 in kubectl and the API server, is a port of that same parser.
From the events on, everything is go-yaml's and sigs.k8s.io/yaml's reading, done here:

- the stream is split into documents as kubectl splits a file (k8s.io/apimachinery's
  `YAMLReader`: a line that starts with `---`), and each document is one go-yaml document;
- nodes are composed as go-yaml's `parser` composes them (an anchor binds from where it is
  defined, redefining one is allowed, an alias refers to the node bound when it is read);
- values are decoded as go-yaml's `decoder` decodes into `interface{}` (`decode.go`): merge
  keys in the order they appear, tags on collections ignored, unknown scalar tags read as
  strings, `!!binary` decoded, its "excessive aliasing" limit;
- scalars are resolved by `resolver` (go-yaml's `resolve.go`), keys written as strings and
  numbers as JSON numbers as sigs.k8s.io/yaml's `convertToJSONableObject` and Go's
  encoding/json do; what they refuse (a null key, `.inf`) is refused.

Some refusals are ours, stricter than kubectl: a key given twice in one mapping (go-yaml keeps
the last, or for keys like `1` and `"1"` either one), a byte order mark inside a document
(go-yaml reads it as text), a document that starts with `[]` and goes on (`[]0: a`: go-yaml
reads `[]` and drops the rest), and documents nested deeper than MAX_DEPTH or expanding to more
than MAX_VALUES_PER_DOCUMENT values.
tests/unit/manifests/test_yaml_oracle.py holds all of it to the Go code itself.
"""

from __future__ import annotations

import binascii
import codecs
import dataclasses
import re
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import yaml

from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests import resolver
from kubectl_disagg.manifests.resolver import BINARY, BOOL, FLOAT, INT, MERGE, NULL, STR
from kubectl_disagg.manifests.source import MAX_DEPTH, MAX_VALUES_PER_DOCUMENT, FieldPath, JsonObject, dotted

try:
    from yaml._yaml import CParser as _Parser  # LibYAML
except ImportError:  # PyYAML built without LibYAML: its Python port of the same parser
    # one name bound to either class, which mypy cannot type as one: the two read alike
    from yaml import SafeLoader as _Parser  # type: ignore[assignment]

# LibYAML's events (yaml.events), as its parser hands them out. PyYAML's stubs make each one's
# marks, tag and value optional, which LibYAML always sets for the events read here: they are
# read as LibYAML gives them, not narrowed again at every use.
_Event = Any


class _Events(Protocol):
    """A parser's event stream (`_Parser`): what the composer reads."""

    def get_event(self) -> _Event: ...


# One document as read: its index in the stream, its data, the line of every value by path,
# and the aliases (path → the anchor's name, the alias's line, the anchor's line).
_Read = tuple[int, object, dict[FieldPath, int], dict[FieldPath, tuple[str, int, int]]]
# go-yaml's map[interface{}]interface{} of one mapping: its Go key → the key's JSON text, the
# value, the key's node
_Entries = dict[object, tuple[str, object, "_Node"]]
_T = TypeVar("_T")

_SCALAR, _MAPPING, _SEQUENCE, _ALIAS = range(4)
# A line that starts a new document for kubectl (apimachinery's YAMLReader).
_BOM = "\ufeff".encode()
_SEPARATOR = re.compile(rb"^---([^\n]*)(?:\n|\Z)", re.MULTILINE)
# A document whose first node is an empty flow sequence on the line of more text (`[]0: a`):
# go-yaml's parser has read `[]` before its scanner looks at the rest, and reads nothing more.
_EMPTY_LIST_FIRST = re.compile(rb"(?:(?:---)?[ \t]*(?:#[^\n]*)?\r?\n)*(?:---[ \t]+)?[ \t]*\[[ \t]*\]")
_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"  # strings.TrimSpace's


class _Node:
    """A node of go-yaml's tree; `plain`: a plain scalar, or a flow collection."""

    __slots__ = ("kind", "line", "tag", "value", "plain", "anchor")

    # `value` by kind: a scalar's text, a collection's child nodes, an alias's target node
    def __init__(self, kind: int, line: int, tag: str, value: Any, plain: bool = False, anchor: str | None = None):
        self.kind, self.line, self.tag, self.value, self.plain, self.anchor = kind, line, tag, value, plain, anchor


class _Refused(Exception):
    """A problem that ends the reading of one document, as a failf ends go-yaml's."""

    def __init__(self, line: int, path: FieldPath, message: str):
        super().__init__(message)
        self.line, self.path, self.message = line, path, message


# -- the stream -----------------------------------------------------------------------------

def split(data: bytes) -> tuple[list[tuple[int, bytes]], list[tuple[int, str]]]:
    """The documents of a stream as kubectl cuts it: (first line, text) of each, and the
    separators it refuses, (line, what follows `---`). A line that starts with `---` ends the
    document before it, or when there is none, stays the first line of the next; anything
    after the dashes but spaces or a comment is refused. Each
    document ends with a line break, as apimachinery's LineReader ends every line."""
    pieces: list[tuple[int, bytes]] = []
    refused: list[tuple[int, str]] = []
    start, start_line = 0, 1
    for match in _SEPARATOR.finditer(data):
        here = start_line + data.count(b"\n", start, match.start())
        rest = match.group(1).decode("utf-8", "replace").strip(_GO_SPACE)
        if rest and not rest.startswith("#"):
            refused.append((here, rest))
        if match.start() == start:
            continue  # nothing before it: the line opens the next document, as YAMLReader keeps it
        pieces.append((start_line, data[start:match.start()]))
        start, start_line = match.end(), here + 1
    pieces.append((start_line, data[start:]))
    return [(line, text if not text or text.endswith(b"\n") else text + b"\n") for line, text in pieces], refused


def read(data: bytes, file: str, split_documents: bool = True,
         json_stream: bool = True) -> tuple[list[_Read], list[Problem]]:
    """`(index, data, lines, aliases)` of every document that is not empty or null, and every
    problem (`_Decoder` says what lines and aliases hold). With `split_documents` off, the text
    is one document (a kubeconfig, as client-go reads it)."""
    if split_documents and json_stream and _looks_like_json(data):
        read_as_json = _json_stream(data, file)
        if read_as_json is not None:
            return read_as_json
    if split_documents:
        pieces, refused = split(data)
        if refused:
            return [], [Problem(file, line, "", f"invalid YAML: invalid document separator: {rest}")
                        for line, rest in refused]
    else:
        pieces = [(1, data)]
    documents: list[_Read] = []
    problems: list[Problem] = []
    for index, (first_line, text) in enumerate(pieces):
        bom = text.find(_BOM, 1)
        if bom > 0:
            # go-yaml reads a byte order mark after the first character as text (`\ufeffkind`),
            # LibYAML skips it at the start of a line or refuses it: refused here (ours).
            problems.append(Problem(file, first_line + text.count(b"\n", 0, bom), "",
                                    "a byte order mark (U+FEFF) inside the text: kubectl would read it as part "
                                    "of a key or value"))
            continue
        try:
            root = _compose(text)
        except _Refused as err:
            message = err.message
            if _EMPTY_LIST_FIRST.match(text):
                message = ("a document that starts with an empty list `[]` followed by more text: kubectl "
                           "would read it as `[]` and ignore the rest")
            problems.append(Problem(file, first_line + err.line, "", message))
            continue
        if root is None:
            continue
        decoder = _Decoder(file, first_line)
        try:
            value = decoder.value(root, (), 0)
        except _Refused as err:
            problems.append(Problem(file, first_line + err.line, dotted(err.path), err.message))
            continue
        if decoder.problems:
            problems.extend(decoder.problems)
        elif value is not None:
            documents.append((index, value, decoder.lines, decoder.aliases))
    return documents, problems


# -- JSON streams, as kubectl reads a file that starts with `{` --------------------------------

def _looks_like_json(data: bytes) -> bool:
    """apimachinery's IsJSONBuffer on the first 4096 bytes: the first non-space is `{`."""
    head = data[:4096].decode("utf-8", "ignore").lstrip(_GO_SPACE)
    return head.startswith("{")


class _BadNumber(ValueError):
    pass


def _json_int(text: str) -> int | float:
    digits = text.lstrip("-")
    if len(digits) <= 19 and -(2**63) <= int(text) <= 2**63 - 1:
        return int(text)
    return _json_float(text)  # beyond int64 the API server holds a float64


def _json_float(text: str) -> int | float:
    try:
        return resolver.json_number(float(text))
    except ValueError:
        raise _BadNumber(text) from None


def _json_constant(text: str) -> object:
    raise _BadNumber(text)


def _json_object(pairs: list[tuple[str, object]]) -> JsonObject:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _BadNumber(f"duplicate key {key!r}")
            seen.add(key)
    return result


def _json_stream(data: bytes, file: str) -> tuple[list[_Read], list[Problem]] | None:
    """A stream read as apimachinery's YAMLOrJSONDecoder reads one that looks like JSON:
    JSON values one after another; when the first fails, the whole stream is YAML (None), and
    when the second fails, the rest after the first is YAML. Values as the API server decodes
    them (integers beyond int64 as floats); lines from the YAML reading of each value."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    import json

    decoder = json.JSONDecoder(parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant,
                               object_pairs_hook=_json_object)
    documents: list[_Read] = []
    count = 0
    at = end = 0
    while True:
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        if at == len(text):
            return documents, []
        line = text.count("\n", 0, at) + 1
        try:
            value, end = decoder.raw_decode(text, at)
        except _BadNumber as err:
            message = str(err)
            return [], [Problem(file, line, "", message if message.startswith("duplicate key")
                                else f"json: number {message} is out of range")]
        except (ValueError, RecursionError):
            if count > 1:
                return [], [Problem(file, line, "", "invalid JSON: cannot read the document that starts here")]
            if count == 0:
                return None
            return _yaml_after_json(text, end, documents, file)
        count += 1
        if value is not None and re.search(r"\\u[dD][89a-fA-F]", text[at:end]):
            value = _without_lone_surrogates(value)
        if value is not None:
            parsed, _ = read(text[at:end].encode("utf-8"), file, split_documents=False)
            lines: dict[FieldPath, int] = ({path: number + line - 1 for path, number in parsed[0][2].items()}
                                           if parsed else {(): line})
            documents.append((count - 1, value, lines, {}))
        at = end


def _without_lone_surrogates(value: object) -> object:
    """Go's JSON decoder reads an unpaired `\\ud800` as U+FFFD; Python's keeps it."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    return value


def _yaml_after_json(text: str, end: int, documents: list[_Read], file: str) -> tuple[list[_Read], list[Problem]]:
    """After one JSON value, the rest as YAML: from past the spaces and the first line break
    after it (YAMLOrJSONDecoder's consumeWhitespace)."""
    at = end
    while at < len(text) and text[at].isspace():
        at += 1
        if text[at - 1] == "\n":
            break
    shift = text.count("\n", 0, at)
    more, problems = read(text[at:].encode("utf-8"), file, json_stream=False)
    if problems:
        return [], [dataclasses.replace(problem, line=problem.line + shift if problem.line else 0) for problem in problems]
    return documents + [(index + 1, value, {path: number + shift for path, number in lines.items()},
                         {path: (name, used + shift, anchor + shift) for path, (name, used, anchor) in aliases.items()})
                        for index, value, lines, aliases in more], []


def undecodable(data: bytes, codec: str = "utf-8") -> tuple[int, bytes] | None:
    """Where `data` stops being `codec`: the 0-based line of the first bytes that are not, and
    those bytes; None when it all is."""
    try:
        data.decode(codec)
    except UnicodeDecodeError as err:
        return data[:err.start].decode(codec, "replace").count("\n"), data[err.start:err.end]
    return None


def not_of_encoding(bad: bytes, encoding: str) -> str:
    """Why bytes that are not of the file's encoding are refused (a Latin-1 `é` in a UTF-8 file)."""
    other = ", nor UTF-16 with a byte order mark" if encoding == "UTF-8" else ""
    return (f"not {encoding} (byte {' '.join(f'0x{byte:02X}' for byte in bad)}){other}: kubectl would read this "
            f"byte as U+FFFD; save the file as {encoding}")


# -- events → nodes, as go-yaml's parser composes them ----------------------------------------

def _compose(text: bytes) -> _Node | None:
    """The first document of `text` as a node tree, or None when there is none. Lines are
    0-based within the text; parse errors are raised as _Refused.

    LibYAML and go-yaml's port of it differ in three places; where LibYAML stops, or reads on,
    the text is rewritten so that it reads as go-yaml reads it, and parsed again. The escapes of
    double-quoted scalars: go-yaml knows `\\'` and not `\\/`, LibYAML the other way round; so a
    `\\'` that LibYAML refuses is given to it as `\\x27`, and a `\\/` it reads is refused here.
    In a flow collection go-yaml reads `[7:]` as "7:" where LibYAML refuses a `:` before `,[]{}`;
    so such a plain scalar is given to LibYAML double-quoted (a plain scalar that ends with `:`
    is a string to go-yaml either way), and a `?` inside a plain scalar there, which ends it for
    go-yaml (and so is an error), is refused. And go-yaml takes `,[]` into a tag (`!a,b`, `!!,`),
    LibYAML not: it refuses the text there, or, in a flow collection, ends the tag at a `,`
    (`[!a,b]` is two items to LibYAML, a tag `!a,b]` in a sequence never closed to go-yaml).
    Either way the rest of go-yaml's tag is given to LibYAML with `%2C`, `%5B`, `%5D`."""
    in_tag = False  # whether a `,[]` was taken into a tag, for the message
    for _ in range(_MAX_REWRITES):
        parser = None
        try:
            parser = _Parser(_GoChunks(text))
            return _compose_events(parser, text)
        except _Rewrite as rewrite:
            text, in_tag = rewrite.text, True
        except yaml.MarkedYAMLError as err:
            mark = err.problem_mark or err.context_mark
            rewritten = _rewritten(text, err)
            if rewritten is not None:
                text, in_tag = rewritten, in_tag or err.context in _TAG_CONTEXTS
                continue
            rewritten = _tag_before_comma_ahead(text, err)
            if rewritten is not None:
                text, in_tag = rewritten, True
                continue
            message = " ".join(filter(None, [err.context, err.problem]))
            if in_tag:
                message += " (kubectl reads a `,`, `[` or `]` right after a tag as part of the tag)"
            raise _Refused(mark.line if mark else 0, (), f"invalid YAML: {message}") from None
        except yaml.reader.ReaderError as err:
            bad = undecodable(text) if "UTF-8" in str(err.reason) else None
            if bad is not None:
                raise _Refused(bad[0], (), not_of_encoding(bad[1], "UTF-8")) from None
            position = err.position if isinstance(err.position, int) else 0
            character = err.character if isinstance(err.character, int) else ord(err.character or "?")
            raise _Refused(text[:position].count(b"\n"), (),
                           f"invalid YAML: unacceptable character #x{character:04x}: "
                           "control characters are not allowed") from None
        except yaml.YAMLError as err:
            raise _Refused(0, (), "invalid YAML: " + " ".join(str(err).split())) from None
        except UnicodeDecodeError as err:
            raise _Refused(0, (), f"cannot read input: {err}") from None
        except (ValueError, OverflowError, RecursionError) as err:  # PyYAML's Python parser, on odd escapes
            raise _Refused(0, (), f"invalid YAML: {err}") from None
        finally:
            _dispose(parser)
    raise _Refused(0, (), f"invalid YAML: more than {_MAX_REWRITES} escaped apostrophes, `:` before `,[]{{}}` in flow "
                          "collections and `,[]` in tags in one document: too many to read")


_MAX_REWRITES = 100  # beyond that many rewrites of one document, refused (ours)


class _Rewrite(Exception):
    """The text rewritten where LibYAML read on past a place go-yaml reads otherwise."""

    def __init__(self, text: bytes):
        super().__init__()
        self.text = text


class _GoChunks:
    """The text as go-yaml's reader takes it in: 512 bytes at a time (less what it kept of a
    character cut in two). Both readers check every character of what they take in, and stop
    once the first document has ended: so a bad character after it counts for both, or for
    neither, only if LibYAML takes in text as go-yaml does (by itself it takes 16 KiB)."""

    name = "<go-yaml chunks>"

    def __init__(self, data: bytes):
        self.data = data
        self.at = 0
        self.kept = 0  # bytes of a character cut in two at the end of the last chunk

    def read(self, size: int = 512) -> bytes:
        count = min(size, 512 - self.kept)
        chunk = self.data[self.at:self.at + count]
        self.at += len(chunk)
        self.kept = _cut_character(self.data, self.at)
        return chunk


def _cut_character(data: bytes, end: int) -> int:
    """How many bytes before `end` begin a UTF-8 character that `end` cuts."""
    for back in range(1, 4):
        if end - back < 0:
            return 0
        byte = data[end - back]
        if byte < 0x80:
            return 0
        if byte >= 0xC0:
            length = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return back if length > back else 0
    return 0


def _characters(text: bytes) -> tuple[str, int] | None:
    """The text as characters, and what to add to the index of a LibYAML mark to find its
    character there (LibYAML does not count a byte order mark at the start); None when the
    text is not UTF-8."""
    try:
        chars = text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return chars, int(chars.startswith("\ufeff"))


def _rewritten(text: bytes, err: yaml.MarkedYAMLError) -> bytes | None:
    """`text` rewritten where LibYAML refused it and go-yaml reads on, or None."""
    mark = err.problem_mark or err.context_mark
    decoded = _characters(text)
    if mark is None or decoded is None:
        return None
    chars, shift = decoded
    rewritten = None
    if (err.problem or "").startswith("found unknown escape character"):
        rewritten = _apostrophe_escape(chars, mark.index + shift)
    elif err.problem == "found unexpected ':'" and err.context_mark is not None:
        rewritten = _flow_colon(chars, err.context_mark.index + shift, mark.index + shift)
    elif err.context in _TAG_CONTEXTS:
        rewritten = _tag_rest(chars, mark.index + shift)
    return None if rewritten is None else rewritten.encode("utf-8")


def _apostrophe_escape(chars: str, index: int) -> str | None:
    """`chars` with the `\\'` that LibYAML stopped at (character `index`) written `\\x27`."""
    for at in (index, index - 1):
        if chars[at:at + 2] == "\\'":
            return chars[:at] + "\\x27" + chars[at + 2:]
    return None


def _flow_colon(chars: str, start: int, colon: int) -> str | None:
    """`chars` with the one-line plain scalar from character `start` to the `:` at `colon`
    double-quoted."""
    scalar = chars[start:colon + 1]
    if not scalar or "\n" in scalar or "\r" in scalar or scalar[-1] != ":":
        return None
    quoted = '"' + scalar.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return chars[:start] + quoted + chars[colon + 1:]


# What go-yaml's scanner takes into a tag (yaml_parser_scan_tag_uri): LibYAML's characters and `,[]`.
_GO_TAG_CHARACTERS = re.compile(r"[0-9A-Za-z_\-;/?:@&=+$,.!~*'()\[\]%]*")
_URI_ESCAPES = {",": "%2C", "[": "%5B", "]": "%5D"}
_TAG_CONTEXTS = ("while scanning a tag", "while parsing a tag")  # LibYAML's errors in a tag


def _tag_rest(chars: str, index: int) -> str | None:
    """`chars` with what go-yaml takes into a tag from character `index` on, where LibYAML
    ended the tag at a `,`, `[` or `]`, written with those escaped."""
    if chars[index:index + 1] not in _URI_ESCAPES:
        return None
    match = _GO_TAG_CHARACTERS.match(chars, index)
    end = match.end() if match else index  # its `*` always matches, if only ""
    rest = "".join(_URI_ESCAPES.get(char, char) for char in chars[index:end])
    return chars[:index] + rest + chars[end:]


_PROPERTY_GAP = re.compile("[ \t\r\n\x85\u2028\u2029]")


def _tag_before_comma(text: bytes, event: _Event) -> bytes | None:
    """`text` rewritten when the empty scalar `event` (in a flow collection) ends with a tag
    that a `,` follows directly: LibYAML ends the tag there, go-yaml reads on."""
    decoded = _characters(text)
    if decoded is None:
        return None
    chars, shift = decoded
    start, end = event.start_mark.index + shift, event.end_mark.index + shift
    if chars[end:end + 1] != "," or not _PROPERTY_GAP.split(chars[start:end])[-1].startswith("!"):
        return None
    rewritten = _tag_rest(chars, end)
    return None if rewritten is None else rewritten.encode("utf-8")


def _tag_before_comma_ahead(text: bytes, err: yaml.MarkedYAMLError) -> bytes | None:
    """`text` rewritten at a tag followed by `,` before what LibYAML refused (`err`), when it
    refused it while scanning on ahead of the tag's event (to see whether a flow collection is
    a key): the events of the text up to there show that tag."""
    marks = [mark.index for mark in (err.context_mark, err.problem_mark) if mark is not None]
    decoded = _characters(text)
    if not marks or decoded is None:
        return None
    chars, shift = decoded
    before = chars[:min(marks) + shift].encode("utf-8")
    parser = None
    try:
        parser = _Parser(before)
        _compose_events(parser, before)
    except _Rewrite as rewrite:
        return rewrite.text + text[len(before):]
    except (yaml.YAMLError, _Refused, ValueError, OverflowError, RecursionError):
        pass  # the text up to `mark` holds no such tag
    finally:
        _dispose(parser)
    return None


def _dispose(parser: object) -> None:
    dispose = getattr(parser, "dispose", None)
    if dispose is not None:
        dispose()


def _slash_escape(text: bytes, event: _Event) -> bool:
    """Whether the double-quoted scalar of `event` writes `\\/`, which go-yaml refuses."""
    decoded = _characters(text)
    if decoded is None:
        return False
    chars, shift = decoded
    raw = chars[event.start_mark.index + shift:event.end_mark.index + shift]
    return re.search(r"(?<!\\)(?:\\\\)*\\/", raw) is not None


def _compose_events(parser: _Events, text: bytes) -> _Node | None:
    parser.get_event()  # stream start
    event = parser.get_event()
    if isinstance(event, yaml.StreamEndEvent):
        return None
    anchors: dict[str, _Node] = {}
    open_nodes: list[_Node] = []
    flow = 0  # how many of the open collections are flow collections
    while True:
        event = parser.get_event()
        kind = type(event)
        line = event.start_mark.line
        if kind is yaml.ScalarEvent:
            tag = event.tag
            plain = event.implicit[0]
            if tag is None:
                tag = "" if plain else STR
            if flow and tag and not event.value and not event.style:
                rewritten = _tag_before_comma(text, event)
                if rewritten is not None:
                    raise _Rewrite(rewritten)
            if event.style == '"' and "/" in event.value and _slash_escape(text, event):
                raise _Refused(line, (), "invalid YAML: while parsing a quoted scalar found unknown escape character")
            if flow and not event.style and "?" in event.value:
                raise _Refused(line, (), "invalid YAML: did not find expected ',' or the end of the flow collection "
                                         "(a `?` ends a plain scalar there)")
            node = _Node(_SCALAR, line, tag, event.value, plain)
        elif kind is yaml.AliasEvent:
            target = anchors.get(event.anchor)
            if target is None:
                raise _Refused(line, (), f"unknown anchor '{event.anchor}' referenced")
            node = _Node(_ALIAS, line, "", target, anchor=event.anchor)
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            node = _Node(_MAPPING if kind is yaml.MappingStartEvent else _SEQUENCE, line, "", [], event.flow_style)
            if event.anchor is not None:
                anchors[event.anchor] = node
            open_nodes.append(node)
            flow += bool(event.flow_style)
            continue
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            node = open_nodes.pop()
            flow -= bool(node.plain)
        else:
            raise _Refused(line, (), f"invalid YAML: unexpected {kind.__name__}")
        if kind is yaml.ScalarEvent and event.anchor is not None:
            anchors[event.anchor] = node
        if open_nodes:
            open_nodes[-1].value.append(node)
        else:
            parser.get_event()  # the document's end, which go-yaml reads too
            return node


# -- nodes → JSON values, as go-yaml decodes and sigs.k8s.io/yaml converts --------------------

def _allowed_alias_ratio(count: int) -> float:
    """decode.go's allowedAliasRatio."""
    if count <= 400_000:
        return 0.99
    if count >= 4_000_000:
        return 0.10
    return 0.99 - 0.89 * ((count - 400_000) / 3_600_000)


def _go_replace(error: UnicodeError) -> tuple[str, int]:
    """Go's encoding/json writes each byte of invalid UTF-8 as one U+FFFD (a decoding's handler)."""
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd", error.start + 1


codecs.register_error("kubectl_disagg.go_replace", _go_replace)


class _Decoder:
    """One document's nodes as values, with `lines`, the line of every value by path, and
    `aliases`: where a value comes through an alias (`*name`, or a merge `<<: *name`), the path
    of the outermost one → (the anchor's name, the alias's line, the anchor's line). A value
    under an alias is the anchor's text: a file edit there changes every place that refers to it."""

    def __init__(self, file: str, first_line: int):
        self.file = file
        self.first_line = first_line
        self.lines: dict[FieldPath, int] = {}
        self.aliases: dict[FieldPath, tuple[str, int, int]] = {}
        self.merging: tuple[FieldPath, tuple[str, int, int]] | None = None  # a mapping taking an alias's keys
        self.problems: list[Problem] = []
        self.decodes = 0
        self.aliased = 0
        self.alias_depth = 0
        self.expanding: set[int] = set()
        self.values = 0
        self.reported: set[int] = set()

    def _problem(self, node: _Node, path: FieldPath, message: str) -> None:
        if id(node) in self.reported:
            return  # once, however many aliases expand the node
        self.reported.add(id(node))
        self.problems.append(Problem(self.file, self.first_line + node.line, dotted(path), message))

    def _count(self, node: _Node, path: FieldPath, depth: int) -> None:
        """decode.go's unmarshal: the aliasing limit, checked at every node; and ours."""
        self.decodes += 1
        if self.alias_depth:
            self.aliased += 1
        if (self.aliased > 100 and self.decodes > 1000
                and self.aliased / self.decodes > _allowed_alias_ratio(self.decodes)):
            raise _Refused(node.line, path, "document contains excessive aliasing (a YAML alias bomb?)")
        if depth > MAX_DEPTH:
            raise _Refused(node.line, path, f"nested more than {MAX_DEPTH} levels deep")
        self.values += 1
        if self.values > MAX_VALUES_PER_DOCUMENT:
            raise _Refused(node.line, path, f"document expands to more than {MAX_VALUES_PER_DOCUMENT:,} values "
                                            "(a YAML alias bomb?)")

    def value(self, node: _Node, path: FieldPath, depth: int) -> object:
        self._count(node, path, depth)
        if path not in self.lines:
            self.lines[path] = self.first_line + node.line
        kind = node.kind
        if kind == _SCALAR:
            return self._scalar(node, path)
        if kind == _ALIAS:
            if not self.alias_depth:
                self.aliases.setdefault(path, self._alias_of(node))
            return self._alias(node, path, depth, lambda target: self.value(target, path, depth))
        if kind == _SEQUENCE:
            return [self.value(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
        entries: _Entries = {}
        self._mapping(node, path, depth, entries)
        return self._json_object(entries, path)

    def _alias_of(self, node: _Node) -> tuple[str, int, int]:
        return node.anchor or "", self.first_line + node.line, self.first_line + node.value.line

    def _alias(self, node: _Node, path: FieldPath, depth: int, then: Callable[[_Node], _T]) -> _T:
        if id(node) in self.expanding:
            raise _Refused(node.line, path, f"anchor '{node.anchor}' value contains itself")
        self.expanding.add(id(node))
        self.alias_depth += 1
        try:
            return then(node.value)
        finally:
            self.alias_depth -= 1
            self.expanding.discard(id(node))

    # scalars
    def _resolve(self, node: _Node, path: FieldPath) -> tuple[str, resolver.Scalar]:
        try:
            tag, value = resolver.resolve(node.tag, node.value)
        except resolver.CannotDecode as err:
            self._problem(node, path, str(err))
            return STR, node.value
        if tag == BINARY:
            assert isinstance(value, str)  # a tag resolve does not know: the text as it is
            try:
                raw = binascii.a2b_base64(value.replace("\n", "").replace("\r", "").encode("ascii"),
                                          strict_mode=True)
            except (binascii.Error, UnicodeEncodeError):
                self._problem(node, path, "!!binary value contains invalid base64 data")
                return STR, value
            return STR, raw.decode("utf-8", "kubectl_disagg.go_replace")
        return tag, value

    def _scalar(self, node: _Node, path: FieldPath) -> object:
        tag, value = self._resolve(node, path)
        if tag == FLOAT or tag == INT:
            assert isinstance(value, (int, float))  # resolved: a number
            try:
                return resolver.json_number(value)
            except ValueError as err:
                self._problem(node, path, f"{node.value} is not a number JSON can hold ({err})")
                return None
        return value  # null, a boolean, or a string (timestamps and unknown tags: the text)

    # mappings: `entries` is go-yaml's map[interface{}]interface{}, keyed by Go value
    def _mapping(self, node: _Node, path: FieldPath, depth: int, entries: _Entries) -> None:
        explicit: dict[object, int] = {}
        children = node.value
        for at in range(0, len(children), 2):
            key_node, value_node = children[at], children[at + 1]
            if key_node.kind == _SCALAR and key_node.value == "<<" and (key_node.plain or key_node.tag == MERGE):
                self._merge(value_node, path, depth, entries)
                continue
            go_key, text = self._key(key_node, path, depth)
            if go_key is None:
                self.value(value_node, path + ("<key>",), depth + 1)  # go-yaml decodes it all the same
                continue
            if go_key in explicit:
                self._problem(key_node, path + (text,),
                              f"duplicate key {text!r} (first at line {explicit[go_key]})")
            explicit[go_key] = self.first_line + key_node.line
            self.lines[path + (text,)] = self.first_line + key_node.line
            if self.merging is not None and self.merging[0] == path:
                self.aliases[path + (text,)] = self.merging[1]  # a key merged from an alias
            elif not self.alias_depth:
                self.aliases.pop(path + (text,), None)  # given here, after a merge: its own
            entries[go_key] = (text, self.value(value_node, path + (text,), depth + 1), key_node)

    def _key(self, node: _Node, path: FieldPath, depth: int) -> tuple[object, str]:
        """go-yaml's key as a Go value (hashable, NaN unequal to itself) and its JSON text."""
        self._count(node, path, depth + 1)
        target = node
        if node.kind == _ALIAS:  # an anchor is never on an alias: one step reaches the node
            target = node.value
            self.alias_depth += 1
            self._count(target, path, depth + 1)
            self.alias_depth -= 1
        if target.kind != _SCALAR:
            raise _Refused(node.line, path, "invalid map key: mapping keys must be scalars")
        tag, value = self._resolve(target, path)
        if tag not in (NULL, BOOL, INT, FLOAT):
            assert isinstance(value, str)
            return ("s", value), value  # a string, a timestamp's text, an unknown tag's text
        try:
            text = resolver.key_string(tag, value)
        except ValueError as err:
            self._problem(node, path, f"{err}: kubectl refuses this key")
            return None, ""
        return ((tag, object()) if value != value else (tag, value)), text  # NaN keys are all distinct

    def _merge(self, node: _Node, path: FieldPath, depth: int, entries: _Entries) -> None:
        """decode.go's merge: a mapping, an alias of one, or a list of those, later ones first."""
        def is_mapping(item: _Node) -> bool:
            return item.kind == _MAPPING or (item.kind == _ALIAS and item.value.kind == _MAPPING)

        if node.kind == _SEQUENCE:
            sources = node.value[::-1]
            for source in sources:
                if not is_mapping(source):
                    raise _Refused(source.line, path, "map merge requires map or sequence of maps as the value")
                self._merge_one(source, path, depth, entries)
        elif is_mapping(node):
            self._merge_one(node, path, depth, entries)
        else:
            raise _Refused(node.line, path, "map merge requires map or sequence of maps as the value")

    def _merge_one(self, node: _Node, path: FieldPath, depth: int, entries: _Entries) -> None:
        self._count(node, path, depth)
        if node.kind == _ALIAS:
            outer = self.merging
            if not self.alias_depth:
                self.merging = (path, self._alias_of(node))
            try:
                self._alias(node, path, depth, lambda target: self._merge_target(target, path, depth, entries))
            finally:
                self.merging = outer
        else:
            self._mapping(node, path, depth, entries)

    def _merge_target(self, target: _Node, path: FieldPath, depth: int, entries: _Entries) -> None:
        self._count(target, path, depth)
        self._mapping(target, path, depth, entries)

    def _json_object(self, entries: _Entries, path: FieldPath) -> JsonObject:
        """convertToJSONableObject: every key as a string; two Go keys with one string (`1` and
        "1") leave kubectl's choice to chance, so they are refused."""
        result: JsonObject = {}
        owners: dict[str, _Node] = {}
        for _go_key, (text, value, key_node) in entries.items():
            if text in owners:
                first = owners[text]
                self._problem(key_node, path + (text,),
                              f"keys {first.value!r} (line {self.first_line + first.line}) and {key_node.value!r} "
                              f"both read as {text!r}")
                continue
            owners[text] = key_node
            result[text] = value
        return result
