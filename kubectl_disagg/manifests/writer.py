"""Serialising objects: YAML and JSON, byte-for-byte deterministic; and `write_atomically`, the
one writer of files (every file the tool writes goes through it).

The YAML writer is our own, small and strict: keys sorted, block style, lists unindented
under their key as kubectl prints them, and any string that kubectl's reader (go-yaml v2,
`resolver`) or another YAML 1.1 or 1.2 reader could take for something else is double-quoted. It is also much faster than PyYAML's pure-Python
representer, which matters when a set renders to thousands of objects.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from typing import Any, TypeGuard

from kubectl_disagg.manifests.resolver import plain_reads_as_string
from kubectl_disagg.manifests.source import JsonObject

_PLAIN = re.compile(r"[A-Za-z0-9_./(][A-Za-z0-9 _./=+@%,()~:-]*")
# Words that YAML 1.1 readers (go-yaml v2, PyYAML) take as booleans, whatever the resolver says.
_YAML11_WORDS = frozenset("y n yes no on off true false null ~".split())
# What other YAML 1.1 readers (PyYAML) read as numbers or dates where go-yaml reads strings:
# base 60 (`1:30`) and timestamps.
_SEXAGESIMAL_OR_DATE = r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt \t].*)?"


@functools.lru_cache(maxsize=65536)
def _string(value: str) -> str:
    if (
        _PLAIN.fullmatch(value)
        and not value.endswith((" ", ":"))
        and ": " not in value
        and value.lower() not in _YAML11_WORDS
        and not _numeric(value)
        and plain_reads_as_string(value)
        and not re.fullmatch(_SEXAGESIMAL_OR_DATE, value)
    ):
        return value
    return _quote(value)


# Characters YAML wants escaped in a double-quoted scalar that JSON leaves raw; U+2028 and
# U+2029 are printable, but YAML readers take them for line breaks and fold them. Compiled on
# first use (re caches it): the Unicode ranges cost milliseconds, and plain ASCII never needs it.
_NOT_PRINTABLE = "[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


def _quote(value: str) -> str:
    """A double-quoted scalar: JSON's escapes are YAML's, plus 8-digit escapes where JSON would split a pair."""
    text = json.dumps(value, ensure_ascii=False)
    if text.isascii() and "\x7f" not in text:
        return text  # JSON already escaped every ASCII control character
    return re.sub(_NOT_PRINTABLE, _escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _numeric(value: str) -> bool:
    """Whether some reader (YAML 1.2, Go's strconv) could take it for a number: "1e3", "0x1f"."""
    try:
        float(value)
        return True
    except ValueError:
        pass
    try:
        int(value, 0)
        return True
    except ValueError:
        return False


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    return _string(str(value))


def _float(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" in text and "." not in text:  # YAML 1.1 wants a dot in a float
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _is_block(value: object) -> TypeGuard[dict[Any, Any] | list[Any]]:
    return isinstance(value, (dict, list)) and bool(value)


def _emit(value: dict[Any, Any] | list[Any], indent: str, out: list[str]) -> None:
    """Append the block lines of a non-empty dict or list, each starting with `indent`."""
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            item = value[key]
            head = f"{indent}{_scalar(key)}:"
            if isinstance(item, dict) and item:
                out.append(head)
                _emit(item, indent + "  ", out)
            elif isinstance(item, list) and item:
                out.append(head)
                _emit(item, indent, out)
            else:
                out.append(f"{head} {_inline(item)}")
        return
    for item in value:
        if _is_block(item):
            start = len(out)
            _emit(item, indent + "  ", out)
            out[start] = f"{indent}- {out[start][len(indent) + 2:]}"
        else:
            out.append(f"{indent}- {_inline(item)}")


def _inline(value: object) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def entry_lines(head: str, value: object) -> list[str]:
    """One mapping entry as block lines: `head` (the indentation, any `- ` of a list item, the
    key and its colon) then `value`, inline when a scalar or empty, else as a block below it:
    a mapping indented two columns past the key, a list at the key's own column."""
    if not _is_block(value):
        return [f"{head} {_inline(value)}"]
    column = " " * (len(head) - len(head.lstrip(" -")))
    lines = [head]
    _emit(value, column + "  " if isinstance(value, dict) else column, lines)
    return lines


def to_yaml(obj: object) -> str:
    """One YAML document (no `---`), ending in a newline."""
    if not _is_block(obj):
        return _inline(obj) + "\n"
    lines: list[str] = []
    _emit(obj, "", lines)
    lines.append("")
    return "\n".join(lines)


def to_yaml_stream(objects: Iterable[object]) -> str:
    """Documents separated by `---`, as `kubectl apply -f -` reads them."""
    return "---\n".join(to_yaml(obj) for obj in objects)


def to_json(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def as_list(objects: Iterable[object]) -> JsonObject:
    """Several objects as one JSON document, the way `kubectl get -o json` does it."""
    return {"apiVersion": "v1", "kind": "List", "items": list(objects), "metadata": {}}


def format_objects(objects: Sequence[object], output: str) -> str:
    if output == "json":
        return to_json(objects[0] if len(objects) == 1 else as_list(objects))
    return to_yaml_stream(objects)


def write_atomically(path: str, data: bytes) -> None:
    """`data` into `path` whole or not at all, as git and editors write a file: a temporary
    dot-file beside it (no reading of a directory takes one for an input) renamed over it. The
    file keeps its mode (a new file gets 0666 under the umask, not mkstemp's 0600); a symbolic
    link stays one, the file it names rewritten. On any failure the temporary file is removed
    and the file is as it was."""
    path = os.path.realpath(path)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0o022)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=os.path.dirname(path))
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
