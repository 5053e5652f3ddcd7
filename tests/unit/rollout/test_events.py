"""`events.events_for`: what a rollout's passes record, with the controller's reasons."""

from __future__ import annotations

from kubectl_disagg.rollout import events
from kubectl_disagg.rollout.stepper import drive
from tests.fakes.cluster import MemoryCluster
from tests.fakes.cluster import MemoryExecutor
from tests.support.sets import make_set

STORED = {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
          "metadata": {"name": "llm", "namespace": "serving", "uid": "u-1"}}


def recorded(ds, executor, regarding=None) -> list[events.StepEvent]:
    return [event for step in drive(executor, ds, "serving") for event in events.events_for(step, regarding)]


def test_a_rollout_records_start_scales_deletions_and_completion_on_the_stored_set():
    executor = MemoryExecutor(MemoryCluster("serving"))
    first = recorded(make_set({"prefill": 2, "decode": 1}), executor, events.set_reference(STORED))
    assert [e.reason for e in first] == [events.SCALING_UP, events.SCALING_UP]
    assert first[0].message.startswith("Created leaderworkerset/") and first[0].message.endswith("with 2 replicas")

    new = make_set({"prefill": 2, "decode": 1}, image="img:2")
    rollout = recorded(new, executor, events.set_reference(STORED))
    reasons = [e.reason for e in rollout]
    assert reasons[0] == events.ROLLING_UPDATE_STARTED
    assert rollout[0].message == f"Rolling update to revision {new.revision} started on slice 0"
    assert reasons[-3:] == [events.ROLLING_UPDATE_COMPLETED, events.LWS_DELETED, events.LWS_DELETED]
    assert {events.SCALING_UP, events.SCALING_DOWN} <= set(reasons)
    assert reasons.count(events.LWS_DELETED) == 2
    assert all(e.regarding == {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
                               "name": "llm", "namespace": "serving", "uid": "u-1"} for e in rollout)


def test_stepping_a_file_records_events_on_each_leaderworkerset():
    executor = MemoryExecutor(MemoryCluster("serving"))
    recorded(make_set({"prefill": 1, "decode": 1}), executor)
    new = make_set({"prefill": 1, "decode": 1}, image="img:2")
    rollout = recorded(new, executor)
    scales = [e for e in rollout if e.reason in (events.SCALING_UP, events.SCALING_DOWN)]
    assert scales and all(e.message.startswith(f"Scaled leaderworkerset/{e.regarding['name']} ") for e in scales)
    assert all(e.regarding["kind"] == "LeaderWorkerSet" and e.regarding["namespace"] == "serving" for e in rollout)
    started = next(e for e in rollout if e.reason == events.ROLLING_UPDATE_STARTED)
    assert started.regarding["name"] == f"llm-0-{new.revision}-prefill"


def test_dry_runs_and_idle_passes_record_nothing():
    executor = MemoryExecutor(MemoryCluster("serving"))
    ds = make_set({"prefill": 1, "decode": 1})
    (dry,) = drive(executor, ds, "serving", dry_run="client")
    assert events.events_for(dry) == []
    list(drive(executor, ds, "serving"))
    (idle,) = drive(executor, ds, "serving", until_complete=False)
    assert events.events_for(idle) == []


def test_event_object_is_an_events_k8s_io_v1_event():
    event = events.StepEvent(events.SCALING_DOWN, "Scaled x from 2 to 1",
                             events.lws_reference("llm-0-abc-prefill", "serving", "u-2"))
    body = events.event_object(event, "2026-01-02T03:04:05.000006Z", "ab12", "me@host/1/x")
    assert body["metadata"]["name"] == "llm-0-abc-prefill.ab12"
    assert (body["apiVersion"], body["action"], body["reason"], body["type"]) == (
        "events.k8s.io/v1", "Scale", "ScalingDown", "Normal")
    assert body["regarding"]["uid"] == "u-2" and body["reportingController"] == "kubectl-disagg"
