"""`kubectl disagg rollout status`: status derived from the live LWS, like the controller's.

Exit codes: 0 Available; 1 error (bad input, API error); 2 usage; 3 not Available (without
--watch); 4 --watch timed out before the set became Available.
"""

from __future__ import annotations

import datetime
import time

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.model import DisaggregatedSet, namespace_for
from kubectl_disagg.output import format_objects
from kubectl_disagg.planner import format_position
from kubectl_disagg.reconcile import reconcile
from kubectl_disagg.status import SetStatus, conditions, derive_status, to_document

EXIT_NOT_AVAILABLE = 3
EXIT_TIMEOUT = 4
# Reconcile names a phase by what the next pass does; status describes where the slice is.
_PHASE_NAMES = {"rollout started": "rollout pending"}
WATCH_SLICE_SECONDS = 60.0  # re-read at least this often, in case a watch event was missed


@click.command()
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_options.cluster
@_options.output("text", "yaml", "json", default="text")
@click.option("-w", "--watch", is_flag=True, help="Keep reporting as the LWS change, until Available.")
@_options.timeout("0", "With --watch: give up after this long (30s, 5m, 1h; 0 waits forever).")
def status(name, filenames, recursive, namespace, kubeconfig, context, output, watch, timeout) -> None:
    """Show a DisaggregatedSet's rollout status, derived from its live LeaderWorkerSets.

    Give NAME to read the DisaggregatedSet stored in the cluster, or -f for a file.

    \b
    Exit codes:
      0  Available: every role has all replicas ready at the current revision
      1  error (invalid input, API server unreachable or refusing)
      2  usage error
      3  not Available (without --watch)
      4  --watch timed out before the set became Available
    """
    _options.check_name_or_files(name, filenames)
    sets = _options.sets_from_files(filenames, recursive) if filenames else None
    deadline = None if timeout is None else time.monotonic() + timeout
    with _options.session(kubeconfig, context) as cluster:
        _watch(cluster, name, sets, namespace, output, watch, deadline)


def _watch(cluster, name, sets, namespace, output, watch, deadline) -> None:
    """Report, and with --watch keep reporting on every change, until every set is Available."""
    sets = sets or [_options.stored_set(cluster, name, namespace)]
    while True:
        reports = [_status(cluster, ds, namespace_for(ds, namespace, cluster.default_namespace)) for ds in sets]
        click.echo(_format([r for r, _ in reports], output), nl=False)
        pending = [(report, snapshot) for report, snapshot in reports if not report.available]
        if not pending:
            return
        if not watch:
            raise SystemExit(EXIT_NOT_AVAILABLE)
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            click.echo("error: timed out waiting for the rollout to become Available", err=True)
            raise SystemExit(EXIT_TIMEOUT)
        # Sleep on a watch of the first set still moving; any LWS event means "look again".
        report, snapshot = pending[0]
        cluster.wait_for_change(report.name, report.namespace, snapshot.lws_resource_version,
                                timeout=min(remaining or WATCH_SLICE_SECONDS, WATCH_SLICE_SECONDS))


def _status(cluster, ds: DisaggregatedSet, namespace: str):
    snapshot = cluster.snapshot(ds.name, namespace, scalers=ds.has_external_roles)
    return derive_status(ds, snapshot, reconcile(ds, snapshot)), snapshot


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _format(reports: list[SetStatus], output: str) -> str:
    now = _now()
    if output in ("yaml", "json"):
        return format_objects([to_document(report, now) for report in reports], output)
    return "\n".join(format_text(report, now) for report in reports)


def format_text(status: SetStatus, now: str) -> str:
    from kubectl_disagg.templating import grouped_by_slice, render_template, table

    role_table = table(
        ["ROLE", "DESIRED", "REPLICAS", "READY", "UPDATED"],
        [[r.name, r.desired, r.replicas, r.ready, r.updated] for r in status.roles], indent="  ")
    slice_table = table(
        ["SLICE", "PHASE", "REVISIONS (replicas per role)", "STEP"],
        [[r.slice, _PHASE_NAMES.get(r.phase, r.phase), _revisions(r.revisions, status.revision), _position(r.position)]
         for r in status.slices],
        indent="  ")
    waits = grouped_by_slice([(r.slice, (*r.waiting_for, *r.blocked)) for r in status.slices
                              if r.waiting_for or r.blocked])
    # Next actions differ per slice only by name: group them by what they do.
    next_actions = grouped_by_slice([(r.slice, tuple(_unsliced(a, status.name, r.slice) for a in r.actions))
                                     for r in status.slices if r.actions])
    return render_template("status.txt.j2", status=status, conditions=conditions(status, now),
                           role_table=role_table, slice_table=slice_table, waits=waits,
                           next_actions=next_actions)


def _unsliced(action, set_name: str, slice_index: int) -> str:
    """An action in words that are the same for every slice: names lose their "<set>-<slice>-"."""
    return action.describe().replace(f"/{set_name}-{slice_index}-", "/")


def _revisions(revisions, target: str) -> str:
    parts = []
    for revision, roles in revisions.items():
        marker = "new" if revision == target else "old"
        counts = " ".join(f"{role}={count}" for role, count in roles.items())
        parts.append(f"{revision} ({marker}) {counts}")
    return "; ".join(parts) or "none"


def _position(position) -> str:
    return format_position(position, missing="-")

