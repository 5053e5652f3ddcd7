"""Command-line entry point (`kubectl-disagg`): a thin shell over the pure core.

Every command runs through the click command tree in `commands/root.py`. `main` turns
UserError into `FILE:LINE: path: message` lines on stderr with exit code 1, and never shows a
traceback. kubectl's completion requests (`kubectl_complete-disagg`) enter through
`commands/complete.py`, so a command never loads the completion engine.
"""

from __future__ import annotations

import os
import sys

import click

from kubectl_disagg.commands._options import kubectl_spellings
from kubectl_disagg.commands.root import cli
from kubectl_disagg.errors import UserError


def main(argv: list[str] | None = None) -> None:
    """The process entry point (argv None: the command line); raises SystemExit like any click
    program, so that it can be called in-process."""
    args = sys.argv[1:] if argv is None else list(argv)
    sys.exit(_guarded(lambda: _run_click(args)))


def _run_click(args: list[str]) -> int:
    try:
        code = cli.main(args=kubectl_spellings(args), prog_name="kubectl-disagg", standalone_mode=False)
    except click.exceptions.Abort as err:
        if isinstance(err.__cause__, KeyboardInterrupt):  # Ctrl-C: said once, by `_guarded`
            raise err.__cause__ from None
        click.echo("Aborted.", err=True)
        return 130
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except SystemExit as exited:  # a command's own exit code (rollout status: 3 when not Available)
        code = exited.code
        if isinstance(code, str):
            print(code, file=sys.stderr)
            return 1
    return code if isinstance(code, int) else 0


def _guarded(run) -> int:
    try:
        code = run()
        sys.stdout.flush()  # here, so that a full disk or a closed pipe is reported below, not at exit
        return code
    except UserError as err:
        sys.stdout.flush()
        for line in err.lines():
            print(line, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `render | head` closes the pipe early; that is not an error worth a traceback.
        _discard_stdout()
        return 0
    except OSError as err:  # writing the output (a full disk), or a read no command turned into a UserError
        _discard_stdout()
        print(f"error: {err.strerror or err}", file=sys.stderr)
        return 1


def _discard_stdout() -> None:
    """What is still buffered for stdout cannot be written: send it nowhere, so that the exit
    does not try again and complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # not a real file (output captured in-process)
        pass
