"""Status derived from live LWS (design §7): sums, conditions, and the per-slice detail."""

from __future__ import annotations

import dataclasses

from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.delivery.status import to_document
from kubectl_disagg.views.status_text import format_text
from tests.fakes.cluster import MemoryCluster
from tests.support.sets import NS, available_before_the_last_step, drive, make_set, status_of


NOW = "2026-11-29T12:00:00Z"


def test_available_once_every_role_is_ready_at_the_target_revision():
    cluster = MemoryCluster(NS)
    ds = make_set({"prefill": 2, "decode": 1}, slices=2)
    assert not status_of(ds, cluster).available  # nothing exists yet
    drive(ds, cluster)
    status = status_of(ds, cluster)
    assert status.available
    doc = to_document(status, NOW)["status"]
    assert doc["roleStatuses"] == [
        {"name": "prefill", "replicas": 4, "readyReplicas": 4, "updatedReplicas": 4},
        {"name": "decode", "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
    ]
    # The controller's order: Progressing (there from the start), then Available (added once true).
    assert [(c["type"], c["status"], c["reason"]) for c in doc["conditions"]] == [
        ("Progressing", "False", "AllRolesReady"), ("Available", "True", "AllRolesReady")]
    assert {c["message"] for c in doc["conditions"]} == {
        "All roles have reached their desired replica count, ready and updated to the current revision"}


def test_before_first_availability_only_progressing_with_the_controllers_message():
    cluster = MemoryCluster(NS)
    ds = make_set({"prefill": 2, "decode": 1})
    cluster.execute(reconcile(ds, cluster.snapshot("llm")).actions)
    cluster.settle(ready_cap=lambda name, replicas: 0 if name.endswith("decode") else replicas)
    (condition,) = to_document(status_of(ds, cluster), NOW)["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == ("Progressing", "True", "RolloutInProgress")
    assert condition["message"] == ("Not all roles have reached their desired replica count, ready and updated "
                                    "to the current revision")


def test_zero_counts_are_left_out_as_the_controller_omits_them():
    cluster = MemoryCluster(NS)
    ds = make_set({"prefill": 2, "decode": 1})
    cluster.execute(reconcile(ds, cluster.snapshot("llm")).actions)
    cluster.settle(ready_cap=lambda name, replicas: 0 if name.endswith("decode") else replicas)
    doc = to_document(status_of(ds, cluster), NOW)["status"]
    assert doc["roleStatuses"] == [{"name": "prefill", "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
                                   {"name": "decode", "replicas": 1, "updatedReplicas": 1}]
    assert "observedGeneration" not in doc  # a file has no generation


def test_a_stored_sets_generation_is_observed_in_status_and_every_condition():
    cluster = MemoryCluster(NS)
    ds = make_set({"prefill": 1, "decode": 1})
    drive(ds, cluster)
    stored = dataclasses.replace(ds, source=ds.source._replace(
        data={**ds.source.data, "metadata": {**ds.source.data["metadata"], "generation": 7}}))
    doc = to_document(status_of(stored, cluster), NOW)["status"]
    assert doc["observedGeneration"] == 7
    assert [c["observedGeneration"] for c in doc["conditions"]] == [7, 7]


def test_mid_rollout_counts_all_revisions_but_updated_only_the_target():
    cluster = MemoryCluster(NS)
    drive(make_set({"prefill": 2, "decode": 2}), cluster)
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    for _ in range(2):  # rollout started, then the first scale-up
        cluster.execute(reconcile(new, cluster.snapshot("llm")).actions)
        cluster.settle()
    status = status_of(new, cluster)
    assert not status.available
    prefill = status.roles[0]
    assert prefill.updated == 1 and prefill.replicas == 3 and prefill.desired == 2
    document = to_document(status, NOW)
    conditions = {c["type"]: c for c in document["status"]["conditions"]}
    assert conditions["Progressing"]["status"] == "True"
    assert conditions["Available"]["reason"] == "RolloutInProgress"
    (slice0,) = document["slices"]
    assert slice0["phase"] == "rolling" and slice0["rollout"]["position"].startswith("1/")
    assert len(slice0["revisions"]) == 2


def test_waiting_reasons_and_stale_status_are_reported():
    cluster = MemoryCluster(NS)
    drive(make_set({"prefill": 2, "decode": 1}), cluster)
    new = make_set({"prefill": 2, "decode": 1}, image="img:2")
    cluster.execute(reconcile(new, cluster.snapshot("llm")).actions)
    cluster.settle()
    cluster.execute(reconcile(new, cluster.snapshot("llm")).actions)
    stale = {n for n in cluster.lws() if n.endswith(new.revision + "-decode")}
    cluster.settle(stale=stale)
    status = status_of(new, cluster)
    assert status.stale == tuple(sorted(stale))
    assert any("status is stale" in w for w in status.waiting_for())
    text = format_text(status, NOW)
    assert "stale status: leaderworkerset/" in text
    assert "slice 0 waiting for: decode: status is stale" in text


def test_paused_set_is_available_once_drained():
    cluster = MemoryCluster(NS)
    paused = make_set({"prefill": 0, "decode": 0})
    drive(paused, cluster)
    assert status_of(paused, cluster).available


def test_text_report_layout():
    cluster = MemoryCluster(NS)
    ds = make_set({"prefill": 2, "decode": 1})
    drive(ds, cluster)
    text = format_text(status_of(ds, cluster), NOW)
    lines = text.splitlines()
    assert lines[0] == f"disaggregatedset/llm in {NS}, revision {ds.revision}: Available, complete"
    assert "  ROLE     DESIRED  REPLICAS  READY  UPDATED" in lines
    assert "  prefill  2        2         2      2" in lines
    assert any(line.startswith("  0      steady") for line in lines)


def test_slices_saying_the_same_thing_share_a_line():
    cluster = MemoryCluster(NS)
    ds = make_set({"prefill": 2, "decode": 1}, slices=4)
    cluster.execute(reconcile(ds, cluster.snapshot("llm")).actions)
    cluster.settle(ready_cap=lambda name, replicas: 0)
    text = format_text(status_of(ds, cluster), NOW)
    assert "  slices 0-3 waiting for: prefill: 0/2 ready; decode: 0/1 ready" in text
    # the slice table too: one row for the four (before: four rows alike)
    assert [line.split()[0] for line in text.splitlines() if line.endswith("  -")] == ["0-3"]
    conditions = [line for line in text.splitlines() if line.startswith("  Progressing=True")]
    assert conditions == ["  Progressing=True (RolloutInProgress): Not all roles have reached their desired "
                          "replica count, ready and updated to the current revision"]


def test_grouping_keeps_runs_apart():
    from kubectl_disagg.views.templating import grouped_by_slice
    assert grouped_by_slice([(0, "a"), (1, "a"), (2, "b"), (3, "a"), (5, "a")]) == [
        ("slices 0-1", "a"), ("slice 2", "b"), ("slice 3", "a"), ("slice 5", "a")]


# --- issue 37 item 12: Available is not complete while an old revision's LWS remain -----------


def test_issue37_item12_status_says_available_but_not_complete_until_the_old_lws_are_removed():
    old, new, cluster = available_before_the_last_step()
    status = status_of(new, cluster)
    assert status.available and not status.complete
    assert to_document(status, NOW)["complete"] is False
    assert format_text(status, NOW).splitlines()[0] == (
        f"disaggregatedset/llm in {NS}, revision {new.revision}: Available, not complete: revision {old.revision}'s "
        "LeaderWorkerSets remain in slices 0-1")
    drive(new, cluster)  # the last step: the drained revision goes
    status = status_of(new, cluster)
    assert status.complete and to_document(status, NOW)["complete"] is True
    assert format_text(status, NOW).splitlines()[0].endswith(f"revision {new.revision}: Available, complete")
