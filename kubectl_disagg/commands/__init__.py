"""One module per command, in the manner of kubectl plugins: the flags (the shared ones in one
`Options` on click's context), one library call, one view, and the exit code returned to `cli.py`.

A group names each of its commands by the dotted path of the click command (`LazyGroup`, as
click's documentation loads subcommands lazily): a command's module is imported when it runs or
is listed, never at start-up. What a command needs only in one mode (`--gitops`, `-o text`) it
imports where that mode begins, so `rollout status -f` imports nothing of git-driven rollouts
and `-o json|yaml` no template engine.
"""

from __future__ import annotations

import importlib

import click


class LazyGroup(click.Group):
    """A click group whose subcommands are "package.module.command" paths, imported on use;
    what a path names must be a click command."""

    def __init__(self, *args, lazy_subcommands: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = dict(lazy_subcommands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_subcommands:
            return self._load(name)
        return super().get_command(ctx, name)

    def _load(self, name: str) -> click.Command:
        module_name, attribute = self.lazy_subcommands[name].rsplit(".", 1)
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy_subcommands[name]} is not a click command (lazy subcommand {name!r})")
        return command
