"""`kubectl disagg rollout step`: one reconcile pass of the DisaggregatedSet controller, client-side.

A pass is: take the set's Lease, read a snapshot, `reconcile` it, execute (or with --dry-run
only print) the actions, release the Lease. `--until-complete` repeats passes, watching the
LeaderWorkerSets between them, until the rollout is complete or the timeout runs out.

The pure core decides everything; this module only sequences it against `Cluster` and
presents the outcome: reports on stdout (text through templates/step.txt.j2, or YAML/JSON),
warnings, progress and errors on stderr.
"""

from __future__ import annotations

import difflib
import functools
import random
import shutil
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.durations import format_duration, parse_duration
from kubectl_disagg.errors import UserError
from kubectl_disagg.model import DisaggregatedSet
from kubectl_disagg.output import to_json, to_yaml
from kubectl_disagg.reconcile import Action, Annotate, Create, Reconciliation, Scale, reconcile, undo, write_units
from kubectl_disagg.render import deep_copy
from kubectl_disagg.snapshot import Snapshot

if TYPE_CHECKING:  # the Kubernetes client is imported only once a command needs a cluster
    from kubectl_disagg.cluster import Cluster, Lease

EXIT_OK = 0  # every pass ran; with --until-complete, every set is complete
EXIT_ERROR = 1  # bad input, API or network error, a write refused by the server (e.g. 409)
EXIT_USAGE = 2  # bad flags (click's own code for usage errors)
EXIT_REFUSED = 3  # nothing changed: unexplainable live state, a foreign object in the way, lease held
EXIT_TIMEOUT = 4  # --until-complete ran out of time

DEFAULT_TIMEOUT = "30m"
CONFLICT_BACKOFF_SECONDS = 0.5


# --- durations --------------------------------------------------------------------------------

def _timeout_option(ctx: click.Context, param: click.Parameter, value: str) -> float:
    try:
        seconds = parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None
    return seconds


# --- one pass ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pass:
    """What one pass over one set saw and did."""

    ds: DisaggregatedSet
    namespace: str
    snapshot: Snapshot
    reconciliation: Reconciliation
    done: tuple[Action, ...] = ()
    dry_run: bool = False
    refusal: tuple[str, ...] = ()  # why nothing was done; empty when the pass ran
    details: tuple[str | None, ...] = ()  # --dry-run: per planned action, its diff or object
    patches: tuple[list | None, ...] = ()  # --dry-run: per planned change, its JSON patch

    @property
    def complete(self) -> bool:
        return self.reconciliation.complete

    def patch_for(self, action: Action) -> list | None:
        """--dry-run: the JSON patch of a planned change (None for creates, deletes, real runs)."""
        return self._patches_by_action.get(id(action))

    @functools.cached_property
    def _patches_by_action(self) -> dict[int, list | None]:
        # By identity: the same action objects flow through, and looking them up by equality
        # would compare whole rendered objects, once per action of a 2,000-action dry run.
        return {id(planned): patch for planned, patch in zip(self.reconciliation.actions, self.patches)}

    def shown_actions(self) -> list[tuple[Action, str | None]]:
        """The actions to list with their detail: planned ones in a dry run, else those carried out."""
        if self.refusal:
            return []
        if self.dry_run:
            return list(zip(self.reconciliation.actions, self.details, strict=True))
        return [(action, None) for action in self.done]


def refusal_reasons(result: Reconciliation) -> list[str]:
    """Why no action of this pass may be taken: an unexplainable state or a blocked slice.

    A blocked slice stops the whole set, not just itself: the set's objects need someone to
    look at them, and half-stepping a set whose state is in question helps nobody.
    """
    reasons = list(result.problems)
    for report in result.slices:
        if report.phase == "blocked":
            reasons.extend(f"slice {report.slice}: {reason}" for reason in report.waiting_for)
    return reasons


def plan_pass(cluster: Cluster, ds: DisaggregatedSet, namespace: str) -> Pass:
    """A dry run: read and reconcile, change nothing, not even the Lease."""
    snapshot = cluster.snapshot(ds.name, namespace)
    result = reconcile(ds, snapshot)
    details = tuple(action_detail(action, cluster.last_seen) for action in result.actions)
    patches = tuple(action_patch(action, cluster.last_seen) for action in result.actions)
    return Pass(ds, namespace, snapshot, result, dry_run=True, refusal=tuple(refusal_reasons(result)),
                details=details, patches=patches)


def run_pass(cluster: Cluster, ds: DisaggregatedSet, namespace: str, lease: Lease | None = None) -> Pass:
    """Read, reconcile and execute one pass. The caller holds `lease` (renewed before writes).

    A failing action stops the pass: `PassInterrupted` carries what was done before it.
    """
    snapshot = cluster.snapshot(ds.name, namespace)
    result = reconcile(ds, snapshot)
    refusal = tuple(refusal_reasons(result))
    if refusal:
        return Pass(ds, namespace, snapshot, result, refusal=refusal)
    done: list[Action] = []
    for unit in write_units(result.actions):
        landed: list[Action] = []
        for action in unit:
            if lease is not None:
                lease.renew_if_due()  # a start over 100 slices is thousands of writes: outlast them all
            try:
                cluster.execute(action, namespace)
            except UserError as err:
                undo_notes = _undo_unit(cluster, landed, namespace, _may_have_landed(action, err, unit))
                raise PassInterrupted(Pass(ds, namespace, snapshot, result, tuple(done)), err, undo_notes) from None
            landed.append(action)
        done.extend(landed)
    return Pass(ds, namespace, snapshot, result, tuple(done))


def _may_have_landed(action: Action, err: UserError, unit: tuple[Action, ...]) -> Action | None:
    """The failed scale of a unit, unless the server refused it (a 409 says it did not land:
    undoing it could take back someone else's change)."""
    from kubectl_disagg.cluster import Conflict

    return action if len(unit) > 1 and not isinstance(err, Conflict) else None


def _undo_unit(cluster: Cluster, landed: list[Action], namespace: str, failed: Action | None = None) -> list[str]:
    """Take back the writes of a unit cut short, newest first, so no revision group stays split.

    The write that failed is taken back too: an answer lost on the way (connection cut, reset,
    timed out) does not mean the write did not land. Its undo is pinned to the count it would
    have written, so when it did not land the server refuses the undo and nothing changes.
    """
    from kubectl_disagg.cluster import Conflict

    notes = []
    if isinstance(failed, Scale):
        try:
            cluster.execute(undo(failed), namespace)
            notes.append(f"undid: {failed.describe()} (it had landed; its answer was lost)")
        except Conflict:
            pass  # it did not land: nothing to take back
        except UserError as err:
            notes.append(f"could not tell whether it landed ({err}): {failed.describe()}; "
                         "the next pass repairs the group")
    for scale in reversed(landed):
        try:
            cluster.execute(undo(scale), namespace)
            notes.append(f"undid: {scale.describe()}")
        except UserError as err:
            notes.append(f"could not undo ({err}): {scale.describe()}; the next pass repairs the group")
    return notes


class PassInterrupted(Exception):
    """An action failed mid-pass; `partial` lists those carried out before it."""

    def __init__(self, partial: Pass, error: UserError, undo_notes: list[str] | None = None):
        super().__init__(str(error))
        self.partial, self.error, self.undo_notes = partial, error, list(undo_notes or ())

    def user_error(self) -> UserError:
        total, done = len(self.partial.reconciliation.actions), len(self.partial.done)
        note = (f"{done} of the pass's {total} actions were carried out before this one; the rest were "
                "not attempted" if done else "no action of this pass was carried out")
        return UserError([*self.error.lines(), *self.undo_notes, note])


# --- --dry-run detail -----------------------------------------------------------------------


def action_detail(action: Action, live: Mapping[tuple[str, str], Mapping]) -> str | None:
    """What an action does to the object: the whole object for a create, a diff for a change."""
    if isinstance(action, Create):
        return to_yaml(dict(action.object))
    change = _before_after(action, live)
    if change is None:
        return None  # a delete needs no picture
    before, after = change
    subject = f"{action.kind.lower()}/{action.name}"
    return "".join(difflib.unified_diff(
        to_yaml(before).splitlines(keepends=True), to_yaml(after).splitlines(keepends=True),
        f"{subject} (live)", f"{subject} (after this step)"))


def action_patch(action: Action, live: Mapping[tuple[str, str], Mapping]) -> list | None:
    """The same change as an RFC 6902 JSON patch, for -o json|yaml readers."""
    import jsonpatch

    change = _before_after(action, live)
    return None if change is None else jsonpatch.make_patch(*change).patch


def _before_after(action: Action, live: Mapping[tuple[str, str], Mapping]) -> tuple[dict, dict] | None:
    if not isinstance(action, (Scale, Annotate)):
        return None
    before = live.get((action.kind, action.name))
    if before is None:
        return None
    before = _displayed(before)
    after = _displayed(before)
    if isinstance(action, Scale):
        after.setdefault("spec", {})["replicas"] = action.to_replicas
    else:
        after["metadata"]["annotations"] = {**(after["metadata"].get("annotations") or {}), **action.annotations}
    return before, after


def _displayed(obj: Mapping) -> dict:
    """A copy without managedFields, which nobody reads in a diff."""
    shown = deep_copy(dict(obj))
    shown["metadata"] = {k: v for k, v in (shown.get("metadata") or {}).items() if k != "managedFields"}
    return shown


# --- presenting -------------------------------------------------------------------------------


def _slice_views(step: Pass) -> list[dict]:
    """Per slice: its report (None for a slice being removed) and the actions to list."""
    shown = step.shown_actions()
    views = [{"slice": report.slice, "report": report,
              "actions": [pair for pair in shown if pair[0].slice == report.slice]}
             for report in step.reconciliation.slices]
    removed = sorted({action.slice for action, _ in shown if action.slice >= step.ds.slices})
    views += [{"slice": index, "report": None, "actions": [pair for pair in shown if pair[0].slice == index]}
              for index in removed]
    return views


def format_text(step: Pass, *, only_changed: bool = False, progress: bool = False) -> str:
    views = [{**view, "actions": [{"text": action.describe(), "detail": (detail or "").rstrip("\n")}
                                  for action, detail in view["actions"]]} for view in _slice_views(step)]
    context = {
        "name": step.ds.name, "namespace": step.namespace, "revision": step.ds.revision,
        "slices": step.ds.slices, "dry_run": step.dry_run, "refused": bool(step.refusal),
        "planned": len(step.reconciliation.actions), "done": len(step.done), "complete": step.complete,
        "only_changed": only_changed, "views": views,
    }
    from kubectl_disagg.templating import render_template  # text output only: yaml and json skip Jinja2

    return render_template("step.txt.j2", step=context, progress=progress)


def to_document(step: Pass) -> dict:
    """The `-o yaml|json` shape of a pass."""
    slices = []
    for view in _slice_views(step):
        report = view["report"]
        entry: dict[str, Any] = {"slice": view["slice"], "phase": report.phase if report else "removed"}
        if report is not None:
            entry["revisions"] = {rev: dict(roles) for rev, roles in report.revisions.items()}
            entry["waitingFor"] = list(report.waiting_for)
            if report.roles:
                entry["rollout"] = {
                    "roles": list(report.roles), "old": list(report.old), "new": list(report.new),
                    "position": None if report.position is None else f"{report.position[0]}/{report.position[1]}",
                    "stepKind": report.step_kind,
                }
        entry["actions"] = [_action_document(action, detail, step.patch_for(action))
                            for action, detail in view["actions"]]
        slices.append(entry)
    return {
        "name": step.ds.name,
        "namespace": step.namespace,
        "revision": step.ds.revision,
        "dryRun": step.dry_run,
        "complete": step.complete,
        "refused": list(step.refusal),
        "slices": slices,
        "warnings": list(step.reconciliation.warnings),
    }


def _action_document(action: Action, detail: str | None, patch: list | None = None) -> dict:
    doc: dict[str, Any] = {"action": action.describe(), "kind": action.kind, "name": action.name}
    if detail is not None:  # a dry run: the object a create would make, the diff of a change
        if isinstance(action, Create):
            doc["object"] = dict(action.object)
        else:
            doc["diff"] = detail
    if patch is not None:
        doc["patch"] = patch
    return doc


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


@click.command(epilog="""\b
Exit codes:
  0  done: every pass ran (with --until-complete: every set is complete)
  1  error: invalid input, an API or network error, a write the server refused
     (409: something changed since it was read; run the step again)
  2  usage: invalid flags
  3  refused (that pass changed nothing): the live objects cannot be explained,
     an object not managed by kubectl-disagg is in the way, or another stepper
     holds (or took over) the set's lease
  4  timeout: --until-complete ran out of time (the rollout stays where it is)""")
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_options.cluster
@click.option("--dry-run", is_flag=True,
              help="Print the actions and the object changes (diffs), change nothing.")
@click.option("--until-complete", is_flag=True,
              help="Repeat passes, watching the LeaderWorkerSets in between, until the rollout is complete.")
@click.option("--timeout", default=DEFAULT_TIMEOUT, show_default=True, callback=_timeout_option, metavar="DURATION",
              help="With --until-complete: give up after this long (e.g. 90s, 5m, 1h; 0 means no limit).")
@_options.output("text", "yaml", "json", default="text")
@click.pass_context
def step(ctx: click.Context, name: str | None, filenames: tuple[str, ...], recursive: bool, namespace: str | None,
         kubeconfig: str | None, context: str | None, dry_run: bool, until_complete: bool, timeout: float,
         output: str) -> None:
    """Run one reconcile pass of each DisaggregatedSet: what its controller would do next.

    Give -f with the set's manifest, or NAME to step the DisaggregatedSet object stored in
    the cluster (applied there by GitOps; no controller acts on it).

    A pass takes the set's Lease (coordination.k8s.io, kubectl-disagg-NAME) so that two
    steppers never act at once, reads the set's LeaderWorkerSets and Services, and creates,
    scales, annotates or deletes what the coordinated rollout calls for. Writes carry the
    resourceVersion they were computed from: a change in between fails them (409), never
    applies them blindly.

    \b
    kubectl disagg rollout step -f ds.yaml --dry-run     # what the next pass would do
    kubectl disagg rollout step -f ds.yaml               # do it
    kubectl disagg rollout step -f ds.yaml --until-complete --timeout 1h

    With --until-complete, sets are rolled one after another in input order, and the first
    that does not complete stops the run.
    """
    if dry_run and until_complete:
        raise click.UsageError("--dry-run and --until-complete cannot be combined: a dry run changes "
                               "nothing, so the rollout would never advance")
    _options.check_name_or_files(name, filenames)
    sets = _options.sets_from_files(filenames, recursive) if filenames else None

    from kubectl_disagg.cluster import Cluster

    console = Console(output)
    with Cluster(kubeconfig, context) as cluster:
        sets = sets or [_options.stored_set(cluster, name, namespace)]
        if until_complete:
            code = _until_complete(cluster, sets, namespace, timeout, console)
        else:
            code = max(_one_pass(cluster, ds, cluster.namespace_for(namespace, ds), dry_run, console)
                       for ds in sets)
    ctx.exit(code)


def _one_pass(cluster: Cluster, ds: DisaggregatedSet, namespace: str, dry_run: bool, console: Console) -> int:
    from kubectl_disagg.cluster import LeaseHeld, LeaseLost

    try:
        if dry_run:
            result = plan_pass(cluster, ds, namespace)
        else:
            with cluster.lease(ds.name, namespace) as lease:
                result = run_pass(cluster, ds, namespace, lease)
    except (LeaseHeld, LeaseLost) as err:
        console.error(err.lines())
        return EXIT_REFUSED
    except PassInterrupted as interrupted:
        if interrupted.partial.done:
            console.report(interrupted.partial)
        raise interrupted.user_error() from None
    for warning in result.reconciliation.warnings:
        console.warn(warning)
    console.report(result)
    if result.refusal:
        _refuse(console, result)
        return EXIT_REFUSED
    return EXIT_OK


def _refuse(console: Console, result: Pass) -> None:
    console.error([f"refusing to step disaggregatedset/{result.ds.name} in {result.namespace}:",
                   *(f"  {reason}" for reason in result.refusal)])


def _until_complete(cluster: Cluster, sets: list[DisaggregatedSet], namespace_flag: str | None,
                    timeout: float, console: Console) -> int:
    started = time.monotonic()
    deadline = started + timeout if timeout > 0 else None
    for ds in sets:
        namespace = cluster.namespace_for(namespace_flag, ds)
        code = _drive(cluster, ds, namespace, deadline, console)
        if code != EXIT_OK:
            if code == EXIT_TIMEOUT:
                console.error([f"timed out after {format_duration(timeout)}: disaggregatedset/{ds.name} in "
                               f"{namespace} is not complete; the rollout stays where it is, run the command "
                               "again to continue"])
            return code
    return EXIT_OK


def _drive(cluster: Cluster, ds: DisaggregatedSet, namespace: str, deadline: float | None,
           console: Console) -> int:
    """Passes over one set until it is complete; between passes, watch instead of polling."""
    from kubectl_disagg.cluster import Conflict, LeaseHeld, LeaseLost

    try:
        with cluster.lease(ds.name, namespace) as lease:
            while True:
                if _expired(deadline):
                    return EXIT_TIMEOUT
                try:
                    result = run_pass(cluster, ds, namespace, lease)
                except PassInterrupted as interrupted:
                    if interrupted.partial.done:
                        console.report(interrupted.partial, only_changed=True)
                    if not isinstance(interrupted.error, Conflict):
                        raise interrupted.user_error() from None
                    # Status moves under us all the time (the LWS controller writes it): read
                    # again, after a short jittered pause so a busy writer is not raced in a loop.
                    console.warn(f"{interrupted.error.what}; reading the state again")
                    time.sleep(CONFLICT_BACKOFF_SECONDS * (1 + random.random()))
                    continue
                for warning in result.reconciliation.warnings:
                    console.warn(warning, once=True)
                if result.done:
                    console.report(result, only_changed=True)
                else:  # a pass that changed something was just reported; say only what it waits for
                    console.progress(result)
                if result.refusal:
                    _refuse(console, result)
                    return EXIT_REFUSED
                if result.complete:
                    console.finished(result)
                    return EXIT_OK
                if not result.done and not _wait_for_change(
                        cluster, ds, namespace, result.snapshot.lws_resource_version, deadline, lease):
                    return EXIT_TIMEOUT
    except (LeaseHeld, LeaseLost) as err:
        console.error(err.lines())
        return EXIT_REFUSED


def _wait_for_change(cluster: Cluster, ds: DisaggregatedSet, namespace: str, resource_version: str,
                     deadline: float | None, lease: Lease) -> bool:
    """Watch until an LWS of the set changes (True) or the deadline passes (False).

    Watches last at most a third of the lease, so the lease is renewed in time; a watch that
    ends quietly means nothing changed, so the next one starts from the same resourceVersion.
    """
    while not _expired(deadline):
        chunk = lease.duration / 3
        if deadline is not None:
            chunk = min(chunk, deadline - time.monotonic())
        if cluster.wait_for_change(ds.name, namespace, resource_version, chunk):
            return True
        lease.renew_if_due()
    return False


def _expired(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline
