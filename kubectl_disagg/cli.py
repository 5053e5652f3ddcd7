"""Command-line entry point (`kubectl-disagg`): a thin shell over the pure core.

Every command runs through the click command tree in `commands/root.py` and returns its exit
code (`exits.py`, one table for every command); `main` is the one place the process exits.
It turns UserError into `FILE:LINE: path: message` lines on stderr with exit code 1, and never
shows a traceback. SIGTERM and SIGHUP stop a command as Ctrl-C does (a `rollout step` finishes
the write unit under way and releases its Lease), exiting 128 + the signal's number. kubectl's
completion requests (`kubectl_complete-disagg`) enter through `commands/complete.py`, so a
command never loads the completion engine.
"""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

import click

from kubectl_disagg.commands._options import Options
from kubectl_disagg.commands.root import cli
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import Exit, terminated
from kubectl_disagg.views.problems import lines as problem_lines


def main(argv: list[str] | None = None, options: Options | None = None) -> None:
    """The process entry point (argv None: the command line); raises SystemExit like any click
    program, so that it can be called in-process. `options`: what the command is handed besides
    its flags (a test's clock and in-memory cluster; None: the system clock and the kubeconfig's
    server), copied so that one run's flags never reach the next."""
    args = sys.argv[1:] if argv is None else list(argv)
    handed = Options() if options is None else copy.copy(options)
    with _terminations_interrupt():
        sys.exit(int(_guarded(lambda: _run_click(args, handed))))


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, taken as Ctrl-C is: `signum` says which."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def _terminations_interrupt() -> Iterator[None]:
    """While a command runs, SIGTERM and SIGHUP raise `Terminated` (a KeyboardInterrupt) in the
    main thread, as SIGINT does, instead of ending the process where it stands: the unit of
    writes under way ends whole and the Lease is released. Their handlers before are put back."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may handle signals (an in-process caller's thread)
        return
    wanted = [signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])]
    before = {signum: signal.signal(signum, _raise_terminated) for signum in wanted}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def kubectl_spellings(args: list[str]) -> list[str]:
    """`args` with kubectl's `-v=N` spelled `-v N` (pflag takes a short flag's value after `=`,
    click would read "=N")."""
    out: list[str] = []
    for index, arg in enumerate(args):
        if arg == "--":
            return out + args[index:]
        out.extend(["-v", arg[3:]] if arg.startswith("-v=") else [arg])
    return out


def _run_click(args: list[str], options: Options) -> int:
    try:
        code = cli.main(args=kubectl_spellings(args), prog_name="kubectl-disagg", standalone_mode=False, obj=options)
    except click.exceptions.Abort as err:
        if isinstance(err.__cause__, KeyboardInterrupt):  # Ctrl-C: said once, by `_guarded`
            raise err.__cause__ from None
        click.echo("Aborted.", err=True)
        return Exit.INTERRUPTED
    except click.ClickException as err:
        err.show()
        return err.exit_code
    return code if isinstance(code, int) else Exit.OK  # what the command returned (None: success)


def _guarded(run: Callable[[], int]) -> int:
    try:
        code = run()
        sys.stdout.flush()  # here, so that a full disk or a closed pipe is reported below, not at exit
        return code
    except UserError as err:
        sys.stdout.flush()
        for line in problem_lines(err):
            print(line, file=sys.stderr)
        return Exit.ERROR
    except Terminated as signalled:
        print(f"Terminated ({signalled}).", file=sys.stderr)
        return terminated(signalled.signum)
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return Exit.INTERRUPTED
    except BrokenPipeError:
        # `render | head` closes the pipe early; that is not an error worth a traceback.
        _discard_stdout()
        return Exit.OK
    except OSError as err:  # writing the output (a full disk), or a read no command turned into a UserError
        _discard_stdout()
        print(f"error: {err.strerror or err}", file=sys.stderr)
        return Exit.ERROR


def _discard_stdout() -> None:
    """What is still buffered for stdout cannot be written: send it nowhere, so that the exit
    does not try again and complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # not a real file (output captured in-process)
        pass
