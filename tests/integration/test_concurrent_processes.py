"""Several operators at once: 2, 4 and 8 separate `kubectl-disagg rollout step --until-complete
--wait-for-lease` processes (the installed console script) on one set, the LWS simulator
playing the controller in the background.

A recorder watches every version of the namespace's LeaderWorkerSets and Leases. Replayed in
resourceVersion order (etcd's revision: one counter for every kind), it proves that every
stepper write landed while exactly one process held the set's Lease, that each process wrote
exactly what it reported (so no process wrote inside another's tenure: zero double steps), and
that the rollout invariants held at every observed point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kubernetes import client, watch

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.rollout_config import resolve_config
from kubectl_disagg.exits import StepExit
from kubectl_disagg.kube.lease import LEASE_PREFIX
from tests.support.stepping import SET, assert_matches_render, model, write_set

CONSOLE_SCRIPT = Path(sys.executable).parent / "kubectl-disagg"
KINDS = {"LeaderWorkerSet": ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
         "Lease": ("coordination.k8s.io", "v1", "leases")}


@dataclass(order=True)
class Event:
    resource_version: int  # etcd's revision: totally ordered across kinds
    kind: str = field(compare=False)
    type: str = field(compare=False)
    obj: dict = field(compare=False)


class Recorder:
    """Every change to the namespace's LWS and Leases, from one watch per kind."""

    def __init__(self, api_client, namespace: str):
        self.api = client.CustomObjectsApi(api_client)
        self.namespace = namespace
        self.events: list[Event] = []
        self.initial: dict[str, dict] = {}  # LWS name → object, before the recording starts
        self._stop = threading.Event()
        self._threads = []
        for kind, (group, version, plural) in KINDS.items():
            listed = self.api.list_namespaced_custom_object(group, version, namespace, plural)
            if kind == "LeaderWorkerSet":
                self.initial = {o["metadata"]["name"]: o for o in listed["items"]}
            start = listed["metadata"]["resourceVersion"]
            thread = threading.Thread(target=self._watch, args=(kind, start), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _watch(self, kind: str, resource_version: str) -> None:
        group, version, plural = KINDS[kind]
        while not self._stop.is_set():
            stream = watch.Watch().stream(self.api.list_namespaced_custom_object, group, version, self.namespace,
                                          plural, resource_version=resource_version, timeout_seconds=1)
            for event in stream:
                obj = event["object"]
                resource_version = obj["metadata"]["resourceVersion"]
                self.events.append(Event(int(resource_version), kind, event["type"], obj))

    def stop(self) -> list[Event]:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        return sorted(self.events)


def holder_pid(lease: dict) -> int | None:
    holder = (lease.get("spec") or {}).get("holderIdentity")
    return int(holder.split("/")[1]) if holder else None  # user@host/pid/random


def written_by_a_stepper(before: dict | None, after: dict | None) -> bool:
    """Creates, deletes, and changes to spec, labels or annotations; the simulator writes status only."""
    if before is None or after is None:
        return True

    def shape(obj):
        metadata = obj["metadata"]
        return obj.get("spec"), metadata.get("labels"), metadata.get("annotations")
    return shape(before) != shape(after)


def split_groups(objects: dict[str, dict]) -> set[tuple[str, str]]:
    """(slice, revision) groups with some roles at 0 replicas and others above."""
    groups: dict[tuple[str, str], list[int]] = {}
    for obj in objects.values():
        labels = obj["metadata"]["labels"]
        groups.setdefault((labels[naming.SLICE_LABEL], labels[naming.REVISION_LABEL]), []).append(
            obj["spec"].get("replicas", 1))
    return {key for key, counts in groups.items() if 0 in counts and any(counts)}


def check_surge(ds, objects: dict[str, dict], initial: dict[tuple[str, str], int]) -> None:
    totals: dict[tuple[str, str], int] = {}
    for obj in objects.values():
        labels = obj["metadata"]["labels"]
        key = (labels[naming.SLICE_LABEL], labels[naming.ROLE_LABEL])
        totals[key] = totals.get(key, 0) + obj["spec"].get("replicas", 1)
    for (slice_index, role_name), total in totals.items():
        role = next(r for r in ds.roles if r.name == role_name)
        surge = max(resolve_config(role.rolling_update, role.replicas).surge, 1)
        ceiling = max(role.replicas + surge, initial.get((slice_index, role_name), 0))
        assert total <= ceiling, f"slice {slice_index} role {role_name}: {total} > {ceiling}"


def replay(ds, recorder_initial: dict[str, dict], events: list[Event]) -> dict[int, int]:
    """Check every observed point; return the LWS writes attributed to each lease holder (pid)."""
    objects = {name: obj for name, obj in recorder_initial.items()
               if obj["metadata"]["labels"].get(naming.NAME_LABEL) == ds.name}
    initial: dict[tuple[str, str], int] = {}
    for obj in objects.values():
        labels = obj["metadata"]["labels"]
        key = (labels[naming.SLICE_LABEL], labels[naming.ROLE_LABEL])
        initial[key] = initial.get(key, 0) + obj["spec"].get("replicas", 1)
    lease_name = LEASE_PREFIX + ds.name
    holder = None
    writes: dict[int, int] = {}
    # Per slice, the stepper's writes to that slice in a row with one of its revision groups split:
    # slices are written concurrently (--max-in-flight), so another slice's writes may interleave.
    split_for: dict[str, int] = {}
    for event in events:
        if event.kind == "Lease":
            if event.obj["metadata"]["name"] != lease_name:
                continue
            new_holder = None if event.type == "DELETED" else holder_pid(event.obj)
            if new_holder != holder:
                assert not split_groups(objects), f"the lease changed hands with a group split: {event}"
            holder = new_holder
            continue
        name = event.obj["metadata"]["name"]
        before, after = objects.get(name), None if event.type == "DELETED" else event.obj
        if after is None:
            objects.pop(name, None)
        else:
            objects[name] = after
        if not written_by_a_stepper(before, after):
            continue
        assert holder is not None, f"{event.type} leaderworkerset/{name} at {event.resource_version} without a lease"
        writes[holder] = writes.get(holder, 0) + 1
        check_surge(ds, objects, initial)
        slice_label = event.obj["metadata"]["labels"][naming.SLICE_LABEL]
        split_here = any(key[0] == slice_label for key in split_groups(objects))
        split_for[slice_label] = split_for.get(slice_label, 0) + 1 if split_here else 0
        assert split_for[slice_label] < len(ds.roles), (
            f"a revision group of slice {slice_label} stayed split over {split_for[slice_label]} writes")
    return writes


def reported_lws_actions(stdout: str) -> int:
    """The LWS actions in a stream of `-o json` pass documents."""
    decoder, index, count = json.JSONDecoder(), 0, 0
    while index < len(stdout):
        if stdout[index].isspace():
            index += 1
            continue
        document, index = decoder.raw_decode(stdout, index)
        count += sum(a["kind"] == "LeaderWorkerSet" for s in document["slices"] for a in s["actions"])
    return count


@pytest.mark.parametrize("processes", [2, 4, 8])
def test_concurrent_until_complete_processes_never_double_step(stepper, tmp_path, lws_simulator, api_client,
                                                               processes):
    assert CONSOLE_SCRIPT.exists(), f"{CONSOLE_SCRIPT} not installed"
    shape = {"prefill": 3, "decode": 2}
    rolling = {"prefill": {"maxSurge": 1}, "decode": {"maxSurge": 1}}
    stepper.drive(write_set(tmp_path, stepper.namespace, shape, slices=2, rolling=rolling))
    path = write_set(tmp_path, stepper.namespace, shape, slices=2, rolling=rolling, image="img:2")
    ds = model(path)

    recorder = Recorder(api_client, stepper.namespace)
    argv = [str(CONSOLE_SCRIPT), "rollout", "step", "-f", str(path), "--kubeconfig",
            str(stepper.control_plane.kubeconfig), "--context", "admin", "--until-complete", "--wait-for-lease",
            "--timeout", "4m", "-o", "json"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    with lws_simulator.running(stepper.namespace, delay=0.05, interval=0.05):
        running = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                   for _ in range(processes)]
        finished = [(proc.pid, *proc.communicate(timeout=300), proc.returncode) for proc in running]
    events = recorder.stop()

    for pid, _, err, code in finished:
        assert code == StepExit.OK, f"process {pid}: {err}"
        assert "Traceback" not in err
    writes = replay(ds, recorder.initial, events)
    reported = {pid: reported_lws_actions(out) for pid, out, _, _ in finished}
    # Each process wrote, under its own tenure, exactly what it reported: nobody wrote in another's.
    assert {pid: count for pid, count in writes.items() if count} == {p: c for p, c in reported.items() if c}
    assert sum(reported.values()) > 0
    tenures = [holder_pid(e.obj) for e in events if e.kind == "Lease" and e.type != "DELETED"
               and e.obj["metadata"]["name"] == LEASE_PREFIX + SET]
    assert set(tenures) == set(reported), "every process queued for the lease and got it"
    assert_matches_render(ds, stepper.live)
