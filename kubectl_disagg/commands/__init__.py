"""One module per command, in the manner of kubectl plugins.

Commands are imported only when run (`LazyGroup`): `render` must not pay for the
rollout machinery, the Kubernetes client or Jinja2.
"""

from __future__ import annotations

import importlib

import click


class LazyGroup(click.Group):
    """A click group whose subcommands are "module:attribute" strings, imported on use."""

    def __init__(self, *args, lazy_commands: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_commands:
            module_name, attribute = self.lazy_commands[name].split(":")
            return getattr(importlib.import_module(module_name), attribute)
        return super().get_command(ctx, name)
