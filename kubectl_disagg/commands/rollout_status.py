"""`kubectl disagg rollout status`: status derived from the live LWS, like the controller's.

Flags → `rollout.status.watch_status` (with -w, until Available) → the view of -o; with
--gitops, `rollout_status_gitops.run`. Exit codes: `exits.StatusExit` (and `GitopsExit`).
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _inputs, _options, _session, load
from kubectl_disagg.exits import GITOPS_NEXT_ACTION, GitopsExit, StatusExit, help_text
from kubectl_disagg.kube.wait import Deadline
from kubectl_disagg.rollout.status import watch_status
from kubectl_disagg.views.status import data_format

GITOPS = "kubectl_disagg.commands.rollout_status_gitops:run"  # --gitops, loaded when asked for
TEXT = "kubectl_disagg.views.status_text:format_reports"  # -o text (Jinja2), loaded when asked for


@click.command(epilog=help_text(StatusExit) + "\n\n" + help_text(
    GitopsExit, "With --gitops -f DIR (exit codes as rollout step --gitops's):", GITOPS_NEXT_ACTION))
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_options.cluster
@_options.output("text", "yaml", "json", default="text")
@click.option("-w", "--watch", is_flag=True, help="Keep reporting as the LWS change, until Available.")
@_options.timeout("0", "With --watch: give up after this long (30s, 5m, 1h; 0 waits forever).")
@click.option("--gitops", is_flag=True,
              help="Git-driven rollout (docs/gitops.md): per slice the committed step, whether the cluster shows "
                   "it and the next action; with -w, until the next action changes.")
def status(name, filenames, recursive, namespace, kubeconfig, context, output, watch, timeout, gitops) -> int:
    """Show a DisaggregatedSet's rollout status, derived from its live LeaderWorkerSets.

    Give NAME to read the DisaggregatedSet stored in the cluster, or -f for a file.
    """
    if gitops and (name or not filenames):
        raise click.UsageError("--gitops takes -f (the set's file or directory, where its state is kept), not NAME")
    _options.check_name_or_files(name, filenames)
    # --gitops: the sets and their states, read (again at every look) as every command reads a directory
    inputs = load(GITOPS.replace(":run", ":checked"))(filenames, recursive) if gitops else None
    sets = _inputs.sets_from_files(filenames, recursive) if filenames and not gitops else None
    deadline = Deadline.after(timeout).at
    with _session.session(kubeconfig, context) as cluster:
        if gitops:
            return load(GITOPS)(inputs, cluster, namespace, output, watch, deadline)
        sets = sets or [_session.stored_set(cluster, name, namespace)]
        format = load(TEXT) if output == "text" else data_format(output)
        code = watch_status(cluster, sets, namespace, format, watch=watch, deadline=deadline, write=_echo)
    if code == StatusExit.TIMEOUT:
        click.echo("error: timed out waiting for the rollout to become Available", err=True)
    return code


def _echo(text: str) -> None:
    click.echo(text, nl=False)
