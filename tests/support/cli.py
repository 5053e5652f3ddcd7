"""Running the plugin's main in-process, as the command tests do, with what a test hands the
command instead of the machine's: `on(cluster, clock)`, the `Options` whose sessions are an
in-memory cluster of tests/fakes (and whose clock is a fake one)."""

from __future__ import annotations

import contextlib
import sys

import pytest

from kubectl_disagg.cli import main
from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.commands._options import Options


def run(argv: list[str], capsys, stdin: str | None = None, monkeypatch=None,
        options: Options | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        import io
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    with pytest.raises(SystemExit) as exited:
        main(argv, options)
    out, err = capsys.readouterr()
    return exited.value.code, out, err


class Connected:
    """`Options.sessions` handing every command `cluster` (a fake of tests/fakes), as its session
    and as its executor; a test may point `cluster` elsewhere between runs."""

    def __init__(self, cluster):
        self.cluster = cluster

    def session(self, options: Options):
        return contextlib.nullcontext(self.cluster)

    def executor(self, options: Options):
        return contextlib.nullcontext(self.cluster)


def on(cluster, clock: Clock = SYSTEM_CLOCK) -> Options:
    """What a command run against the in-memory `cluster` is handed."""
    return Options(clock, Connected(cluster))
