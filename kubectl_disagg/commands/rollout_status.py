"""`kubectl disagg rollout status`: status derived from the live LWS, like the controller's.

Flags → one library call → the view of -o, the mode picked by --gitops: `rollout.status.watch_status`
(with -w, until Available, or what --for names), or with --gitops `gitops.watch.looks` (where a
git-driven rollout stands and the next action, docs/gitops.md; with -w until the next action
changes or every rollout is complete, or until what --for names; each look printed when it
differs from the last; the cluster is only read, and only LeaderWorkerSets). Both -w loops are
`rollout.status.looks`. Either -w ends held (exit 7, as `rollout step`) where the set's
RolloutPolicy holds the rollout, or at an analysis gate no step measures, saying what passes it. Exit codes: the `Outcome` mapped to
`exits.StatusExit` (`GitopsExit` with --gitops).
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _inputs, _options, _services, _session
from kubectl_disagg.commands._modes import GITOPS_INPUT, Command, Mode
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.core.delivery.status import Until
from kubectl_disagg.exits import GITOPS_NEXT_ACTION, GitopsExit, StatusExit
from kubectl_disagg.wait import Deadline
from kubectl_disagg.rollout.outcome import STATUS_EXIT, Outcome
from kubectl_disagg.rollout.status import watch_status
from kubectl_disagg.views.status import data_format

MODES = [Mode("gitops", needs=GITOPS_INPUT, refuses=("name",))]


@click.command(cls=Command, modes=MODES, exit_codes=[exit_section(StatusExit), exit_section(
    GitopsExit, "With --gitops -f DIR (exit codes as rollout step --gitops's):", GITOPS_NEXT_ACTION)])
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_session.cluster
@_options.output("text", "wide", "yaml", "json", default="text")
@_services.revision_services
@click.option("-w", "--watch", is_flag=True,
              help="Keep reporting as the LWS (and the RolloutState) change, until Available (or --for).")
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
    if gitops:
        return _status_gitops(options, watch, timeout, Until(until) if until else None)
    sets = _inputs.sets_from_files(options) if options.filenames else None
    deadline = Deadline.after(timeout)
    with _session.session(options) as cluster:
        sets = sets or [_services.as_asked(_session.stored_set(cluster, name, options.namespace), options)]
        until = Until(until or Until.AVAILABLE)
        outcome = watch_status(cluster, sets, options.namespace, _format(options.output), watch=watch,
                               deadline=deadline, write=_writer(watch, options.output), until=until,
                               held=_said_held(_options.invocation(options, name)))
    if outcome == Outcome.TIMEOUT:
        click.echo("error: timed out waiting for the rollout to "
                   + ("complete" if until == Until.COMPLETE else "become Available"), err=True)
    return STATUS_EXIT[outcome]


def _status_gitops(options: _options.Options, watch: bool, timeout: float | None, until: Until | None) -> GitopsExit:
    """--gitops: the directory read and loaded once, before the cluster (a set first); each
    look reads the live cluster only. Its library and view are imported only here."""
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.gitops.watch import exit_code, looks, settled
    from kubectl_disagg.views.gitops_status import format_looks

    reading, tree, _ = _inputs.gitops_inputs(options)  # a set before the cluster
    deadline = Deadline.after(timeout)
    with _session.session(options) as cluster:
        directory = directories.load(tree, reading, namespace=options.namespace,
                                     fallback=_inputs.gitops_namespace(options), explicit_must_hold=True)
        printed, seen, first = None, [], None
        for seen in looks(cluster, directory, watch=watch, deadline=deadline, until=until):
            first = first or [s.status.next_action for s in seen]
            text = format_looks(seen, "text" if options.output == "wide" else options.output)
            if text != printed:
                click.echo(("---\n" if printed is not None and options.output == "yaml" else "") + text, nl=False)
                printed = text
    timed_out = watch and not settled(seen, first, until)
    if until is not None:
        waited = "every set to complete its rollout" if until == Until.COMPLETE else "every set to become Available"
    else:
        waited = "the next action to change"
    if timed_out:
        click.echo(f"timed out waiting for {waited}", err=True)
    for look in seen if watch else ():  # -w ended held: what holds each set and the command that passes it
        if look.status.still:
            _echo_held(look.ds.name, look.status.namespace, "; ".join(look.status.reasons))
    return exit_code([s.status for s in seen], timed_out, watched=watch)


def _said_held(invocation):
    """-w ended held: one line per set on stderr, what holds it and the command that passes it,
    spelled as the user typed this one (NAME or -f, -n)."""
    def said(reports) -> None:
        from kubectl_disagg.views.stops import measure_sentence, stop_sentence

        for report in reports:
            held, gate = report.paced.held, report.paced.unmeasured
            _echo_held(report.name, report.namespace, stop_sentence(held, spell=invocation.command) if held is not None
                       else measure_sentence(gate, spell=invocation.command))
    return said


def _echo_held(name: str, namespace: str, why: str) -> None:
    """-w ended held, in both modes: one line on stderr per set."""
    click.echo(f"disaggregatedset/{name} in {namespace} is held: {why}", err=True)


def _format(output: str):
    if output not in ("text", "wide"):
        return data_format(output)
    from kubectl_disagg.views.status_text import format_reports  # Jinja2: only for -o text|wide

    return lambda reports, now: format_reports(reports, now, wide=output == "wide")


def _echo(text: str) -> None:
    click.echo(text, nl=False)


def _writer(watch: bool, output: str):
    """-w in text: each look over the last on a terminal, piped only what changed (views/status_watch.py)."""
    if watch and output in ("text", "wide"):
        from kubectl_disagg.views.status_watch import LookWriter

        return LookWriter()
    return _echo
