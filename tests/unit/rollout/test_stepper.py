"""`stepper.drive` over an in-memory executor: the loop of `rollout step --until-complete`
(lease held throughout, watch between passes, retry on conflict, deadline) without a cluster."""

from __future__ import annotations

import pytest

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.reconcile import Scale, write_units
from kubectl_disagg.rollout.stepper import Pass, PassInterrupted, Retry, drive
from tests.fakes.clock import FakeClock
from kubectl_disagg.wait import Deadline
from tests.fakes.cluster import MemoryCluster, MemoryExecutor
from tests.support.sets import make_set


def test_drive_runs_passes_until_complete_under_one_lease():
    executor = MemoryExecutor(MemoryCluster("serving"))
    old = make_set({"prefill": 2, "decode": 1})
    passes = list(drive(executor, old, "serving"))
    assert passes[-1].complete and not any(p.complete for p in passes[:-1])
    new = make_set({"prefill": 2, "decode": 1}, image="img:2")
    passes = list(drive(executor, new, "serving"))
    assert passes[-1].complete and passes[-1].reconciliation.slices[0].phase == "steady"
    assert [p.reconciliation.slices[0].phase for p in passes][0] == "rollout started"
    assert executor.leases == 2 and executor.watches > 0


def test_one_pass_and_dry_run():
    executor = MemoryExecutor(MemoryCluster("serving"))
    ds = make_set({"prefill": 1, "decode": 1})
    (dry,) = drive(executor, ds, "serving", dry_run="client")
    assert dry.dry_run and not dry.done and executor.leases == 0
    assert [planned.action for planned in dry.planned] == list(dry.reconciliation.actions)
    (once,) = drive(executor, ds, "serving", until_complete=False)
    assert once.done == once.reconciliation.actions and executor.leases == 1


def test_a_conflict_is_retried_with_a_fresh_read(monkeypatch):
    monkeypatch.setattr("kubectl_disagg.rollout.stepper.time.sleep", lambda seconds: None)
    executor = MemoryExecutor(MemoryCluster("serving"), conflicts=1)
    events = list(drive(executor, make_set({"prefill": 1, "decode": 1}), "serving"))
    assert isinstance(events[0], Retry) and "changed since it was read" in events[0].reason
    assert isinstance(events[-1], Pass) and events[-1].complete


def test_a_conflict_in_a_single_pass_interrupts_it():
    executor = MemoryExecutor(MemoryCluster("serving"), conflicts=1)
    with pytest.raises(PassInterrupted) as interrupted:
        list(drive(executor, make_set({"prefill": 1, "decode": 1}), "serving", until_complete=False))
    assert interrupted.value.partial.done == ()


def test_a_deadline_already_passed_runs_no_pass():
    executor = MemoryExecutor(MemoryCluster("serving"))
    assert list(drive(executor, make_set({"prefill": 1, "decode": 1}), "serving",
                      deadline=Deadline(5.0, FakeClock(10.0)))) == []


def test_a_pass_is_authorized_whole_before_its_first_write():
    executor = MemoryExecutor(MemoryCluster("serving"))
    (once,) = drive(executor, make_set({"prefill": 1, "decode": 1}), "serving", until_complete=False)
    assert executor.authorized == [len(once.reconciliation.actions)] and once.done


def test_a_refused_authorization_writes_nothing():
    from kubectl_disagg.errors import UserError

    executor = MemoryExecutor(MemoryCluster("serving"))

    def refuse(actions, namespace):
        raise UserError("forbidden: this pass needs permission to patch leaderworkersets")

    executor.authorize = refuse
    with pytest.raises(UserError, match="patch leaderworkersets"):
        list(drive(executor, make_set({"prefill": 1, "decode": 1}), "serving", until_complete=False))
    assert executor.cluster.lws() == {}


def test_wait_for_lease_queues_until_the_deadline_or_without_limit():
    executor = MemoryExecutor(MemoryCluster("serving"))
    ds = make_set({"prefill": 1, "decode": 1})
    list(drive(executor, ds, "serving", until_complete=False))
    list(drive(executor, ds, "serving", until_complete=False, wait_for_lease=True))
    list(drive(executor, ds, "serving", until_complete=False, wait_for_lease=True, deadline=Deadline(7.0)))
    assert executor.waits == [None, float("inf"), 7.0]


def _squat(cluster, obj, **metadata):
    """Someone else's object at a name the set will create: its own labels, its own manager."""
    squatter = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                "metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"], **metadata},
                "spec": {}}
    cluster.add(squatter)
    return squatter


@pytest.mark.parametrize("kind", ["LeaderWorkerSet", "Service"])
def test_a_name_held_by_a_foreign_object_refuses_the_whole_pass_before_any_write(kind):
    from kubectl_disagg.core.controller.render import render_set

    cluster = MemoryCluster("serving")
    executor = MemoryExecutor(cluster)
    ds = make_set({"prefill": 1, "decode": 1}, slices=3)
    # Slice 2's decode: the pass would write slices 0 and 1 (and slice 2's prefill) first.
    target = [o for o in render_set(ds, "serving") if o["kind"] == kind][-1]
    _squat(cluster, target, labels={"app": "other"},
           managedFields=[{"manager": "kubectl-create", "operation": "Update"}])
    before = dict(cluster.objects)
    (refused,) = drive(executor, ds, "serving", until_complete=False)
    assert refused.done == () and cluster.objects == before
    (reason,) = refused.refusal
    assert reason == (f"slice 2: {kind.lower()}/{target['metadata']['name']} exists and is not "
                      "disaggregatedset/llm's (no managed-by label; field managers kubectl-create); rename or delete it")
    # A dry run says the same, without writing either.
    (dry,) = drive(executor, ds, "serving", dry_run="client")
    assert dry.refusal == refused.refusal and cluster.objects == before


def test_another_sets_object_at_our_name_is_foreign_and_our_own_is_free():
    from kubectl_disagg.core.api import naming
    from kubectl_disagg.core.controller.render import render_set
    from kubectl_disagg.core.controller.snapshot import occupied_by_others

    ds = make_set({"prefill": 1, "decode": 1})
    lws = next(render_set(ds, "serving"))
    other = {**lws, "metadata": {**lws["metadata"], "labels": {**lws["metadata"]["labels"], naming.NAME_LABEL: "x"}}}
    key = ("LeaderWorkerSet", lws["metadata"]["name"])
    assert occupied_by_others(ds.name, {key: lws}) == {}
    assert occupied_by_others(ds.name, {key: other}) == {key: "managed-by label 'kubectl-disagg'; set label 'x'"}


def test_another_sets_object_is_refused_in_words_that_do_not_contradict_its_labels():
    """It read "not managed by kubectl-disagg (managed-by label 'kubectl-disagg')"."""
    from kubectl_disagg.core.api import naming
    from kubectl_disagg.core.controller.render import render_set

    cluster = MemoryCluster("serving")
    ds = make_set({"prefill": 1, "decode": 1})
    target = next(render_set(ds, "serving"))
    _squat(cluster, target, labels={**target["metadata"]["labels"], naming.NAME_LABEL: "other"})
    (refused,) = drive(MemoryExecutor(cluster), ds, "serving", until_complete=False)
    (reason,) = refused.refusal
    assert reason == (f"slice 0: leaderworkerset/{target['metadata']['name']} exists and is not disaggregatedset/llm's "
                      "(managed-by label 'kubectl-disagg'; set label 'other'); rename or delete it")


# --- a step that drains and scales up at once (issue 34, item 3) ------------------------------

# Two roles with maxSurge 0, maxUnavailable 1: the rollout's steps include design §5's drain+scale, in
# which the old group drains and the new one grows in the same pass.
DRAIN_AND_SCALE = dict(replicas={"prefill": 1, "decode": 3},
                       rolling={role: {"maxSurge": 0, "maxUnavailable": 1} for role in ("prefill", "decode")})


class RecordingExecutor(MemoryExecutor):
    """Every replica state, per role summed over revisions, after each write; `refuse(action)`
    says which write the "server" refuses (an admission policy), with a non-conflict error."""

    def __init__(self, cluster, refuse=lambda action: False):
        super().__init__(cluster)
        self.refuse, self.points, self.writes = refuse, [], []

    def totals(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for obj in self.cluster.lws().values():
            role = obj["metadata"]["labels"][naming.ROLE_LABEL]
            totals[role] = totals.get(role, 0) + obj["spec"]["replicas"]
        return totals

    def execute(self, action, namespace):
        from kubectl_disagg.errors import UserError

        if self.refuse(action):
            raise UserError(f"{action.kind.lower()}/{action.name}: admission webhook denied the request")
        super().execute(action, namespace)
        self.writes.append(action)
        self.points.append(self.totals())


def _rolled_to_drain_and_scale(executor):
    """A steady set, then its template changed, stepped until its next pass drains and scales."""
    list(drive(executor, make_set(**DRAIN_AND_SCALE), "serving"))
    new = make_set(**DRAIN_AND_SCALE, image="img:2")
    for _ in range(10):
        (step,) = drive(executor, new, "serving", dry_run="client")
        scales = [a for a in step.reconciliation.actions if isinstance(a, Scale)]
        if any(a.to_replicas < a.from_replicas for a in scales) and any(a.to_replicas > a.from_replicas for a in scales):
            return new, step
        list(drive(executor, new, "serving", until_complete=False))
        executor.cluster.settle()
    raise AssertionError("the rollout never reached a drain+scale step")


def test_a_drain_and_scale_step_drains_before_it_scales_up_in_one_unit():
    executor = RecordingExecutor(MemoryCluster("serving"))
    new, step = _rolled_to_drain_and_scale(executor)
    assert step.reconciliation.slices[0].step_kind == "drain+scale"
    scales = [a for a in step.reconciliation.actions if isinstance(a, Scale)]
    assert [a.to_replicas < a.from_replicas for a in scales] == sorted(
        (a.to_replicas < a.from_replicas for a in scales), reverse=True)  # every drain before every scale-up
    assert write_units(scales) == [tuple(scales)]  # one unit: it lands whole or is taken back
    before = executor.totals()
    executor.points.clear()
    (done,) = drive(executor, new, "serving", until_complete=False)
    after = executor.totals()
    for point in executor.points:  # no role passes through more than it starts or ends with
        assert all(point[role] <= max(before[role], after[role]) for role in point), (before, point, after)


@pytest.mark.parametrize("refused", ["drain", "scale-up"])
def test_a_refused_write_in_a_drain_and_scale_step_leaves_the_slice_as_it_was(refused):
    cluster = MemoryCluster("serving")
    new, step = _rolled_to_drain_and_scale(RecordingExecutor(cluster))
    before = {name: obj["spec"]["replicas"] for name, obj in cluster.lws().items()}

    def refuse(action):  # the last drain, or the last scale-up, of the unit
        scales = [a for a in step.reconciliation.actions if isinstance(a, Scale)]
        wanted = [a for a in scales if (a.to_replicas < a.from_replicas) == (refused == "drain")]
        return isinstance(action, Scale) and action.name == wanted[-1].name and action.to_replicas == wanted[-1].to_replicas

    executor = RecordingExecutor(cluster, refuse)
    with pytest.raises(PassInterrupted) as interrupted:
        list(drive(executor, new, "serving", until_complete=False))
    assert "admission webhook denied" in str(interrupted.value)
    assert {name: obj["spec"]["replicas"] for name, obj in cluster.lws().items()} == before
    assert any(note.startswith("undid: ") for note in interrupted.value.undo_notes)


# --- signals, a restarting API server, a permission revoked mid-unit (issue 34, item 5) -------


def _forbidden(action):
    from kubectl_disagg.kube.client.api_errors import api_error

    return api_error(f"{action.kind.lower()}/{action.name}", 403, "Forbidden",
                     '{"kind":"Status","code":403,"reason":"Forbidden","message":"patch is forbidden"}')


def _unreachable():
    from kubectl_disagg.errors import Unreachable

    return Unreachable("cannot reach the API server at https://127.0.0.1:1: connection refused")


def _groups(cluster) -> dict:
    groups: dict = {}
    for obj in cluster.lws().values():
        labels = obj["metadata"]["labels"]
        groups.setdefault((labels[naming.SLICE_LABEL], labels[naming.REVISION_LABEL]), []).append(
            obj["spec"]["replicas"])
    return groups


def _split(cluster) -> dict:
    return {group: counts for group, counts in _groups(cluster).items() if 0 in counts and any(counts)}


def _steady_then_changed(executor, slices=1):
    list(drive(executor, make_set({"prefill": 1, "decode": 1, "encode": 1}, slices=slices), "serving"))
    new = make_set({"prefill": 1, "decode": 1, "encode": 1}, slices=slices, image="img:2")
    list(drive(executor, new, "serving", until_complete=False))  # the rollout starts: new LWS at 0
    executor.cluster.settle()
    return new


def test_an_undo_refused_while_the_permission_is_revoked_is_sent_again_until_it_lands(monkeypatch):
    """patch revoked after the unit's first scale: the rest are refused (403), and so is the
    undo at first; given back, the undo lands and the group is whole again."""
    monkeypatch.setattr("kubectl_disagg.rollout.stepper.time.sleep", lambda seconds: None)
    executor = MemoryExecutor(MemoryCluster("serving"))
    new = _steady_then_changed(executor)
    writes, refused_undos = [], [3]
    execute = executor.execute

    def revoked(action, namespace):
        if writes and action.to_replicas < action.from_replicas and refused_undos[0]:
            refused_undos[0] -= 1
            raise _forbidden(action)  # the undo, while the permission is still revoked
        if writes and action.to_replicas > action.from_replicas:
            raise _forbidden(action)
        execute(action, namespace)
        writes.append(action)

    executor.execute = revoked
    with pytest.raises(PassInterrupted) as interrupted:
        list(drive(executor, new, "serving", until_complete=False))
    assert "forbidden" in str(interrupted.value) and refused_undos == [0]
    assert interrupted.value.undo_notes == [f"undid: {writes[0].describe()}"]
    assert not _split(executor.cluster)


def test_an_undo_gives_up_at_its_deadline_and_says_so(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr("kubectl_disagg.rollout.stepper.time.sleep", lambda seconds: setattr(clock, "seconds",
                                                                                            clock.seconds + seconds))
    executor = MemoryExecutor(MemoryCluster("serving"))
    new = _steady_then_changed(executor)
    writes = []
    execute = executor.execute

    def gone(action, namespace):
        if writes:
            raise _unreachable()
        execute(action, namespace)
        writes.append(action)

    executor.execute = gone
    with pytest.raises(PassInterrupted) as interrupted:
        list(drive(executor, new, "serving", until_complete=False, deadline=Deadline(None, clock)))
    notes = interrupted.value.undo_notes
    assert any(note.startswith("could not undo (cannot reach") for note in notes), notes
    assert 25 <= clock.seconds <= 31  # UNDO_PATIENCE_SECONDS, not one attempt


def test_until_complete_waits_out_an_api_server_restart(monkeypatch):
    """Reads and writes refused (connection refused) for a while, in the middle of a unit: the
    unit is taken back once the server answers, and the same run goes on to complete."""
    monkeypatch.setattr("kubectl_disagg.rollout.stepper.time.sleep", lambda seconds: None)
    executor = MemoryExecutor(MemoryCluster("serving"))
    new = _steady_then_changed(executor)
    down = {"requests": 0}
    execute, snapshot = executor.execute, executor.snapshot
    writes = []

    def maybe_down():
        if 0 < down["requests"] < 12:  # the server went away after the first write
            down["requests"] += 1
            raise _unreachable()

    def executing(action, namespace):
        maybe_down()
        execute(action, namespace)
        writes.append(action)
        down["requests"] = down["requests"] or len(writes) == 1

    def reading(*args, **kwargs):
        maybe_down()
        return snapshot(*args, **kwargs)

    executor.execute, executor.snapshot = executing, reading
    events = list(drive(executor, new, "serving"))
    retries = [e for e in events if isinstance(e, Retry)]
    assert retries and all("waiting for the API server" in r.reason for r in retries)
    assert isinstance(events[-1], Pass) and events[-1].complete


def test_an_interrupt_lets_the_unit_under_way_finish_and_starts_no_other():
    """Ctrl-C (or SIGTERM, which the command line makes one) during a unit's first write: the
    unit's other writes still land, the next slice's unit never starts, the interrupt goes on."""
    import signal
    import threading

    executor = MemoryExecutor(MemoryCluster("serving"))
    new = _steady_then_changed(executor, slices=2)
    execute, writes = executor.execute, []

    def interrupting(action, namespace):
        if not writes:
            # to the main thread itself: a process-wide kill may land on this worker thread, and
            # the main thread, blocked waiting, would see it only after the pass
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            import time
            time.sleep(0.1)  # ... while this write is still out
        execute(action, namespace)
        writes.append(action)

    executor.execute = interrupting
    # A shell that starts the tests in the background hands Python SIGINT ignored, and Python
    # then installs no handler: the test puts Python's own back for its run.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            list(drive(executor, new, "serving", until_complete=False))
    finally:
        signal.signal(signal.SIGINT, before)
    assert len(writes) == 3 and {w.slice for w in writes} == {0}  # one whole unit
    assert not _split(executor.cluster)


# --- an LWS that is not the one its revision renders (issue 34, item 4) -----------------------


def test_a_planted_lws_under_the_next_revisions_name_refuses_every_pass_and_is_never_scaled():
    from kubectl_disagg.core.controller.render import leader_worker_set

    cluster = MemoryCluster("serving")
    executor = MemoryExecutor(cluster)
    list(drive(executor, make_set({"prefill": 1, "decode": 1}), "serving"))
    new = make_set({"prefill": 1, "decode": 1}, image="img:2")
    for role in new.roles:  # someone else's, with our labels, before the rollout starts
        planted = leader_worker_set(new, role, 0, "serving", replicas=0)
        planted["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = "evil.example/miner"
        cluster.add(planted)
    before = {name: obj["spec"]["replicas"] for name, obj in cluster.lws().items()}
    (refused,) = drive(executor, new, "serving")
    assert refused.refusal and not refused.done and not refused.reconciliation.actions
    assert all(f"is not the one revision {new.revision} renders" in reason and "containers[0].image differs" in reason
               for reason in refused.refusal) and len(refused.refusal) == 2
    assert {name: obj["spec"]["replicas"] for name, obj in cluster.lws().items()} == before
    (planned,) = drive(executor, new, "serving", dry_run="client")
    assert planned.refusal == refused.refusal  # a dry run says so too


# --- what a dry run carries: the objects, as data (views/action_detail.py draws them) ----------


def test_a_dry_run_carries_each_actions_object_as_read_and_as_it_leaves_it():
    from kubectl_disagg.core.controller.reconcile import Annotate, Create, Delete

    cluster = MemoryCluster("serving")
    executor = MemoryExecutor(cluster)
    list(drive(executor, make_set({"prefill": 2, "decode": 1}, slices=2), "serving"))
    (scaled,) = drive(executor, make_set({"prefill": 3, "decode": 1}, slices=2), "serving", dry_run="client")
    (started,) = drive(executor, make_set({"prefill": 2, "decode": 1}, slices=2, image="img:2"), "serving",
                       dry_run="client")
    (shrunk,) = drive(executor, make_set({"prefill": 2, "decode": 1}, slices=1), "serving", dry_run="client")
    by_kind = {}
    for planned in (*scaled.planned, *started.planned, *shrunk.planned):
        by_kind.setdefault(type(planned.action), []).append(planned)
    assert set(by_kind) == {Scale, Annotate, Create, Delete}
    for planned in by_kind[Scale] + by_kind[Annotate]:
        live = scaled.snapshot.objects[(planned.action.kind, planned.action.name)]
        assert planned.before == live and planned.after != live
        assert {**planned.after, "spec": live["spec"], "metadata": live["metadata"]} == live  # only these move
    for planned in by_kind[Scale]:
        assert planned.after["spec"] == {**planned.before["spec"], "replicas": planned.action.to_replicas}
    for planned in by_kind[Annotate]:
        assert planned.after["metadata"]["annotations"] == {**(planned.before["metadata"].get("annotations") or {}),
                                                            **planned.action.annotations}
        assert "annotations" not in planned.before["metadata"]  # the live object read is left alone
    assert all(p.before is None and p.after is p.action.object for p in by_kind[Create])
    assert all(p.before is None and p.after is None for p in by_kind[Delete])


def test_a_pass_that_writes_carries_no_objects():
    executor = MemoryExecutor(MemoryCluster("serving"))
    (step,) = drive(executor, make_set({"prefill": 1, "decode": 1}), "serving", until_complete=False)
    assert step.done and all(p.before is None and p.after is None for p in step.planned)


def test_a_server_dry_runs_refusal_carries_the_api_servers_answer():
    from kubectl_disagg.kube.client.api_errors import api_error

    class Judging(MemoryExecutor):
        def execute(self, action, namespace, *, dry_run=False):
            if dry_run and action.kind == "LeaderWorkerSet":
                raise api_error(f"leaderworkerset/{action.name}", 422, "Unprocessable Entity",
                                '{"kind":"Status","code":422,"reason":"Invalid","message":"bad"}')

    (checked,) = drive(Judging(MemoryCluster("serving")), make_set({"prefill": 1, "decode": 1}), "serving",
                       dry_run="server")
    refused = checked.refused_writes
    assert refused and all(p.action.kind == "LeaderWorkerSet" for p in refused)
    assert all(p.answer == {"kind": "Status", "code": 422, "reason": "Invalid", "message": "bad"} for p in refused)
    assert all(p.answer is None for p in checked.planned if p.refusal is None)
