"""The `rollout status` verb without its flags: read the live LWS, derive the status, print it,
and with --watch keep printing on every change until the set is Available.

How a look is printed is the caller's `format`: `data_format` here for -o yaml|json, or
`status_text.format_reports` (a Jinja2 template) for people; this module renders no template."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace

from kubectl_disagg.core.model import DisaggregatedSet, namespace_for
from kubectl_disagg.manifests.writer import format_objects
from kubectl_disagg.core.reconcile import reconcile
from kubectl_disagg.core.status import SetStatus, derive_status, to_document
from kubectl_disagg.wait import Deadline, until_settled
from kubectl_disagg.rollout.progressive import paced_view

EXIT_NOT_AVAILABLE = 3
EXIT_TIMEOUT = 4


Format = Callable[[list[SetStatus], str], str]  # the reports and the time of the look → the text printed


def show_status(cluster, sets: list[DisaggregatedSet], namespace: str | None, format: Format, *, watch: bool = False,
                deadline: float | None = None, write: Callable[[str], object] | None = None) -> int:
    """Report every set; the exit code: 0 when all are Available, EXIT_NOT_AVAILABLE when not
    (without `watch`); with `watch`, report again on every change until they are, or EXIT_TIMEOUT
    at `deadline` (a time.monotonic() value)."""
    write = write or sys.stdout.write

    def look() -> list:
        reports = [_status(cluster, ds, namespace_for(ds, namespace, cluster.default_namespace)) for ds in sets]
        write(format([report for report, _ in reports], _now()))
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
    if ds.policy is None:
        return derive_status(ds, snapshot, reconcile(ds, snapshot)), snapshot
    passage, lines = paced_view(cluster, ds, namespace, snapshot)  # a RolloutPolicy's position, read only
    status = derive_status(ds, snapshot, reconcile(passage.target, snapshot, passage.admission))
    return replace(status, rollout=lines), snapshot


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def data_format(output: str) -> Format:
    """-o yaml|json: each report as a DisaggregatedSet document with its status."""
    def format(reports: list[SetStatus], now: str) -> str:
        return format_objects([to_document(report, now) for report in reports], output)
    return format
