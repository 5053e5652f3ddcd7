"""`kubectl disagg rollout status`: status derived from the live LWS, like the controller's.

Flags → one library call → the view of -o: `rollout.status.watch_status` over the store
--gitops picks (the only place the mode is tested): the cluster's (`rollout.status.ClusterLooks`:
the live LWS and the RolloutState; with -w until Available, or what --for names) or git's
(`rollout.git_status.GitLooks`: where a git-driven rollout stands and the next action, docs/gitops.md;
the directory read and loaded once, each look reading the live cluster only, and only
LeaderWorkerSets; with -w until the next action changes or every rollout is complete, or until
what --for names). -w ends held (exit 7, as `rollout step`) where the set's RolloutPolicy holds
the rollout, or at an analysis gate no step measures, saying what passes it. Exit codes: the
`Outcome` mapped to `exits.StatusExit`, one table for both stores.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from kubectl_disagg.commands import _inputs, _options, _services, _session
from kubectl_disagg.commands._modes import GITOPS_INPUT, Command, Mode
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.core.delivery.status import SetStatus, Until
from kubectl_disagg.exits import GITOPS_NEXT_ACTION, STATUS_CLUSTER, StatusExit
from kubectl_disagg.wait import Deadline
from kubectl_disagg.rollout.outcome import STATUS_EXIT
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.rollout.status import ClusterLooks, Format, StatusStore, watch_status
from kubectl_disagg.views.status import data_format, held_words, timeout_words

if TYPE_CHECKING:
    from kubectl_disagg.kube.session import Session
    from kubectl_disagg.views.stops import Spell

MODES = [Mode("gitops", needs=GITOPS_INPUT, refuses=("name",))]


@click.command(cls=Command, modes=MODES, exit_codes=[exit_section(STATUS_CLUSTER), exit_section(
    StatusExit, "With --gitops -f DIR (exit codes as rollout step --gitops's):", GITOPS_NEXT_ACTION)])
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
              help="Git-driven rollout (docs/gitops.md): the live set's status, and per slice the committed step, "
                   "whether the cluster shows it and the next action; with -w, until the next action changes.")
@_options.pass_options
def status(options: _options.Options, name: str | None, watch: bool, until: str | None, timeout: float | None,
           gitops: bool) -> int:
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
    wanted = Until(until) if until else None
    store = _git_store(options) if gitops else _cluster_store(options, name)  # the inputs read before the cluster
    deadline = Deadline.after(timeout, options.clock)
    invocation = _options.invocation(options, name)
    with _session.session(options) as cluster:
        looks = store(cluster)
        outcome = watch_status(cluster, looks, _format(options.output), watch=watch, deadline=deadline,
                               write=_writer(watch, options.output), until=wanted,
                               held=lambda reports: _said_held(reports, invocation.command))
    if outcome == Outcome.TIMEOUT:
        click.echo("error: timed out waiting for " + timeout_words(wanted or looks.until), err=True)
    return STATUS_EXIT[outcome]


def _cluster_store(options: _options.Options, name: str | None) -> Callable[[Session], StatusStore]:
    """The cluster's: the sets of -f (read now), or NAME as stored in the cluster."""
    sets = _inputs.sets_from_files(options) if options.filenames else None

    def store(cluster: Session) -> StatusStore:
        return ClusterLooks(cluster, sets or [_services.as_asked(
            _session.stored_set(cluster, name or "", options.namespace), options)], options.namespace, options.clock)
    return store


def _git_store(options: _options.Options) -> Callable[[Session], StatusStore]:
    """Git's: the directory read now (a set before the cluster), loaded once in the session.
    Its library is imported only here."""
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.rollout.git_status import GitLooks

    reading, tree, _ = _inputs.gitops_inputs(options)

    def store(cluster: Session) -> StatusStore:
        return GitLooks(cluster, directories.load(tree, reading, namespace=options.namespace,
                                                  fallback=_inputs.gitops_namespace(options), explicit_must_hold=True),
                        options.clock)
    return store


def _said_held(reports: list[SetStatus], spell: Spell) -> None:
    """-w ended held: one line per set on stderr, what holds it and the command that passes it,
    spelled as the user typed this one (NAME or -f, -n)."""
    for report in reports:
        click.echo(f"disaggregatedset/{report.name} in {report.namespace} is held: {held_words(report, spell)}",
                   err=True)


def _format(output: str) -> Format:
    if output not in ("text", "wide"):
        return data_format(output)
    from kubectl_disagg.views.status_text import format_reports  # Jinja2: only for -o text|wide

    return lambda reports, now: format_reports(reports, now, wide=output == "wide")


def _echo(text: str) -> None:
    click.echo(text, nl=False)


def _writer(watch: bool, output: str) -> Callable[[str], object]:
    """-w in text: each look over the last on a terminal, piped only what changed; in yaml|json
    each look that differs from the last, YAML's as a further document (views/status_watch.py)."""
    if not watch:
        return _echo
    from kubectl_disagg.views.status_watch import DocumentWriter, LookWriter

    return LookWriter() if output in ("text", "wide") else DocumentWriter(_echo, output)
