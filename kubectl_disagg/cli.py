"""Command-line entry point: a thin shell over the pure core.

`main` turns UserError into `FILE:LINE: path: message` lines on stderr with exit code 1,
and never shows a traceback. A plain `render` (the GitOps hot path: Argo CD runs it on
every refresh) and `rollout status -f` skip click altogether (see fastpath), since importing
click costs more than either takes on a small set; so do `cmp generate` and `cmp discover`,
exactly as plugin.yaml runs them (Argo CD's sidecar); anything else, including every error in render's arguments, goes through the
click command tree in `commands/root.py`, which produces the same output.
"""

from __future__ import annotations

import sys

from kubectl_disagg.errors import UserError


def main(argv: list[str] | None = None) -> None:
    """The process entry point (argv None: the command line); with `argv`, raises SystemExit
    like any click program, so that it can be called in-process."""
    args = sys.argv[1:] if argv is None else list(argv)
    if argv is None:
        _collect_less_often()
    code = _guarded(lambda: _dispatch(args))
    if argv is None:
        _end_process(code)
    sys.exit(code)


def _collect_less_often() -> None:
    """Run the cycle collector every 100 000 allocations rather than every 700: a command's
    imports allocate tens of thousands of long-lived objects, which the default passes scan
    again and again (23 passes, 7–8 ms of a `rollout status` on a small set, freeing a few
    hundred objects). Memory stays bounded all the same in long runs (--watch, the controller)."""
    import gc

    gc.set_threshold(100_000)


def _end_process(code: int) -> None:
    """Exit without the interpreter's teardown: freeing every module costs a one-shot command
    10–25 ms (BENCHMARKS.md) and does nothing for it. Exit hooks still run (atexit: coverage,
    test harnesses). Not while another thread is alive: the normal exit joins a write in
    flight. stdout was flushed by `_guarded`."""
    import atexit
    import os

    threading = sys.modules.get("threading")  # not imported: no thread was ever started
    if threading is not None and threading.active_count() > 1:
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()  # an exit hook may have written
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _dispatch(args: list[str]) -> int:
    from kubectl_disagg import fastpath

    fast = fastpath.parse_args(args)
    if fast is not None:
        return fastpath.run(*fast)
    if args in (["cmp", "generate"], ["cmp", "discover"]):  # plugin.yaml's argv, run by Argo CD on every new commit
        import os

        from kubectl_disagg.argocd import sidecar as cmp_sidecar

        return (cmp_sidecar.generate if args[1] == "generate" else cmp_sidecar.discover)(os.environ)
    return _run_click(args)


def _run_click(args: list[str]) -> int:
    import click

    from kubectl_disagg.commands.root import cli

    try:
        code = cli.main(args=args, prog_name="kubectl-disagg", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except click.ClickException as err:
        err.show()
        return err.exit_code
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
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # not a real file (output captured in-process)
        pass


def complete_main(argv: list[str] | None = None) -> None:
    """`kubectl_complete-disagg`: the console script kubectl runs for plugin completion."""
    from kubectl_disagg.commands.root import cli
    from kubectl_disagg.views.completion import Completion, complete

    words = sys.argv[1:] if argv is None else list(argv)
    try:
        result = complete(cli, words)
    except Exception:  # noqa: BLE001 - a completion must never print a traceback into a prompt
        result = Completion((), 1)  # Cobra's ShellCompDirectiveError
    sys.stdout.write(result.lines())
