"""Mode flags declared once: which flags go with `--gitops` and which only without it, checked
by one function (`check_modes`) before a command runs, with kubectl's kind of usage error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from kubectl_disagg.commands._help import HelpCommand


class Mode:
    """A flag that turns a command into another mode (`--gitops`), declared with the flags that
    go with it: `needs`, the parameter it cannot do without and how a message names it;
    `refuses`, the parameters it cannot take; `only`, those that mean nothing without it.
    (A plain class: a dataclass would cost every command's start the making of one.)"""

    def __init__(self, flag: str, *, needs: tuple[str, str] | None = None, refuses: Sequence[str] = (),
                 only: Sequence[str] = ()):
        self.flag, self.needs, self.refuses, self.only = flag, needs, tuple(refuses), tuple(only)


GITOPS_INPUT = ("filenames", "-f (the set's file or directory, where its state is kept)")


class Command(HelpCommand):
    """A click command whose `modes` are checked, in order, before it runs (`check_modes`); its
    --help names the flags that go only with a mode on one line (`_help`)."""

    def __init__(self, *args: Any, modes: Sequence[Mode] = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.modes = tuple(modes)

    def invoke(self, ctx: click.Context) -> Any:
        check_modes(ctx, self.modes)
        return super().invoke(ctx)


def check_modes(ctx: click.Context, modes: Sequence[Mode]) -> None:
    """A usage error (exit 2, as kubectl's for flags it will not combine) for the first mode
    whose flags do not go together: on, a refused flag given or the needed one missing; off, a
    flag given that only goes with it."""
    params = {param.name: param for param in ctx.command.params}
    values = {**(vars(ctx.obj) if ctx.obj is not None else {}), **ctx.params}  # ctx.obj: `_options.Options`

    def given(name: str) -> bool:
        value = values.get(name)
        return value not in (None, False, ()) and value != params[name].default

    for mode in modes:
        if given(mode.flag):
            needs = mode.needs
            if any(given(name) for name in mode.refuses) or (needs and not given(needs[0])):
                assert needs is not None  # a mode that refuses flags says what it takes instead (every MODES)
                refused = [_spelled(params[name]) for name in mode.refuses]
                raise click.UsageError(f"{_spelled(params[mode.flag])} takes {needs[1]}" + (
                    "" if not refused else f", not {refused[0]}" if len(refused) == 1
                    else f" and neither {', '.join(refused[:-1])} nor {refused[-1]}"))
        elif any(given(name) for name in mode.only):
            only = [_spelled(params[name]) for name in mode.only]
            raise click.UsageError(f"{_listed(only)} {'goes' if len(only) == 1 else 'go'} with "
                                   f"{_spelled(params[mode.flag])}")


def _spelled(param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        return param.human_readable_name
    return next((opt for opt in param.opts if opt.startswith("--")), param.opts[0])


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"

