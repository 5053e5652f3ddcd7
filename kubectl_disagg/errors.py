"""Errors meant for people: where the problem is, and what it is."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# What must not reach a terminal raw from a message: whatever str.splitlines() splits on (one
# problem stays one line, whatever the input held) and every other control character (C0 but the
# tab, DEL, C1: an ESC from a manifest value would colour or rewrite the terminal), and the
# bidirectional controls (Unicode's Bidi_Control: U+061C, U+200E-F, U+202A-E, U+2066-9), which make
# a terminal show a message's text in another order than it holds (CVE-2021-42574). Compiled on
# first use (re caches it): a class with characters beyond Latin-1 takes milliseconds to compile,
# and a command that succeeds never prints a problem.
_UNPRINTABLE = "[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"


def escaped(text: str) -> str:
    """`text` with its control characters and line breaks written as escapes (`\\x1b`): the one
    place every message is made safe to print."""
    return re.sub(_UNPRINTABLE, lambda match: f"\\x{ord(match.group()):02x}" if ord(match.group()) < 256
                  else f"\\u{ord(match.group()):04x}", text)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: `FILE:LINE: field.path: message` (line 0: unknown)."""

    file: str
    line: int
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        text = f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"
        return escaped(text)


class UserError(Exception):
    """Raised with every problem found; the CLI prints them and exits 1."""

    def __init__(self, problems: Sequence[Problem | str] | str):
        if isinstance(problems, str):
            problems = [problems]
        self.problems: list[Problem | str] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def lines(self) -> list[str]:
        """One printable line per problem (see `escaped`)."""
        return [escaped(str(p)) for p in self.problems]


class Conflict(UserError):
    """What was read has changed or gone since: read again, then act again (a stepper retries)."""

    def __init__(self, what: str):
        super().__init__(f"{what}; run the step again")
        self.what = what  # e.g. "leaderworkerset/x changed since it was read (409 Conflict)"


class Unreachable(UserError):
    """A request got no answer (connection refused, cut, timed out): it may or may not have landed."""
