"""Driving the wave decisions over the in-memory cluster until the rollout holds still."""

from __future__ import annotations

import datetime

from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.delivery.waves import admit


T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)


def run_pass(ds, cluster, position, now):
    snapshot = cluster.snapshot(ds.name)
    passage = admit(ds, snapshot, position, now)
    result = reconcile(passage.reconciled, snapshot, passage.admission)
    return passage, result, snapshot


def until_held(ds, cluster, position, now=T0):
    """Passes (each executed and settled) until the rollout holds still: the last passage."""
    for _ in range(40):
        passage, result, _ = run_pass(ds, cluster, position, now)
        position = passage.decision.position
        if not result.actions:
            return passage
        cluster.execute(result.actions)
        cluster.settle()
    raise AssertionError("never held")
