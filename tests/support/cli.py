"""Running the plugin's main in-process, as the command tests do."""

from __future__ import annotations

import sys

import click
import pytest

from kubectl_disagg.cli import main
from kubectl_disagg.commands.root import cli


def run(argv: list[str], capsys, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        import io
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def _commands(group: click.Group, ctx: click.Context, path=()):
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from _commands(command, click.Context(command, parent=ctx, info_name=name), (*path, name))
        else:
            yield (*path, name), command


COMMANDS = list(_commands(cli, click.Context(cli, info_name="kubectl-disagg")))
