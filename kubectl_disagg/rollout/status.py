"""`rollout status` as one library call: read each set's live LWS, derive its status (with a
RolloutPolicy, from the paced position), hand the reports to the caller's view, and with
`watch` look again on every LWS change until every set is Available (`until` COMPLETE: until
its rollout is complete, the old revisions' LWS removed); the exit code (`exits.StatusExit`)
says how it ended.

How a look is printed is the caller's `format` (views/status.py, views/status_text.py): this
module makes no text.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace

from kubectl_disagg.core.model import DisaggregatedSet, namespace_for
from kubectl_disagg.core.reconcile import reconcile
from kubectl_disagg.core.status import SetStatus, Until, derive_status
from kubectl_disagg.exits import StatusExit
from kubectl_disagg.wait import Deadline, until_settled

Format = Callable[[list[SetStatus], str], str]  # the reports and the time of the look → the text printed


def watch_status(cluster, sets: list[DisaggregatedSet], namespace: str | None, format: Format, *,
                 watch: bool = False, deadline: float | None = None,
                 write: Callable[[str], object] | None = None, until: Until = Until.AVAILABLE) -> StatusExit:
    """Report every set (`write(format(reports, now))`); AVAILABLE when all have reached `until`
    (Available, or with COMPLETE their rollout complete), NOT_AVAILABLE when not (without
    `watch`); with `watch`, report again on every change until they have, or TIMEOUT at
    `deadline` (a time.monotonic() value)."""
    write = write or sys.stdout.write

    def look() -> list:
        reports = [_status(cluster, ds, namespace_for(ds, namespace, cluster.default_namespace)) for ds in sets]
        write(format([report for report, _ in reports], _now()))
        return [(report, snapshot) for report, snapshot in reports if not report.reached(until)]

    def wait_for_change(pending: list, seconds: float) -> bool:
        # Sleep on a watch of the first set still moving; any LWS event means "look again".
        report, snapshot = pending[0]
        return cluster.wait_for_change(report.name, report.namespace, snapshot.lws_resource_version, timeout=seconds)

    pending = None
    for pending in until_settled(look, lambda pending: not pending or not watch, wait_for_change, Deadline(deadline)):  # noqa: B007 (read after the loop)
        pass
    if not pending:
        return StatusExit.AVAILABLE
    return StatusExit.TIMEOUT if watch else StatusExit.NOT_AVAILABLE


def _status(cluster, ds: DisaggregatedSet, namespace: str):
    snapshot = cluster.snapshot(ds.name, namespace, scalers=ds.has_external_roles)
    if ds.policy is None:
        return derive_status(ds, snapshot, reconcile(ds, snapshot)), snapshot
    # A RolloutPolicy's position, read only; its machinery (waves, gates, the RolloutState object)
    # is loaded for a set with a policy only: status of a plain set does not pay for it.
    from kubectl_disagg.rollout.progressive import paced_view
    passage, lines = paced_view(cluster, ds, namespace, snapshot)
    status = derive_status(ds, snapshot, reconcile(passage.target, snapshot, passage.admission))
    return replace(status, rollout=lines), snapshot


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
