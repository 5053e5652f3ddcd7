"""Flags shared by commands, spelled and behaving as kubectl's do (the inputs -f names are read
by `_inputs`), and what every command is handed besides them (`Options`).

Nothing here reaches the cluster (`render`, `validate` without --server run offline): sessions, their flags: `_session`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Callable, Protocol, TypeVar

import click

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.commands._modes import Command
from kubectl_disagg.core.api.durations import parse_duration
from kubectl_disagg.errors import Problem
from kubectl_disagg.views.invocation import Invocation

F = TypeVar("F", bound=Callable[..., Any])  # a command's function, as a flag's decorator hands it on


class Sessions(Protocol):
    """What opens (as a context manager) a command's session: `_session.Kubeconfig`, or a test's."""

    def session(self, options: Options) -> AbstractContextManager[Any]: ...

    def executor(self, options: Options) -> AbstractContextManager[Any]: ...


class Options:
    """What every command is handed (`pass_options`), made by `cli.main` for each run: the flags
    it shares, gathered on click's context by each flag's callback (the class attributes: their
    defaults); the clock; the `Sessions` that open its connection (None: the kubeconfig's)."""

    filenames: tuple[str, ...] = ()
    recursive: bool = False
    namespace: str | None = None
    output: str = ""
    kubeconfig: str | None = None
    context: str | None = None
    revision_services: bool = True  # --no-revision-services (commands/_services.py): every set without them
    as_user: str | None = None
    as_groups: tuple[str, ...] = ()
    as_uid: str | None = None

    def __init__(self, clock: Clock = SYSTEM_CLOCK, sessions: Sessions | None = None):
        self.clock, self.sessions = clock, sessions


pass_options = click.make_pass_decorator(Options, ensure=True)


def gathered(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A shared flag's callback: its value kept in the context's `Options`; None keeps the class default."""
    assert param.name is not None  # every shared flag is named (its Options attribute)
    if value is not None:  # (an -o whose default is None leaves `output` "", as its type says)
        setattr(ctx.ensure_object(Options), param.name, value)
    return value


def filenames(required: bool = True) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        func = click.option("-R", "--recursive", is_flag=True, expose_value=False, callback=gathered,
                            help="Process the directories used in -f recursively.")(func)
        return click.option("-f", "--filename", "filenames", multiple=True, required=required,
                            metavar="PATH", expose_value=False, callback=gathered,
                            help="File, directory or - (stdin) holding manifests. Repeatable.")(func)
    return decorate


def namespace(func: F) -> F:
    return click.option("-n", "--namespace", default=None, expose_value=False, callback=gathered,
                        help="Namespace of the documents that name none. Default: the context's, else "
                             "default; it may not contradict a document's own.")(func)


DRY_RUNS = ("none", "client", "server")


def dry_run(help: str) -> Callable[[F], F]:
    """kubectl's --dry-run=none|client|server; a bare --dry-run means client. The command must be
    a `DryRunCommand`, so that a bare --dry-run never takes the next word as its value."""
    return click.option("--dry-run", type=click.Choice(DRY_RUNS), default="none", is_flag=False,
                        flag_value="client", show_default=True, help=help)


class DryRunCommand(Command):
    """A command with `dry_run`: `--dry-run NAME` reads NAME as the argument it always was.

    Click gives an option with an optional value the next word unless it looks like a flag;
    kubectl (pflag) gives it only the value after `=`. Here the next word is its value only when
    it is one (`--dry-run server`); anything else leaves the flag bare.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, bare_dry_run(args))


def bare_dry_run(args: list[str]) -> list[str]:
    """`args` with every bare `--dry-run` not followed by one of its values spelled `--dry-run=client`."""
    out = list(args)
    for index, arg in enumerate(out):
        if arg == "--":
            break
        if arg == "--dry-run" and (index + 1 == len(out) or out[index + 1] not in DRY_RUNS):
            out[index] = "--dry-run=client"
    return out


def output(*choices: str, default: str | None) -> Callable[[F], F]:
    return click.option("-o", "--output", type=click.Choice(choices), default=default, show_default=True,
                        expose_value=False, callback=gathered, help="Output format.")


class Duration(click.ParamType):  # type: ignore[type-arg]  # generic since click 8.2; 8.1, supported, is not
    """kubectl's durations (30s, 5m, 1h30m, plain seconds) as seconds; 0 means no limit (None)."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | None:
        if value is None or isinstance(value, (int, float)):
            return value or None
        try:
            seconds = parse_duration(value)
        except ValueError as err:
            self.fail(str(err), param, ctx)
        return seconds or None


def timeout(default: str, help: str) -> Callable[[F], F]:
    """--timeout DURATION; the command receives seconds, or None for no limit (0)."""
    return click.option("--timeout", type=Duration(), default=default, show_default=True, metavar="DURATION",
                        help=help)


def print_warnings(warnings: list[Problem] | tuple[Problem, ...]) -> None:
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)


def check_name_or_files(name: str | None, options: Options) -> None:
    if bool(name) == bool(options.filenames):
        raise click.UsageError("give either NAME (a DisaggregatedSet stored in the cluster) or -f FILE")


def invocation(options: Options, name: str | None, gitops: bool = False) -> Invocation:
    """How the user named the set (NAME or -f, -n, --gitops), for the hints a view writes."""
    return Invocation(files=tuple(options.filenames), name=name, namespace=options.namespace, gitops=gitops)
