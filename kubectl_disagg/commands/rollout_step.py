"""`kubectl disagg rollout step`: one reconcile pass of the DisaggregatedSet controller, client-side.

Flags → `stepper.drive` → printer: the passes themselves (Lease, snapshot, reconcile, execute,
watch) are the library's; this module turns flags into a drive over each set and prints what
each pass did: reports on stdout (text through templates/step.txt.j2, or YAML/JSON), warnings,
progress and errors on stderr.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import time

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.core.controller import reconciled_by_controller
from kubectl_disagg.rollout.events import set_reference
from kubectl_disagg.core.durations import format_duration
from kubectl_disagg.core.model import namespace_for
from kubectl_disagg.manifests.writer import to_json, to_yaml
from kubectl_disagg.views.step_report import format_text, refusal_lines, to_document
from kubectl_disagg.rollout.stepper import Pass, PassInterrupted, Retry, drive
from kubectl_disagg.rollout.write_scheduler import DEFAULT_MAX_IN_FLIGHT, MAX_IN_FLIGHT_LIMIT

EXIT_OK = 0  # every pass ran; with --until-complete, every set is complete
EXIT_ERROR = 1  # bad input, API or network error, a write refused by the server (e.g. 409, or in a server dry run)
EXIT_USAGE = 2  # bad flags (click's own code for usage errors)
EXIT_REFUSED = 3  # nothing changed: unexplainable live state, a foreign object in the way, lease held
EXIT_TIMEOUT = 4  # --until-complete ran out of time

DEFAULT_TIMEOUT = "30m"


# --- printing ---------------------------------------------------------------------------------


class Console:
    """stdout for reports, stderr for warnings, errors and progress (redrawn on a terminal)."""

    REDRAW_UP = "\x1b[{}F"  # cursor to the start of the line N lines up
    CLEAR_LINE = "\x1b[2K"
    CLEAR_BELOW = "\x1b[J"

    def __init__(self, output: str):
        self.output = output
        self._documents = 0
        self._drawn = 0  # progress lines on screen that the next progress may overwrite
        self._stderr_tty = sys.stderr.isatty()
        self._warned: set[str] = set()

    def report(self, step: Pass, *, only_changed: bool = False) -> None:
        if self.output == "text":
            text = format_text(step, only_changed=only_changed)
        elif self.output == "yaml":
            text = ("---\n" if self._documents else "") + to_yaml(to_document(step))
        else:
            text = to_json(to_document(step))
        self._documents += 1
        self._settle()
        click.echo(text, nl=False)

    def warn(self, message: str, *, once: bool = False) -> None:
        if once and message in self._warned:
            return
        self._warned.add(message)
        self._settle()
        click.echo(f"Warning: {message}", err=True)

    def error(self, lines: list[str]) -> None:
        self._settle()
        for text in lines:
            click.echo(text, err=True)

    def finished(self, step: Pass) -> None:
        if self.output == "text":
            self._settle()
            click.echo(f"disaggregatedset/{step.ds.name} in {step.namespace}: rollout complete at revision "
                       f"{step.ds.revision}")
        else:
            self.report(step)  # the stream of documents ends with the one that says complete

    def progress(self, step: Pass) -> None:
        lines = format_text(step, progress=True).splitlines()
        if not self._stderr_tty:
            click.echo("".join(f"{text}\n" for text in lines), err=True, nl=False)
            return
        # Redrawing moves up one screen row per line: a line that wrapped would break it.
        width = shutil.get_terminal_size().columns
        lines = [text if len(text) < width else text[:width - 2] + "…" for text in lines]
        redraw = self.REDRAW_UP.format(self._drawn) + self.CLEAR_BELOW if self._drawn else ""
        click.echo(redraw + "".join(f"{self.CLEAR_LINE}{text}\n" for text in lines), err=True, nl=False)
        self._drawn = len(lines)

    def _settle(self) -> None:
        """Anything else printed keeps the progress block on screen: the next one starts below."""
        self._drawn = 0


# --- the command ------------------------------------------------------------------------------


@click.command(cls=_options.DryRunCommand, epilog="""\b
Exit codes:
  0  done: every pass ran (with --until-complete: every set is complete;
     with --dry-run=server: the API server would accept every write)
  1  error: invalid input, an API or network error, a write the server refused
     (409: something changed since it was read; run the step again; with
     --dry-run=server: every write it would refuse is listed)
  2  usage: invalid flags
  3  refused (that pass changed nothing): the live objects cannot be explained,
     an object not managed by kubectl-disagg is in the way, another stepper
     holds (or took over) the set's lease, or the DisaggregatedSet controller
     runs the set (its objects are owned by it, or the stored set's status
     shows it reconciles it: see --ignore-controller)
  4  timeout: --until-complete ran out of time (the rollout stays where it is),
     or --wait-for-lease gave up before the lease was free

\b
Exit codes with --gitops (docs/gitops.md):
  0  advanced: the next state was written beside the set; commit it
  1  error: invalid input or state file, an API or network error
  2  usage: invalid flags
  3  refused: the live objects cannot be explained (nothing written)
  4  timeout: --wait ran out of time (nothing written)
  5  waiting: the cluster does not show the committed state yet (not
     synced or pruned), or the new revision is not ready (nothing written)
  6  complete: the rollout is done (nothing written)""")
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_options.cluster
@_options.dry_run("Print the actions and the object changes (diffs), change nothing. client (a bare --dry-run): "
                  "plan only; server: also send every write of the pass to the API server as a dry run "
                  "(dryRun=All), each marked accepted or refused, nothing stored.")
@click.option("--until-complete", is_flag=True,
              help="Repeat passes, watching the LeaderWorkerSets in between, until the rollout is complete.")
@click.option("--wait-for-lease", is_flag=True,
              help="If another stepper holds the set's lease, queue (watching the lease) until it is free "
                   "instead of exiting 3; bounded by --timeout.")
@_options.timeout(DEFAULT_TIMEOUT, "With --until-complete, --wait-for-lease or --gitops --wait: give up after "
                                   "this long (e.g. 90s, 5m, 1h; 0 means no limit).")
@_options.output("text", "yaml", "json", default="text")
@click.option("--gitops", is_flag=True,
              help="Git-driven rollout: check the cluster shows the committed rollout state, then write the "
                   "next step into the state file beside the set (disagg-rollout-state.yaml) instead of the "
                   "cluster. Reads LeaderWorkerSets only.")
@click.option("--wait", is_flag=True, help="With --gitops: watch until the step can advance, then write it.")
@click.option("--max-in-flight", type=click.IntRange(1, MAX_IN_FLIGHT_LIMIT), default=DEFAULT_MAX_IN_FLIGHT,
              show_default=True, metavar="N",
              help="At most N writes at once. Different slices are written concurrently; the writes of one "
                   "slice stay in order. 1 writes one object at a time.")
@click.option("--ignore-controller", is_flag=True,
              help="Step a stored set although its status shows a DisaggregatedSet controller reconciles it "
                   "(for when that controller no longer runs). Objects the controller owns are never stepped.")
@click.option("--pr-description", metavar="FILE", default=None,
              help="With --gitops: write a Markdown description of the step (for its pull request).")
@click.option("--state", "state_file", metavar="FILE", default=None,
              help="With --gitops: the set's rollout state file (default: disagg-rollout-state.yaml beside the "
                   "set's file, as the Argo CD plugin's rollout-state parameter).")
@click.option("--ignore-rollout-state", is_flag=True,
              help="Step the cluster directly although the set has a rollout state beside its file (it is "
                   "driven through git: Argo CD's self-heal would undo the step).")
@click.pass_context
def step(ctx: click.Context, name: str | None, filenames: tuple[str, ...], recursive: bool, namespace: str | None,
         kubeconfig: str | None, context: str | None, dry_run: str, until_complete: bool,
         wait_for_lease: bool, timeout: float | None, output: str, gitops: bool, wait: bool,
         pr_description: str | None, max_in_flight: int, ignore_controller: bool, state_file: str | None,
         ignore_rollout_state: bool) -> None:
    """Run one reconcile pass of each DisaggregatedSet: what its controller would do next.

    Give -f with the set's manifest, or NAME to step the DisaggregatedSet object stored in
    the cluster (applied there by GitOps; no controller acts on it).

    A pass takes the set's Lease (coordination.k8s.io, kubectl-disagg-NAME) so that two
    steppers never act at once (held by another: exit 3, or with --wait-for-lease queue
    until it is released or lapses), checks that the user may make every write the pass
    needs (SelfSubjectAccessReview: a pass is refused whole, never cut in half by a 403),
    reads the set's LeaderWorkerSets and Services, and creates, scales, annotates or deletes
    what the coordinated rollout calls for. Scales and annotations are pinned to the
    spec.replicas they were computed from (a status write in between does not matter; a
    replica change fails them), deletes to the resourceVersion. The scales of one revision
    group land together: one that fails undoes the group's earlier writes, so no group is
    left serving some roles without the others.

    \b
    kubectl disagg rollout step -f ds.yaml --dry-run     # what the next pass would do
    kubectl disagg rollout step -f ds.yaml --dry-run=server   # ... and would the API server accept it
    kubectl disagg rollout step -f ds.yaml               # do it
    kubectl disagg rollout step -f ds.yaml --until-complete --timeout 1h
    kubectl disagg rollout step -f ds.yaml --until-complete --wait-for-lease   # queue behind another operator

    With --until-complete, sets are rolled one after another in input order, and the first
    that does not complete stops the run.

    --dry-run=server computes the pass as a real step does and checks its permissions, then
    sends each of its writes to the API server with dryRun=All (and strict field validation):
    admission and validation run, nothing is stored, no Lease is taken. Each write is judged
    against the live objects as they are, and marked accepted or refused; a refused create
    is traced back to the set's FILE:LINE where the server names a field.
    """
    dry_run = None if dry_run == "none" else dry_run
    if gitops:
        if name or dry_run or until_complete or wait_for_lease or not filenames:
            raise click.UsageError("--gitops takes -f (the set's file or directory, where its state is kept) and "
                                   "neither NAME, --dry-run, --until-complete nor --wait-for-lease")
        from kubectl_disagg.commands import rollout_step_gitops

        ctx.exit(rollout_step_gitops.run(filenames, recursive, namespace, kubeconfig, context, wait, timeout,
                                         pr_description, output, state_file=state_file))
    if wait or pr_description or state_file:
        raise click.UsageError("--wait, --pr-description and --state go with --gitops")
    if dry_run and wait_for_lease:
        raise click.UsageError("--dry-run takes no lease, so --wait-for-lease has nothing to wait for")
    if dry_run and until_complete:
        raise click.UsageError("--dry-run and --until-complete cannot be combined: a dry run changes "
                               "nothing, so the rollout would never advance")
    _options.check_name_or_files(name, filenames)
    sets = _options.sets_from_files(filenames, recursive) if filenames else None

    console = Console(output)
    if sets and not dry_run and not ignore_rollout_state:
        from kubectl_disagg.gitops.files import git_driven

        driven = [(ds, path) for ds in sets if (path := git_driven(ds))]
        if driven:
            console.error([f"refusing to step disaggregatedset/{ds.name}: it is driven through git (its rollout "
                           f"state is in {path}); step it with `rollout step --gitops`, or give "
                           "--ignore-rollout-state (Argo CD's self-heal would undo a direct step)"
                           for ds, path in driven])
            ctx.exit(EXIT_REFUSED)
    with _options.session(kubeconfig, context) as cluster:
        if sets is None:
            stored = cluster.get_set(name, namespace or cluster.default_namespace)
            signs = [] if ignore_controller else reconciled_by_controller(stored)
            if signs:
                console.error([f"refusing to step disaggregatedset/{name}:", *(f"  {sign}" for sign in signs)])
                ctx.exit(EXIT_REFUSED)
            sets = [_options.set_from_object(stored)]
            regarding = set_reference(stored)
        else:
            regarding = None  # a file: each event regards the LeaderWorkerSet it is about
        bounded = until_complete or wait_for_lease
        deadline = None if timeout is None or not bounded else time.monotonic() + timeout
        codes = []
        for ds in sets:
            target = namespace_for(ds, namespace, cluster.default_namespace)
            code = _step_set(cluster, ds, target, console, until_complete=until_complete, dry_run=dry_run,
                             deadline=deadline, max_in_flight=max_in_flight, wait_for_lease=wait_for_lease,
                             regarding=regarding)
            if code == EXIT_TIMEOUT and until_complete:
                console.error([f"timed out after {format_duration(timeout)}: disaggregatedset/{ds.name} in "
                               f"{target} is not complete; the rollout stays where it is, run the command "
                               "again to continue"])
            codes.append(code)
            if until_complete and code != EXIT_OK:
                break  # sets roll one after another: the first that does not complete stops the run
    ctx.exit(max(codes))


def _step_set(cluster, ds, namespace: str, console: Console, *, until_complete: bool, dry_run: str | None,
              deadline: float | None, max_in_flight: int, wait_for_lease: bool = False,
              regarding: dict | None = None) -> int:
    """Drive one set, printing each pass; the exit code of how it ended."""
    from kubectl_disagg.kube.lease import LeaseHeld, LeaseLost, LeaseWaitTimedOut

    last = None
    try:
        with contextlib.closing(drive(cluster, ds, namespace, until_complete=until_complete, dry_run=dry_run,
                                      deadline=deadline, max_in_flight=max_in_flight,
                                      wait_for_lease=wait_for_lease)) as passes:
            for last in passes:
                _show(console, last, until_complete)
                _record_events(cluster, console, last.partial if isinstance(last, Retry) else last, regarding)
    except LeaseWaitTimedOut as err:
        console.error(err.lines())
        return EXIT_TIMEOUT
    except (LeaseHeld, LeaseLost) as err:
        console.error(err.lines())
        return EXIT_REFUSED
    except PassInterrupted as interrupted:
        if interrupted.partial.done:
            console.report(interrupted.partial, only_changed=until_complete)
            _record_events(cluster, console, interrupted.partial, regarding)
        raise interrupted.user_error() from None
    if isinstance(last, Pass) and last.refusal:
        console.error([f"refusing to step disaggregatedset/{ds.name} in {namespace}:",
                       *(f"  {reason}" for reason in last.refusal)])
        return EXIT_REFUSED
    if isinstance(last, Pass) and last.refused_writes:
        refused = last.refused_writes
        console.error([*(line for planned in refused for line in refusal_lines(last, planned)),
                       f"disaggregatedset/{ds.name} in {namespace}: the API server would refuse {len(refused)} "
                       f"of this pass's {len(last.planned)} writes (server dry run: nothing was changed)"])
        return EXIT_ERROR
    if not until_complete:
        return EXIT_OK
    if isinstance(last, Pass) and last.complete:
        console.finished(last)
        return EXIT_OK
    return EXIT_TIMEOUT


def _record_events(cluster, console: Console, step: Pass, regarding: dict | None) -> None:
    """What the pass did, as Events (see `events`): a history aid, so a failure only warns."""
    import datetime
    import secrets

    from kubectl_disagg.errors import UserError
    from kubectl_disagg.rollout.events import event_object, events_for
    from kubectl_disagg.kube.lease import default_holder

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    holder = default_holder()
    for event in events_for(step, regarding):
        try:
            cluster.record_event(event_object(event, now, secrets.token_hex(8), holder))
        except UserError as err:
            console.warn(f"could not record event {event.reason}: {err}", once=True)
            return


def _show(console: Console, event: Pass | Retry, until_complete: bool) -> None:
    if isinstance(event, Retry):
        if event.partial.done:
            console.report(event.partial, only_changed=True)
        console.warn(f"{event.reason}; reading the state again")
        return
    for warning in event.reconciliation.warnings:
        console.warn(warning, once=until_complete)
    if not until_complete or event.done:
        console.report(event, only_changed=until_complete)
    else:  # a pass that changed something was just reported; say only what it waits for
        console.progress(event)
