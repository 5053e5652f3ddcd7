"""The `rollout status` verb without its flags: read the live LWS, derive the status, print it,
and with --watch keep printing on every change until the set is Available."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from kubectl_disagg.core.model import DisaggregatedSet, namespace_for
from kubectl_disagg.manifests.writer import format_objects
from kubectl_disagg.core.planner import format_position
from kubectl_disagg.core.reconcile import reconcile
from kubectl_disagg.core.status import SetStatus, conditions, derive_status, to_document
from kubectl_disagg.kube.wait import Deadline, until_settled
from kubectl_disagg.views.templating import grouped_by_slice, render_template, table

EXIT_NOT_AVAILABLE = 3
EXIT_TIMEOUT = 4


def show_status(cluster, sets: list[DisaggregatedSet], namespace: str | None, output: str, *, watch: bool = False,
                deadline: float | None = None, write: Callable[[str], object] | None = None) -> int:
    """Report every set; the exit code: 0 when all are Available, EXIT_NOT_AVAILABLE when not
    (without `watch`); with `watch`, report again on every change until they are, or EXIT_TIMEOUT
    at `deadline` (a time.monotonic() value)."""
    write = write or sys.stdout.write

    def look() -> list:
        reports = [_status(cluster, ds, namespace_for(ds, namespace, cluster.default_namespace)) for ds in sets]
        write(_format([report for report, _ in reports], output))
        return [(report, snapshot) for report, snapshot in reports if not report.available]

    def wait_for_change(pending: list, seconds: float) -> bool:
        # Sleep on a watch of the first set still moving; any LWS event means "look again".
        report, snapshot = pending[0]
        return cluster.wait_for_change(report.name, report.namespace, snapshot.lws_resource_version, timeout=seconds)

    pending = None
    for pending in until_settled(look, lambda pending: not pending or not watch, wait_for_change, Deadline(deadline)):
        pass
    if not pending:
        return 0
    if not watch:
        return EXIT_NOT_AVAILABLE
    print("error: timed out waiting for the rollout to become Available", file=sys.stderr)
    return EXIT_TIMEOUT


def _status(cluster, ds: DisaggregatedSet, namespace: str):
    snapshot = cluster.snapshot(ds.name, namespace, scalers=ds.has_external_roles)
    return derive_status(ds, snapshot, reconcile(ds, snapshot)), snapshot


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _format(reports: list[SetStatus], output: str) -> str:
    now = _now()
    if output in ("yaml", "json"):
        return format_objects([to_document(report, now) for report in reports], output)
    return "\n".join(format_text(report, now) for report in reports)


def format_text(status: SetStatus, now: str) -> str:
    role_table = table(
        ["ROLE", "DESIRED", "REPLICAS", "READY", "UPDATED"],
        [[r.name, r.desired, r.replicas, r.ready, r.updated] for r in status.roles], indent="  ")
    slice_table = table(
        ["SLICE", "PHASE", "REVISIONS (replicas per role)", "STEP"],
        [[r.slice, r.phase.label, _revisions(r.revisions, status.revision), _position(r.position)]
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

