"""One module per command, in the manner of kubectl plugins.

The root group names each command by "module:attribute" (`LazyGroup`), as click's
documentation does for lazily loaded subcommands: a command's module is imported when it runs.
A mode that kubectl's habits spell as a flag but that is a command of its own (`rollout status
--gitops`, `rollout step --gitops`: their own library, views and exit codes) is named and
loaded the same way (`load`), so `rollout status -f` imports nothing of git-driven rollouts;
and so is a view that renders a Jinja2 template for one `-o` choice (`rollout status -o text`),
so `-o json|yaml` imports no template engine.
"""

from __future__ import annotations

import importlib

import click


def load(target: str):
    """The attribute a "module:attribute" string names, its module imported now."""
    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)


class LazyGroup(click.Group):
    """A click group whose subcommands are "module:attribute" strings, imported on use."""

    def __init__(self, *args, lazy_commands: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_commands:
            return load(self.lazy_commands[name])
        return super().get_command(ctx, name)
