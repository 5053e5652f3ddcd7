"""`step_report.format_text` and `to_document`: what a pass looks like to people and programs."""

from __future__ import annotations

from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.rollout.stepper import Pass, PlannedAction, plan_pass
from kubectl_disagg.views.step_report import format_text, to_document
from tests.fakes.cluster import MemoryCluster
from tests.fakes.cluster import MemoryExecutor
from tests.support.sets import make_set


def a_pass(ds, cluster: MemoryCluster, dry_run=None) -> Pass:
    """A dry run as `plan_pass` describes it, or a pass that carried out every action."""
    if dry_run:
        return plan_pass(MemoryExecutor(cluster), ds, "serving")
    snapshot = cluster.snapshot(ds.name)
    result = reconcile(ds, snapshot)
    return Pass(ds, "serving", snapshot, result, tuple(PlannedAction(a) for a in result.actions), done=result.actions)


def test_waiting_slice_says_what_it_waits_for():
    cluster = MemoryCluster("serving")
    old = make_set({"prefill": 2, "decode": 3}, slices=2)
    first = reconcile(old, cluster.snapshot("llm")).actions
    cluster.execute([a for a in first if a.kind == "LeaderWorkerSet"])  # Services not created yet
    cluster.settle(ready_cap=lambda name, replicas: 2 if name.startswith("llm-1-") and "decode" in name else replicas)
    step = a_pass(old, cluster)
    text = format_text(step)
    assert text.splitlines()[0] == f"disaggregatedset/llm in serving at revision {old.revision}: 4 changes made"
    assert "slice 0: steady\n  - create service/" in text
    assert "slice 1: waiting: decode: 2/3 ready\n  - create service/" in text  # serving while it waits
    assert format_text(step, progress=True) == (  # the fleet in one line, what it waits for last
        "llm: slice 1 in flight, 1 of 2 slices done; waiting: slice 1 (decode: 2/3 ready)\n")


def test_rolling_slice_shows_its_position_and_counts():
    cluster = MemoryCluster("serving")
    old = make_set({"prefill": 2, "decode": 1})
    for _ in range(3):
        cluster.execute(reconcile(old, cluster.snapshot("llm")).actions)
        cluster.settle()
    new = make_set({"prefill": 2, "decode": 1}, image="img:2")
    cluster.execute(reconcile(new, cluster.snapshot("llm")).actions)  # rollout started
    cluster.settle()
    text = format_text(a_pass(new, cluster))
    assert "slice 0: rolling, step 1/" in text and "(scale up) [old/new: prefill 2/0, decode 1/0]" in text


def test_dry_run_shows_diffs_and_objects():
    cluster = MemoryCluster("serving")
    old = make_set({"prefill": 2, "decode": 1})
    for _ in range(3):
        cluster.execute(reconcile(old, cluster.snapshot("llm")).actions)
        cluster.settle()
    new = make_set({"prefill": 3, "decode": 1})
    step = a_pass(new, cluster, dry_run="client")
    text = format_text(step)
    assert "dry run, 1 change planned, nothing changed" in text
    assert "    -  replicas: 2\n    +  replicas: 3\n" in text
    doc = to_document(step)
    assert doc["dryRun"] and doc["slices"][0]["actions"][0]["diff"].startswith("--- leaderworkerset/")

    fresh = MemoryCluster("serving")
    doc = to_document(a_pass(old, fresh, dry_run="client"))
    created = doc["slices"][0]["actions"][0]
    assert created["object"]["kind"] == "LeaderWorkerSet" and "diff" not in created
