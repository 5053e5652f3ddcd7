"""What a manifest document is once read: its data, where it came from, the line of every value.

The domain (model, validation) and both YAML readers depend on this module and on nothing else of
the reading, so the reader can depend on the domain's needs without a cycle.
"""

from __future__ import annotations

from collections import namedtuple

MAX_DEPTH = 100
MAX_VALUES_PER_DOCUMENT = 1_000_000

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


def dotted(path: FieldPath) -> str:
    """("spec", "roles", 1, "name") → "spec.roles[1].name"."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
