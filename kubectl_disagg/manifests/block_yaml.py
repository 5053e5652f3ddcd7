"""Block-style YAML, the kind kubectl, Helm, kustomize and this tool write, read without PyYAML.

Importing PyYAML costs a command about 25 ms (it compiles a dozen regular expressions at
import), more than all the work of `rollout status` on a small set. Most manifests and
kubeconfigs use a small part of YAML: block mappings and sequences, plain and one-line quoted
scalars, one-line lists of scalars (`args: ["--port", "8000"]`), literal and folded blocks,
comments. `read` handles exactly that part and answers None for anything else (other flow
collections, anchors, tags, multi-line plain or quoted scalars, floats, timestamps, tabs,
carriage returns, any error), and the caller then reads the text with PyYAML, which also
reports the errors. So within its part it must give
what the PyYAML reader gives, value for value and line for line; the tests hold it to that
on generated and mutated documents.

`implicit_type` is YAML 1.1's resolution of a plain scalar (what PyYAML and go-yaml v2 apply),
shared with the writer in `output.py`, which quotes every string a reader could take for
something else.
"""

from __future__ import annotations

import re

# Plain scalars, by first character, that YAML 1.1 may read as something other than a string.
_BOOLS = {word: value for words, value in (("yes Yes YES true True TRUE on On ON", True),
                                            ("no No NO false False FALSE off Off OFF", False))
          for word in words.split()}
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_NUMERIC_START = frozenset("-+0123456789.")


# YAML 1.1's float, int and timestamp forms, in the order a reader tries them. Compiled on
# first use (re caches them): most plain scalars start with a letter and never need them.
_DIGITS = "[0-9][0-9_]*"
_SIXTY = "(?::[0-5]?[0-9])+"
_NUMERIC_FORMS = (
    ("float", rf"[-+]?{_DIGITS}\.[0-9_]*(?:[eE][-+][0-9]+)?"
              r"|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
              rf"|[-+]?{_DIGITS}{_SIXTY}\.[0-9_]*"
              r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"),
    ("int", r"[-+]?0b[01_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
            rf"|[-+]?[1-9][0-9_]*{_SIXTY}"),
    # A date alone has two-digit month and day; with a time, one digit will do.
    ("timestamp", r"[0-9]{4}-[0-9][0-9]-[0-9][0-9]"
                  r"|[0-9]{4}-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?"
                  r"(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?"),
)


def implicit_type(value: str) -> str:
    """What a YAML 1.1 reader makes of `value` written as a plain scalar: "str", "null",
    "bool", "int", "float", "timestamp", "merge" (`<<`) or "value" (`=`)."""
    if value in _NULLS:
        return "null"
    if value in _BOOLS:
        return "bool"
    first = value[0]
    if first in _NUMERIC_START:
        for name, pattern in _NUMERIC_FORMS:
            # A reader tries a form only where its first character can start it.
            if (name != "timestamp" or first.isdigit()) and (name == "float" or first != ".") \
                    and re.fullmatch(pattern, value):
                return name
    elif value == "<<":
        return "merge"
    elif value == "=":
        return "value"
    return "str"


class _Outside(Exception):
    """The text uses YAML beyond what this reader handles (or is not valid YAML)."""


# Text: printable characters and line feeds; no tabs, carriage returns, control characters,
# byte order marks, or the line breaks YAML 1.1 adds to Unicode (U+0085, U+2028, U+2029).
_UNHANDLED_ASCII = re.compile(r"[^\n\x20-\x7e]")
# Compiled on first use (re caches it): its ranges cost milliseconds, and most manifests are ASCII.
_UNHANDLED_UNICODE = "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
# Characters that cannot start a plain scalar here (indicators, or reserved).
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_ESCAPES = {"\\": "\\", '"': '"', "/": "/", "n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b",
            "f": "\f", "a": "\a", "v": "\v", "e": "\x1b", " ": " "}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
# Below the loader's limits (100 levels, 1,000,000 values), so that a document near them goes to
# PyYAML's reader, which reports the ones beyond.
MAX_DEPTH = 90
MAX_VALUES = 400_000
MAX_KEY_LENGTH = 1024  # characters from a key's start (quotes included) to its `:`


def read(text: str | bytes) -> tuple[list[tuple[int, object, dict]], int] | None:
    """The documents of a YAML stream, or None when it is outside this reader's part of YAML.

    Gives `(documents, count)`: `documents` holds `(index, data, lines)` for every document
    that is not empty, `lines` mapping each field path to its 1-based line as the PyYAML-based
    loader records it; `count` is the number of documents, empty ones included.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if (_UNHANDLED_ASCII.search(text) if text.isascii() else re.search(_UNHANDLED_UNICODE, text)):
        return None
    try:
        return _Reader(text.split("\n")).stream()
    except (_Outside, RecursionError):
        return None


class _Reader:
    """A line-by-line reader. `indent`, `text` and `number` describe the current line, the
    first one not yet read that holds content; after `- ` the rest of a line is read as a line
    of its own, further right."""

    def __init__(self, raw: list[str]):
        self.raw = raw
        self.at = -1  # index in `raw` of the current line
        self.indent = 0
        self.text = ""
        self.number = 0
        self.lines: dict = {}
        self.values = 0
        self._next(0)

    # -- moving through lines --------------------------------------------------------------
    def _next(self, start: int) -> None:
        """Make the first line from `start` that holds content the current line."""
        for at in range(start, len(self.raw)):
            line = self.raw[at].rstrip(" ")
            content = line.lstrip(" ")
            if content and not content.startswith("#"):
                self.at, self.number = at, at + 1
                self.indent, self.text = len(line) - len(content), content
                return
        self.at, self.number, self.indent, self.text = len(self.raw), 0, -1, ""

    def _advance(self) -> None:
        self._next(self.at + 1)

    @property
    def _done(self) -> bool:
        """At the end of the stream, or of the document (a `---` line)."""
        return self.indent < 0 or (self.indent == 0 and self._marker())

    def _marker(self) -> bool:
        text = self.text
        if text.startswith(("---", "...", "%")):
            if text == "---" or text.startswith("--- #"):
                return True
            raise _Outside  # `...`, directives, `--- value`, or a scalar that starts like a marker
        return False

    # -- the stream ------------------------------------------------------------------------
    def stream(self) -> tuple[list[tuple[int, object, dict]], int]:
        documents: list[tuple[int, object, dict]] = []
        count = 0
        explicit = self.indent == 0 and self._marker()  # the stream opens with `---`
        while True:
            if explicit:
                self._advance()
            if self.indent < 0 and not explicit:
                return documents, count  # nothing after the last document
            if self._done:
                count += 1  # an empty document: counted, as the loader counts it, and skipped
            else:
                if self.indent != 0:
                    raise _Outside  # a document's root starts in the first column here
                self.lines = {(): self.number}
                self.values = 0
                data = self._node(0, (), 0)
                if not self._done:
                    raise _Outside
                documents.append((count, data, self.lines))
                count += 1
            if self.indent < 0:
                return documents, count
            explicit = True

    # -- collections -----------------------------------------------------------------------
    def _node(self, indent: int, path: tuple, depth: int) -> object:
        if depth > MAX_DEPTH:
            raise _Outside
        if _is_item(self.text):
            return self._sequence(indent, path, depth)
        return self._mapping(indent, path, depth)

    def _mapping(self, indent: int, path: tuple, depth: int) -> dict:
        result: dict = {}
        while True:
            key, rest = _split_key(self.text)
            if key in result:
                raise _Outside  # the loader reports duplicate keys
            key_path = path + (key,)
            self.lines[key_path] = self.number
            self._count(2)
            result[key] = self._value(indent, rest, key_path, depth + 1)
            if self._done or self.indent < indent:
                return result
            if self.indent > indent:
                raise _Outside

    def _value(self, indent: int, rest: str, path: tuple, depth: int) -> object:
        """The value after `key:` on the current line, whose rest is `rest`."""
        if rest:
            return self._scalar(indent, rest, path)
        self._advance()
        if not self._done:
            if self.indent > indent:
                return self._node(self.indent, path, depth)
            if self.indent == indent and _is_item(self.text):
                return self._sequence(indent, path, depth)  # a list may sit at its key's indent
        return None

    def _sequence(self, indent: int, path: tuple, depth: int) -> list:
        result: list = []
        while True:
            item_path = path + (len(result),)
            after_dash = self.text[1:]
            rest = after_dash.lstrip(" ")
            self._count(1)
            if not rest or rest.startswith("#"):
                self._advance()
                if self._done or self.indent <= indent:
                    raise _Outside  # an empty item
                self.lines[item_path] = self.number
                result.append(self._node(self.indent, item_path, depth + 1))
            else:
                self.lines[item_path] = self.number
                if _is_item(rest) or _starts_key(rest):
                    # `- - x` or `- key: value`: a collection whose next entries line up with
                    # this first one, further right.
                    self.indent += 1 + len(after_dash) - len(rest)
                    self.text = rest
                    result.append(self._node(self.indent, item_path, depth + 1))
                else:
                    result.append(self._scalar(indent, rest, item_path))
            if self._done or self.indent < indent or not _is_item(self.text):
                if self.indent > indent:
                    raise _Outside
                return result
            if self.indent > indent:
                raise _Outside

    def _count(self, values: int) -> None:
        self.values += values
        if self.values > MAX_VALUES:
            raise _Outside  # the loader reports documents that expand too far

    # -- scalars ---------------------------------------------------------------------------
    def _scalar(self, indent: int, rest: str, path: tuple) -> object:
        """A scalar that starts on the current line; moves past it."""
        first = rest[0]
        if first in "|>":
            return self._block(indent, rest)
        if first == '"' or first == "'":
            value, tail = _quoted(rest)
            if tail and not (tail[0] == " " and tail.lstrip(" ").startswith("#")):
                raise _Outside
        elif first == "[":
            value, tail = _flow_sequence(rest)
            if tail and not (tail[0] == " " and tail.lstrip(" ").startswith("#")):
                raise _Outside
            self._count(len(value))
            for index in range(len(value)):
                self.lines[path + (index,)] = self.number
        elif rest.startswith("{}"):
            tail = rest[2:]
            if tail and not (tail[0] == " " and tail.lstrip(" ").startswith("#")):
                raise _Outside
            value = {}
        else:
            value = _plain(rest.split(" #", 1)[0].rstrip(" "))
        self._advance()
        if not self._done and self.indent > indent:
            raise _Outside  # a scalar continued on the next line
        return value

    def _block(self, indent: int, header: str) -> str:
        """A literal (`|`) or folded (`>`) block scalar, clipped or stripped (`-`)."""
        style, header = header[0], header[1:]
        strip = header.startswith("-")
        if strip:
            header = header[1:]
        if header and not header.lstrip(" ").startswith("#") or header.startswith("#"):
            raise _Outside  # indentation indicators, keep (`+`), or text after the indicator
        content: list[str] = []
        block_indent = -1
        last_text = -1  # index in `raw` of the block's last line that holds text
        at = self.at + 1
        while at < len(self.raw):
            line = self.raw[at]
            body = line.lstrip(" ")
            if not body:
                if block_indent < 0 or len(line) > block_indent:
                    raise _Outside  # leading blank lines, or blank lines holding spaces
                content.append("")
            else:
                line_indent = len(line) - len(body)
                if block_indent < 0:
                    if line_indent <= indent:
                        break
                    block_indent = line_indent
                elif line_indent < block_indent:
                    break
                content.append(line[block_indent:])
                last_text = at
            at += 1
        if block_indent < 0:
            raise _Outside  # an empty block
        while content and not content[-1]:
            content.pop()
        if style == ">":
            if any(not line or line.startswith(" ") for line in content):
                raise _Outside  # folding around blank and more-indented lines
            value = " ".join(content)
        else:
            value = "\n".join(content)
        self._next(at)
        # Clipping keeps the line break after the last line of text; there is none when that
        # line ends the stream (`a: |\n  x` without a final newline is "x").
        return value if strip or last_text == len(self.raw) - 1 else value + "\n"


def _is_item(text: str) -> bool:
    return text == "-" or text.startswith("- ")


def _split_key(text: str) -> tuple[str, str]:
    """`key: rest` → (key, rest without a comment); anything else is outside."""
    if text[0] == '"' or text[0] == "'":
        key, tail = _quoted(text)
        if not tail.startswith(":"):
            raise _Outside
        rest = tail[1:]
        if rest and rest[0] != " ":
            raise _Outside
    else:
        if text[0] in _INDICATORS:
            raise _Outside
        colon = text.find(": ")
        if colon < 0:
            if not text.endswith(":"):
                raise _Outside
            colon = len(text) - 1
        key, rest = text[:colon], text[colon + 1:]
        if key.endswith(" ") or " #" in key or implicit_type(key) != "str":
            raise _Outside  # `1:` is "1" to the loader but 1 to a kubeconfig's reader
    if len(text) - len(rest) - 1 > MAX_KEY_LENGTH:
        raise _Outside  # PyYAML looks no further than this for the `:` of a key, and refuses it
    rest = rest.lstrip(" ")
    return key, "" if rest.startswith("#") else rest


def _starts_key(text: str) -> bool:
    """Whether the text after `- ` opens a mapping (`key: ...`) rather than holding a scalar."""
    if text[0] == '"' or text[0] == "'":
        _, tail = _quoted(text)
        return tail.startswith(":")
    plain = text.split(" #", 1)[0]
    return ": " in plain or plain.endswith(":")


def _quoted(text: str) -> tuple[str, str]:
    """A one-line quoted scalar at the start of `text` → (value, what follows it)."""
    if text[0] == "'":
        end = 1
        while True:
            end = text.find("'", end)
            if end < 0:
                raise _Outside  # continues on the next line
            if text.startswith("''", end):
                end += 2
                continue
            return text[1:end].replace("''", "'"), text[end + 1:]
    parts: list[str] = []
    at = 1
    while True:
        quote = text.find('"', at)
        backslash = text.find("\\", at)
        if quote < 0:
            raise _Outside
        if backslash < 0 or quote < backslash:
            parts.append(text[at:quote])
            return "".join(parts), text[quote + 1:]
        parts.append(text[at:backslash])
        code = text[backslash + 1:backslash + 2]
        if code in _ESCAPES:
            parts.append(_ESCAPES[code])
            at = backslash + 2
        elif code in _HEX_ESCAPES:
            digits = text[backslash + 2:backslash + 2 + _HEX_ESCAPES[code]]
            if len(digits) != _HEX_ESCAPES[code] or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise _Outside
            point = int(digits, 16)
            if 0xD800 <= point <= 0xDFFF or point > 0x10FFFF:
                raise _Outside
            parts.append(chr(point))
            at = backslash + 2 + len(digits)
        else:
            raise _Outside


def _flow_sequence(text: str) -> tuple[list, str]:
    """A one-line flow sequence of scalars, `[a, "b", 1]`, at the start of `text` → (list, what follows)."""
    items: list = []
    at = 1
    while True:
        while text.startswith(" ", at):
            at += 1
        if text.startswith("]", at) and not items:
            return items, text[at + 1:]
        if text.startswith(("'", '"'), at):
            value, tail = _quoted(text[at:])
            items.append(value)
            at = len(text) - len(tail)
        else:
            end = at
            while end < len(text) and text[end] not in ",]":
                end += 1
            plain = text[at:end].rstrip(" ")
            if not plain or any(c in plain for c in ":#[]{}"):
                raise _Outside  # nested or empty entries, or keys: left to PyYAML
            items.append(_plain(plain))
            at = end
        while text.startswith(" ", at):
            at += 1
        if text.startswith("]", at):
            return items, text[at + 1:]
        if not text.startswith(",", at):
            raise _Outside  # continues on the next line, or is not YAML
        at += 1


def _plain(value: str) -> object:
    """A plain scalar written after `key: ` or `- `: a string, null, boolean or decimal integer."""
    if value[0] in _INDICATORS and not (value[0] in "-?:" and len(value) > 1 and value[1] != " "):
        raise _Outside
    if ": " in value or value.endswith(":") or value[0] in "?:":
        raise _Outside
    kind = implicit_type(value)
    if kind == "str":
        return value
    if kind == "null":
        return None
    if kind == "bool":
        return _BOOLS[value]
    if kind == "int":
        digits = value[1:] if value[0] in "+-" else value
        if digits == "0" or (digits[0] != "0" and digits.isdigit()):
            return int(value)
    raise _Outside  # octal, hexadecimal, sexagesimal, floats, timestamps, `<<`, `=`
