"""The command line of the scripts of hack/ that make text from the code: print it, or with
--write put it where it is committed (hack/package_table.py, hack/field_reference.py, hack/cli_reference.py)."""

from __future__ import annotations

import sys
from typing import Callable


def print_or_write(argv: list[str], script: str, text: str, write: Callable[[str], None]) -> int:
    """``text`` on stdout, or with ``--write`` handed to ``write``; the exit code."""
    if argv == ["--write"]:
        write(text)
    elif argv:
        print(f"usage: {script} [--write]", file=sys.stderr)
        return 2
    else:
        sys.stdout.write(text)
    return 0
