"""`kubectl_complete-disagg`: the console script kubectl (>= 1.26) runs for `kubectl disagg <TAB>`,
answering from the click command tree through the completion engine (`views/completion.py`).
An entry of its own, beside `cli.main`: the commands never load the completion engine, and
completing never loads a command's library."""

from __future__ import annotations

import sys

from kubectl_disagg.commands.root import cli
from kubectl_disagg.views.completion import Completion, complete


def complete_main(argv: list[str] | None = None) -> None:
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        result = complete(cli, words)
    except Exception:  # noqa: BLE001 - a completion must never print a traceback into a prompt
        result = Completion((), 1)  # Cobra's ShellCompDirectiveError
    sys.stdout.write(result.lines())
