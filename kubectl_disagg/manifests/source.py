"""What a manifest document is once read: its data, where it came from, the line of every value.

The domain (model, validation) and both YAML readers depend on this module and on nothing else of
the reading, so the reader can depend on the domain's needs without a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

MAX_DEPTH = 100
MAX_VALUES_PER_DOCUMENT = 1_000_000

FieldPath = tuple[str | int, ...]  # a field path: keys and list indices, e.g. ("spec", "roles", 1, "name")


class _Removed:
    """The value of an edit that removes its field (`REMOVED`)."""

    def __repr__(self) -> str:
        return "REMOVED"


REMOVED: Any = _Removed()  # an edit's value that removes the field rather than write one

# A JSON object as read or as written: a manifest, an API object, or any mapping inside one. Its
# keys are strings; its values are whatever JSON holds, checked where they are read (schema.py,
# validation.py), so they are typed as such only there.
JsonObject = dict[str, Any]


class Document(NamedTuple):
    """One YAML document: its data, its file, its position in the stream (0-based), `lines`,
    the 1-based line of every value by field path, and `aliases`: the paths whose value comes
    through a YAML alias (`*name`, or merged with `<<: *name`), each → (the anchor's name, the
    alias's line, the anchor's line); everything under such a path is the anchor's text, shared
    with every other user of it."""

    data: Any  # what the YAML held: an object for a manifest, anything before it is checked
    file: str
    index: int  # type: ignore[assignment]  # the position in the stream; shadows tuple.index, as before
    lines: Mapping[FieldPath, int]
    aliases: Mapping[FieldPath, tuple[str, int, int]] = {}

    def alias(self, path: FieldPath) -> FieldPath | None:
        """The path of the alias the value at `path` (or where it would go) comes through, if any."""
        return next((tuple(path[:depth]) for depth in range(len(path) + 1) if tuple(path[:depth]) in self.aliases),
                    None)

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
