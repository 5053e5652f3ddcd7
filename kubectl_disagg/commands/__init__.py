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
from typing import IO, Any

import click


class LazyGroup(click.Group):
    """A click group whose subcommands are "package.module.command" paths, imported on use;
    what a path names must be a click command."""

    def __init__(self, *args: Any, lazy_subcommands: dict[str, str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = dict(lazy_subcommands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_subcommands:
            return self._load(name)
        return super().get_command(ctx, name)

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """kubectl's answer to a word that names no subcommand: `unknown command`, and the
        subcommands it may have meant (`UnknownCommand`, a usage error: exit 2)."""
        typed = args[0] if args else ""
        if typed and not typed.startswith("-") and not ctx.resilient_parsing and \
                self.get_command(ctx, typed) is None:
            raise UnknownCommand(typed, ctx.command_path, suggestions_for(typed, [
                name for name in self.list_commands(ctx) if not getattr(self.get_command(ctx, name), "hidden", True)]))
        return super().resolve_command(ctx, args)

    def _load(self, name: str) -> click.Command:
        module_name, attribute = self.lazy_subcommands[name].rsplit(".", 1)
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy_subcommands[name]} is not a click command (lazy subcommand {name!r})")
        return command


SUGGESTION_DISTANCE = 2  # as Cobra's SuggestionsMinimumDistance, kubectl's default


def suggestions_for(typed: str, names: list[str]) -> list[str]:
    """The names `typed` may have meant, as kubectl (Cobra) finds them: at most two edits away
    (Levenshtein, ignoring case), or starting with what was typed."""
    typed = typed.lower()
    return [name for name in names
            if _edits(typed, name.lower()) <= SUGGESTION_DISTANCE or name.lower().startswith(typed)]


def _edits(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        before, row[0] = row[0], i
        for j, char_b in enumerate(b, 1):
            before, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, before + (char_a != char_b))
    return row[-1]


class UnknownCommand(click.UsageError):
    """`kubectl disagg rollout stpe`, worded as kubectl words it (exit 2, a usage error):

        error: unknown command "stpe" for "kubectl disagg rollout"

        Did you mean this?
                step
    """

    def __init__(self, typed: str, command_path: str, suggestions: list[str]):
        path = "kubectl disagg" + command_path.removeprefix("kubectl-disagg")
        text = f"unknown command {_quoted(typed)} for {_quoted(path)}"
        if suggestions:
            text += "\n\nDid you mean this?\n" + "".join(f"\t{name}\n" for name in suggestions)
        else:
            text += f"\nSee '{path} -h' for help and examples."
        super().__init__(text)

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.message}".rstrip("\n"), err=True)


def _quoted(text: str) -> str:
    """As Go's %q quotes a word."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
