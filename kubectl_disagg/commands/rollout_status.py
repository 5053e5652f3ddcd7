"""`kubectl disagg rollout status`: status derived from the live LWS, like the controller's.

Flags → `rollout.status.watch_status` (with -w, until Available, or what --for names) → the
view of -o; with --gitops, `rollout_status_gitops.run`. Exit codes: `exits.StatusExit` (and
`GitopsExit`).
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _inputs, _options, _session
from kubectl_disagg.commands._modes import GITOPS_INPUT, Command, Mode
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.core.status import Until
from kubectl_disagg.exits import GITOPS_NEXT_ACTION, GitopsExit, StatusExit
from kubectl_disagg.wait import Deadline
from kubectl_disagg.rollout.status import watch_status
from kubectl_disagg.views.status import data_format

MODES = [Mode("gitops", needs=GITOPS_INPUT, refuses=("name",))]


@click.command(cls=Command, modes=MODES, exit_codes=[exit_section(StatusExit), exit_section(
    GitopsExit, "With --gitops -f DIR (exit codes as rollout step --gitops's):", GITOPS_NEXT_ACTION)])
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_session.cluster
@_options.output("text", "yaml", "json", default="text")
@click.option("-w", "--watch", is_flag=True, help="Keep reporting as the LWS change, until Available (or --for).")
@click.option("--for", "until", type=click.Choice([str(u) for u in Until]), default=None,
              help="What -w waits for and exit 0 means: available (the default) or complete. Available: every "
                   "role ready at the set's revision; complete: also the rollout's last step taken (no old "
                   "revision's LeaderWorkerSet left, drained ones too). With --gitops the default -w waits until "
                   "the next action changes (complete already: returns at once).")
@_options.timeout("0", "With --watch: give up after this long (30s, 5m, 1h; 0 waits forever).")
@click.option("--gitops", is_flag=True,
              help="Git-driven rollout (docs/gitops.md): per slice the committed step, whether the cluster shows "
                   "it and the next action; with -w, until the next action changes.")
@_options.pass_options
def status(options: _options.Options, name, watch, until, timeout, gitops) -> int:
    """Show a DisaggregatedSet's rollout status, derived from its live LeaderWorkerSets.

    \b
    kubectl disagg rollout status my-llm -n serving -w --timeout 10m
    kubectl disagg rollout status --gitops -f apps/llama/   # a git rollout

    Give NAME to read the DisaggregatedSet stored in the cluster, or -f for a file.
    The first line says Progressing, Available, or Available and complete: the
    rollout's last step taken, no old revision's LeaderWorkerSet left (drained ones
    stay at 0 until then). A script that must not stop early waits with
    -w --for=complete.
    """
    _options.check_name_or_files(name, options)
    if gitops:  # its own library and views, imported only here
        from kubectl_disagg.commands import rollout_status_gitops

        return rollout_status_gitops.run(options, watch, timeout, Until(until) if until else None)
    sets = _inputs.sets_from_files(options) if options.filenames else None
    deadline = Deadline.after(timeout).at
    with _session.session(options) as cluster:
        sets = sets or [_session.stored_set(cluster, name, options.namespace)]
        until = Until(until or Until.AVAILABLE)
        code = watch_status(cluster, sets, options.namespace, _format(options.output), watch=watch,
                            deadline=deadline, write=_echo, until=until)
    if code == StatusExit.TIMEOUT:
        click.echo("error: timed out waiting for the rollout to "
                   + ("complete" if until == Until.COMPLETE else "become Available"), err=True)
    return code


def _format(output: str):
    if output != "text":
        return data_format(output)
    from kubectl_disagg.views.status_text import format_reports  # Jinja2: only for -o text

    return format_reports


def _echo(text: str) -> None:
    click.echo(text, nl=False)
