"""`LazyGroup`: subcommands named by their dotted path, imported when used, and refused when
what the path names is not a click command."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from kubectl_disagg.commands import LazyGroup
from tests.support.paths import REPO

not_a_command = "a string, not a command"


def group(**lazy: str) -> LazyGroup:
    return LazyGroup("g", lazy_subcommands=lazy)


def test_lists_and_loads_its_lazy_subcommands():
    lazy = group(render="kubectl_disagg.commands.render.render")
    ctx = click.Context(lazy)
    assert lazy.list_commands(ctx) == ["render"]
    assert lazy.get_command(ctx, "render").name == "render"
    assert lazy.get_command(ctx, "nothing") is None


def test_refuses_what_is_not_a_command():
    lazy = group(bad=f"{__name__}.not_a_command")
    with pytest.raises(TypeError, match="is not a click command"):
        lazy.get_command(click.Context(lazy), "bad")


def test_every_lazy_subcommand_of_the_tree_is_a_command():
    from kubectl_disagg.commands.root import cli

    def walk(command: click.Command, ctx: click.Context):
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert isinstance(sub, click.Command), name
                walk(sub, click.Context(sub, parent=ctx, info_name=name))

    walk(cli, click.Context(cli, info_name="kubectl-disagg"))


def test_a_command_loads_no_other_command():
    """`render` imports its own module, not the other commands' (nor their libraries)."""
    code = ("import sys; from kubectl_disagg.cli import main\n"
            "try:\n    main(['render', '-f', 'examples/prefill-decode.yaml'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('kubectl_disagg.commands.')), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    loaded = eval(result.stderr.strip().splitlines()[-1])  # noqa: S307 - our own list's repr
    assert loaded == ["kubectl_disagg.commands._help", "kubectl_disagg.commands._modes", "kubectl_disagg.commands._options",
                      "kubectl_disagg.commands._services", "kubectl_disagg.commands.render", "kubectl_disagg.commands.root"]
