"""Errors meant for people: where the problem is, and what it is."""

from __future__ import annotations

import re
from collections import namedtuple

# Whatever str.splitlines() splits on: one problem must stay one line, whatever the input held.
# Compiled on first use (re caches it): a class with characters beyond Latin-1 takes milliseconds to
# compile, and a command that succeeds never prints a problem.
_LINE_BREAKS = "[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]"


def _one_line(text: str) -> str:
    return re.sub(_LINE_BREAKS, lambda match: f"\\x{ord(match.group()):02x}" if ord(match.group()) < 256
                  else f"\\u{ord(match.group()):04x}", text)


class Problem(namedtuple("Problem", "file line path message")):
    """One thing wrong with the input: `FILE:LINE: field.path: message` (line 0: unknown)."""

    __slots__ = ()

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        text = f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"
        return _one_line(text)


class UserError(Exception):
    """Raised with every problem found; the CLI prints them and exits 1."""

    def __init__(self, problems: list[Problem] | list[str] | str):
        if isinstance(problems, str):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]


class Conflict(UserError):
    """What was read has changed or gone since: read again, then act again (a stepper retries)."""

    def __init__(self, what: str):
        super().__init__(f"{what}; run the step again")
        self.what = what  # e.g. "leaderworkerset/x changed since it was read (409 Conflict)"


class Unreachable(UserError):
    """A request got no answer (connection refused, cut, timed out): it may or may not have landed."""


def persisting(call, attempts: int = 4, first_wait: float = 0.5, sleep=None):
    """`call()`, sent again after 0.5, 1, 2 s while the API server is `Unreachable`.

    Only for writes whose repetition is harmless (an undo pinned by a `test`, a lease release
    preconditioned on its resourceVersion): what cut one request off (a proxy, a restarting
    server) usually passes in a moment, and giving up would leave a group split or a lease held.
    """
    import time

    sleep = sleep or time.sleep
    for attempt in range(attempts):
        try:
            return call()
        except Unreachable:
            if attempt == attempts - 1:
                raise
            sleep(first_wait * 2 ** attempt)
