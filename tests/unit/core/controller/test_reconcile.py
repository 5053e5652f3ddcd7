"""Reconcile as data (design §4), driven to completion against an in-memory cluster."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.reconcile import (
    Annotate,
    Create,
    Delete,
    Phase,
    Reconciliation,
    Scale,
    SliceReport,
    reconcile,
)
from kubectl_disagg.core.controller.render import render_set
from tests.fakes.cluster import MemoryCluster
from tests.support.sets import NS, drive, groups_by_slice, make_set


def assert_matches_render(ds, cluster: MemoryCluster) -> None:
    wanted = {(o["kind"], o["metadata"]["name"]): o for o in render_set(ds)}
    live = {key: obj for key, obj in cluster.objects.items()}
    assert set(live) == set(wanted)
    for key, obj in wanted.items():
        assert live[key]["spec"] == obj["spec"], key
        assert live[key]["metadata"]["labels"] == obj["metadata"]["labels"], key


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster(NS)


def test_first_deploy_creates_every_lws_with_its_services(cluster):
    ds = make_set({"prefill": 2, "decode": 1}, slices=2)
    first = reconcile(ds, cluster.snapshot("llm"))
    assert sorted(type(a).__name__ for a in first.actions) == ["Create"] * 8
    # Per slice, the LWS first, then their Services (design §4.4: a revision's Services come with its LWS).
    assert [a.kind for a in first.actions] == ["LeaderWorkerSet"] * 2 + ["Service"] * 2 + \
        ["LeaderWorkerSet"] * 2 + ["Service"] * 2
    cluster.execute(first.actions)
    cluster.settle()
    assert reconcile(ds, cluster.snapshot("llm")).actions == ()
    drive(ds, cluster)
    assert_matches_render(ds, cluster)


def test_steady_state_scale_up_and_down_is_not_a_rollout(cluster):
    drive(make_set({"prefill": 2, "decode": 1}), cluster)
    bigger = make_set({"prefill": 5, "decode": 3})
    result = reconcile(bigger, cluster.snapshot("llm"))
    assert {(a.name.rsplit("-", 1)[-1], a.from_replicas, a.to_replicas) for a in result.actions} == {
        ("prefill", 2, 5), ("decode", 1, 3)}
    drive(bigger, cluster)
    smaller = make_set({"prefill": 1, "decode": 1})
    drive(smaller, cluster)
    assert_matches_render(smaller, cluster)


def test_a_scale_down_waits_until_the_lws_reports_its_groups_gone(cluster):
    # The real LWS controller observes a scale-down at once but reports the groups it is still
    # removing, ready, for a while: not settled until status.replicas comes down too.
    drive(make_set({"prefill": 2, "decode": 1}), cluster)
    smaller = make_set({"prefill": 1, "decode": 1})
    cluster.execute(reconcile(smaller, cluster.snapshot("llm")).actions)
    cluster.settle()
    prefill = next(o for name, o in cluster.lws().items() if name.endswith("-prefill"))
    prefill["status"].update(replicas=2, readyReplicas=1, updatedReplicas=2)
    result = reconcile(smaller, cluster.snapshot("llm"))
    assert not result.complete
    assert result.slices[0].waiting_for == ("prefill: 1 of 2 groups still being removed",)
    cluster.settle()
    assert reconcile(smaller, cluster.snapshot("llm")).complete


def test_template_change_follows_the_worked_check(cluster):
    """design §5's worked check, through reconcile: (5,2)→(5,2), surge 2, unavailable 1."""
    rolling = {"prefill": {"maxSurge": 2, "maxUnavailable": 1}, "decode": {"maxSurge": 2, "maxUnavailable": 1}}
    drive(make_set({"prefill": 5, "decode": 2}, rolling=rolling), cluster)
    new = make_set({"prefill": 5, "decode": 2}, image="img:2", rolling=rolling)
    history = drive(new, cluster)
    states = [(r.slices[0].old, r.slices[0].new) for r in history if r.slices[0].phase == "rolling"]
    assert states == [((5, 2), (0, 0)), ((5, 2), (2, 1)), ((4, 2), (2, 1)), ((3, 2), (4, 2)),
                      ((2, 1), (4, 2)), ((2, 1), (5, 2))]
    started = history[0]
    assert started.slices[0].phase == "rollout started"
    assert sum(isinstance(a, Annotate) for a in started.actions) == 2
    assert [a.object["spec"]["replicas"] for a in started.actions
            if isinstance(a, Create) and a.kind == "LeaderWorkerSet"] == [0, 0]
    assert_matches_render(new, cluster)


def test_position_is_reported(cluster):
    drive(make_set({"prefill": 2, "decode": 2}), cluster)
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    cluster.execute(reconcile(new, cluster.snapshot("llm")).actions)
    cluster.settle()
    report = reconcile(new, cluster.snapshot("llm")).slices[0]
    assert report.phase == "rolling" and report.position[0] == 0 and report.position[1] >= 2


def test_slices_advance_independently(cluster):
    drive(make_set({"prefill": 2, "decode": 1}, slices=2), cluster)
    new = make_set({"prefill": 2, "decode": 1}, slices=2, image="img:2")
    cluster.execute(reconcile(new, cluster.snapshot("llm")).actions)  # both slices start
    # Slice 1's new decode never becomes ready; slice 0 must finish anyway.
    def blocked(name, replicas):
        return 0 if name.startswith("llm-1-") and name.endswith(new.revision + "-decode") else replicas
    for _ in range(30):
        cluster.settle(ready_cap=blocked)
        result = reconcile(new, cluster.snapshot("llm"))
        cluster.execute(result.actions)
    result = reconcile(new, cluster.snapshot("llm"))
    assert result.slices[0].phase == "steady"
    assert result.slices[1].phase == "waiting"
    assert result.slices[1].waiting_for == ("decode: 0/1 ready",)
    groups = groups_by_slice(cluster)
    assert set(groups[0]) == {new.revision}
    assert len(groups[1]) == 2


def test_never_ready_waits_without_further_surge(cluster):
    drive(make_set({"prefill": 3, "decode": 3}), cluster)
    new = make_set({"prefill": 3, "decode": 3}, image="img:2")
    def never(name, replicas):
        return 0 if new.revision in name else replicas
    snapshots = []
    for _ in range(10):
        result = reconcile(new, cluster.snapshot("llm"))
        cluster.execute(result.actions)
        cluster.settle(ready_cap=never)
        snapshots.append(groups_by_slice(cluster)[0][new.revision])
    assert snapshots[-1] == snapshots[2]  # stopped moving after the first surge
    assert sum(snapshots[-1].values()) <= 2  # one surge per role at most
    report = reconcile(new, cluster.snapshot("llm")).slices[0]
    assert report.phase == "waiting" and report.actions == ()


def test_stale_status_waits(cluster):
    drive(make_set({"prefill": 2, "decode": 2}), cluster)
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    cluster.execute(reconcile(new, cluster.snapshot("llm")).actions)
    cluster.settle()
    cluster.execute(reconcile(new, cluster.snapshot("llm")).actions)  # first scale-up
    stale = {n for n in cluster.lws() if new.revision in n}
    cluster.settle(stale=stale)
    report = reconcile(new, cluster.snapshot("llm")).slices[0]
    assert report.phase == "waiting"
    assert any("status is stale" in reason for reason in report.waiting_for)


def test_paused_set_at_zero(cluster):
    paused = make_set({"prefill": 0, "decode": 0})
    history = drive(paused, cluster)
    assert all(o["spec"]["replicas"] == 0 for o in cluster.lws().values())
    # A paused revision keeps its Services (they list no pod): render emits them too.
    assert sum(k == "Service" for k, _ in cluster.objects) == 2
    assert history[-1].complete


def test_role_added_and_removed(cluster):
    drive(make_set({"prefill": 2, "decode": 2}), cluster)
    added = make_set({"encode": 1, "prefill": 2, "decode": 2})
    drive(added, cluster)
    assert_matches_render(added, cluster)
    removed = make_set({"prefill": 2, "decode": 2})
    history = drive(removed, cluster)
    rolling = [r.slices[0] for r in history if r.slices[0].phase == "rolling"]
    assert rolling[0].roles == ("prefill", "decode", "encode")  # removed roles come last, target 0
    assert_matches_render(removed, cluster)


def test_slices_raised_and_lowered(cluster):
    drive(make_set({"prefill": 1, "decode": 1}, slices=1), cluster)
    raised = make_set({"prefill": 1, "decode": 1}, slices=3)
    drive(raised, cluster)
    assert_matches_render(raised, cluster)
    lowered = make_set({"prefill": 1, "decode": 1}, slices=2)
    result = reconcile(lowered, cluster.snapshot("llm"))
    deleted = sorted(a.name for a in result.actions if isinstance(a, Delete))
    assert all(name.startswith("llm-2-") for name in deleted) and len(deleted) == 4
    drive(lowered, cluster)
    assert_matches_render(lowered, cluster)


def test_second_template_change_mid_rollout(cluster):
    drive(make_set({"prefill": 4, "decode": 2}), cluster)
    second = make_set({"prefill": 4, "decode": 2}, image="img:2")
    for _ in range(3):
        cluster.execute(reconcile(second, cluster.snapshot("llm")).actions)
        cluster.settle()
    assert len(groups_by_slice(cluster)[0]) == 2
    third = make_set({"prefill": 4, "decode": 2}, image="img:3")
    result = reconcile(third, cluster.snapshot("llm"))
    assert result.slices[0].phase == "rollout started"
    cluster.execute(result.actions)
    assert len(groups_by_slice(cluster)[0]) == 3  # three revisions at once
    drive(third, cluster)
    assert_matches_render(third, cluster)


def test_percent_configs_and_asymmetric_sizes(cluster):
    rolling = {"prefill": {"maxSurge": "25%", "maxUnavailable": "10%"}, "decode": {"maxSurge": "25%", "maxUnavailable": "10%"}}
    drive(make_set({"prefill": 10, "decode": 1}, rolling=rolling), cluster)
    new = make_set({"prefill": 10, "decode": 1}, image="img:2", rolling=rolling)
    drive(new, cluster)
    assert_matches_render(new, cluster)


def test_foreign_objects_with_colliding_labels_are_left_alone(cluster):
    ds = make_set({"prefill": 1, "decode": 1})
    foreign = copy.deepcopy(next(render_set(ds)))
    del foreign["metadata"]["labels"][naming.MANAGED_BY_LABEL]
    cluster.add(foreign)
    result = reconcile(ds, cluster.snapshot("llm"))
    assert any("left untouched" in w for w in result.warnings)
    assert result.slices[0].phase == "blocked"
    assert result.actions == ()
    assert "is not disaggregatedset/llm's (no managed-by label" in result.slices[0].blocked[0]


def test_foreign_object_of_another_name_is_ignored(cluster):
    ds = make_set({"prefill": 1, "decode": 1})
    foreign = copy.deepcopy(next(render_set(ds)))
    foreign["metadata"]["name"] = "someone-elses"
    foreign["metadata"]["labels"][naming.MANAGED_BY_LABEL] = "helm"
    cluster.add(foreign)
    drive(ds, cluster)
    assert cluster.objects[("LeaderWorkerSet", "someone-elses")]["spec"]["replicas"] == 1


def test_unexplainable_states_stop_everything(cluster):
    ds = make_set({"prefill": 1, "decode": 1})
    drive(ds, cluster)
    lws = copy.deepcopy(next(iter(cluster.lws().values())))
    lws["metadata"]["name"] = "llm-0-deadbeef-prefill"
    lws["metadata"].pop("uid")
    cluster.add(lws)  # labels say another revision than its name
    result = reconcile(ds, cluster.snapshot("llm"))
    assert result.actions == () and len(result.problems) == 2
    assert any("should be named" in p for p in result.problems)
    assert any("are both slice 0" in p for p in result.problems)


def test_actions_describe_themselves(cluster):
    ds = make_set({"prefill": 2, "decode": 1})
    result = reconcile(ds, cluster.snapshot("llm"))
    assert result.actions[0].describe() == f"create leaderworkerset/llm-0-{ds.revision}-prefill with 2 replicas"
    scale = Scale("x", 1, 2, "7", 0)
    assert scale.describe() == "scale leaderworkerset/x 1 → 2"


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_config = st.one_of(st.none(), st.fixed_dictionaries({
    "maxSurge": st.one_of(st.integers(0, 3), st.sampled_from(["0%", "25%", "50%", "100%"])),
    "maxUnavailable": st.one_of(st.integers(0, 3), st.sampled_from(["0%", "10%", "50%"])),
}))


def _scaled_both_zero(config: dict, replicas: int) -> bool:
    from kubectl_disagg.core.api.rollout_config import scale_int_or_percent
    return (scale_int_or_percent(config["maxSurge"], replicas, True) == 0
            and scale_int_or_percent(config["maxUnavailable"], replicas, False) == 0)


@st.composite
def rollouts(draw):
    names = ["encode", "prefill", "decode", "router"][: draw(st.integers(2, 4))]
    before = {n: draw(st.integers(1, 8)) for n in names}
    after = {n: draw(st.integers(1, 8)) for n in names}
    configs = {n: c for n in names if (c := draw(_config)) is not None}
    # A configuration that resolves to surge 0 and unavailable 0 is invalid: drop those.
    for n, c in list(configs.items()):
        if any(_scaled_both_zero(c, count) for count in (before[n], after[n])):
            configs.pop(n)
    slices = draw(st.integers(1, 2))
    return before, after, configs, slices


@settings(max_examples=60, deadline=None)
@given(rollouts())
def test_any_rollout_completes_within_invariants(case):
    before, after, configs, slices = case
    cluster = MemoryCluster(NS)
    drive(make_set(before, slices=slices, rolling=configs), cluster)
    new = make_set(after, slices=slices, image="img:2", rolling=configs)
    drive(new, cluster, max_passes=400)
    assert_matches_render(new, cluster)


def test_orphan_prevention_can_hold_one_replica_beyond_a_zero_surge(cluster):
    """design §5 as the controller implements it: decode (surge 0, unavailable 1) keeps its old
    replica while its new one is added, because draining it would orphan the other roles."""
    rolling = {"decode": {"maxSurge": 0, "maxUnavailable": 1}}
    drive(make_set({"encode": 2, "prefill": 1, "decode": 1}, rolling=rolling), cluster)
    new = make_set({"encode": 2, "prefill": 1, "decode": 1}, image="img:2", rolling=rolling)
    history = drive(new, cluster)
    states = [(r.slices[0].old, r.slices[0].new) for r in history if r.slices[0].phase == "rolling"]
    assert states[1] == ((2, 1, 1), (1, 1, 1))  # decode: old 1 + new 1 > target 1 + surge 0
    assert_matches_render(new, cluster)


def test_a_rollout_the_planner_cannot_finish_is_stalled_not_complete(cluster):
    """design §5's next_step((0,1), (0,1), (3,0), (1,1)) is None although decode still runs old:
    report it as stalled, never as complete."""
    old = make_set({"prefill": 1, "decode": 1})
    new = make_set({"prefill": 1, "decode": 1}, image="img:2")
    for ds, counts in ((old, {"prefill": 0, "decode": 1}), (new, {"prefill": 3, "decode": 0})):
        for role in ds.roles:
            obj = next(o for o in render_set(ds) if o["kind"] == "LeaderWorkerSet" and o["metadata"]["labels"][naming.ROLE_LABEL] == role.name)
            obj["spec"]["replicas"] = counts[role.name]
            cluster.add(obj)
    cluster.settle()
    result = reconcile(new, cluster.snapshot("llm"))
    (report,) = result.slices
    assert report.phase == "stalled" and not result.complete
    assert "no next step while old replicas remain" in report.waiting_for[0]
    assert [a for a in report.actions if a.kind == "LeaderWorkerSet"] == []  # only the missing Services


def test_a_rollout_start_cut_short_is_finished_not_waited_on(cluster):
    drive(make_set({"prefill": 2, "decode": 1}), cluster)
    new = make_set({"prefill": 2, "decode": 1}, image="img:2")
    start = reconcile(new, cluster.snapshot("llm"))
    last_lws = [a for a in start.actions if isinstance(a, Create) and a.kind == "LeaderWorkerSet"][-1]
    cluster.execute([a for a in start.actions if a is not last_lws])  # the last LWS create never landed
    cluster.settle()
    result = reconcile(new, cluster.snapshot("llm"))
    assert [a.describe() for a in result.actions] == [f"create leaderworkerset/llm-0-{new.revision}-decode with 0 replicas"]
    drive(new, cluster)
    assert_matches_render(new, cluster)


def test_renaming_every_role_drains_the_old_revision(cluster):
    drive(make_set({"prefill": 2, "decode": 2}), cluster)
    renamed = make_set({"prefill-v2": 2, "decode-v2": 2})
    history = drive(renamed, cluster)
    assert any(r.slices[0].phase == "rolling" for r in history)
    assert_matches_render(renamed, cluster)  # nothing of the old revision is left


def test_external_roles_are_sized_by_their_autoscaler(cluster):
    ds = make_set({"prefill": 3, "decode": 1})
    data_roles = [replace(r, external=True) if r.name == "decode" else r for r in ds.roles]
    ds = replace(ds, roles=tuple(data_roles))
    rendered = [o for o in render_set(ds) if o["kind"] == "LeaderWorkerSet"]
    assert "replicas" not in rendered[1]["spec"] and rendered[0]["spec"]["replicas"] == 3
    drive(ds, cluster)
    decode = next(n for n in cluster.lws() if n.endswith("-decode"))
    assert cluster.lws()[decode]["spec"]["replicas"] == 1  # the controller's seed
    cluster.lws()[decode]["spec"]["replicas"] = 4  # an HPA scaled it
    cluster.settle()
    assert reconcile(ds, cluster.snapshot("llm")).actions == ()  # not scaled back
    new = replace(ds, revision="f" * 8)
    history = drive(new, cluster)
    final = {n.rsplit("-", 1)[-1]: o["spec"]["replicas"] for n, o in cluster.lws().items()}
    assert final == {"prefill": 3, "decode": 4}  # the rollout kept the autoscaled size
    assert history[-1].complete


def test_a_garbled_initial_replicas_annotation_is_ignored(cluster):
    drive(make_set({"prefill": 2, "decode": 1}), cluster)
    for obj in cluster.lws().values():
        obj["metadata"]["annotations"] = {naming.INITIAL_REPLICAS_ANNOTATION: "²"}
    new = make_set({"prefill": 2, "decode": 1}, image="img:2")
    drive(new, cluster)
    assert_matches_render(new, cluster)


def test_the_pass_that_removes_the_drained_revision_reports_the_rollout_complete(cluster):
    old = make_set({"prefill": 2, "decode": 1})
    drive(old, cluster)
    new = make_set({"prefill": 2, "decode": 1}, image="img:2")
    phases = [r.slices[0].phase for r in drive(new, cluster)]
    assert phases[0] == "rollout started" and phases[-1] == "steady"
    assert phases[-2] == "complete"  # the old revision's groups go; nothing else is left to do
    assert "complete" not in phases[:-2]


# --- hardening: groups that lost a role, Services by revision lifetime, write units -------------


def _started_rollout(cluster, replicas=None):
    replicas = replicas or {"prefill": 2, "decode": 2}
    drive(make_set(replicas), cluster)
    new = make_set(replicas, image="img:2")
    cluster.execute(reconcile(new, cluster.snapshot("llm")).actions)  # rollout started
    cluster.settle()
    return new


def test_an_old_group_that_lost_a_role_is_drained_whole_and_reported(cluster):
    new = _started_rollout(cluster)
    old_prefill = next(k for k in cluster.objects if k[0] == "LeaderWorkerSet" and k[1].endswith("-prefill")
                       and new.revision not in k[1])
    del cluster.objects[old_prefill]  # deleted by hand: the old decode now runs alone
    result = reconcile(new, cluster.snapshot("llm"))
    (warning,) = result.warnings
    old_revision = old_prefill[1].split("-")[2]
    assert warning == (f"slice 0: revision {old_revision} is broken (no LeaderWorkerSet for prefill) while its other "
                       "roles run; the next drain takes the whole group to 0")
    drains = [a for a in result.actions if isinstance(a, Scale) and old_revision in a.name]
    assert [(a.name.rsplit("-", 1)[-1], a.to_replicas) for a in drains] == [("decode", 0)]
    history = drive(new, cluster)
    assert all(not r.warnings for r in history[1:])
    assert_matches_render(new, cluster)


def test_an_old_role_already_at_zero_triggers_the_coordinated_drain(cluster):
    new = _started_rollout(cluster)
    (old_decode,) = [o for k, o in cluster.objects.items() if k[0] == "LeaderWorkerSet"
                     and k[1].endswith("-decode") and new.revision not in k[1]]
    old_decode["spec"]["replicas"] = 0
    cluster.settle()
    result = reconcile(new, cluster.snapshot("llm"))
    assert "decode at 0 replicas" in result.warnings[0]
    old_scales = [a for a in result.actions if isinstance(a, Scale) and new.revision not in a.name]
    assert [(a.name.rsplit("-", 1)[-1], a.to_replicas) for a in old_scales] == [("prefill", 0)]


def test_services_live_as_long_as_their_revision_has_lws(cluster):
    new = _started_rollout(cluster, {"prefill": 1, "decode": 1})
    services = lambda: sorted(name for kind, name in cluster.objects if kind == "Service")  # noqa: E731
    revisions = lambda: {name.split("-")[2] for name in services()}  # noqa: E731
    assert len(revisions()) == 2  # the new revision's Services came with its LWS
    for result in drive(new, cluster):
        deleted_services = {a.name.split("-")[2] for a in result.actions if isinstance(a, Delete) and a.kind == "Service"}
        deleted_lws = {a.name.split("-")[2] for a in result.actions if isinstance(a, Delete) and a.kind != "Service"}
        assert deleted_services <= deleted_lws  # never before the revision's last LWS
    assert revisions() == {new.revision}
    assert_matches_render(new, cluster)


def test_write_units_keep_a_slices_step_together():
    from kubectl_disagg.core.controller.reconcile import undo, write_units

    c = Scale("llm-0-old-prefill", 2, 0, "3", 0, revision="old")
    d = Scale("llm-0-old-decode", 1, 0, "4", 0, revision="old")
    a = Scale("llm-0-new-prefill", 0, 1, "1", 0, revision="new")
    b = Scale("llm-0-new-decode", 0, 1, "2", 0, revision="new")
    e = Scale("llm-1-new-prefill", 0, 1, "5", 1, revision="new")
    delete = Delete("Service", "x", "u", "6", 0)
    assert write_units([c, d, a, b, e, delete]) == [(c, d, a, b), (e,), (delete,)]
    assert undo(a) == Scale("llm-0-new-prefill", 1, 0, "1", 0, revision="new")


def test_scale_and_annotate_patches_pin_the_replicas_they_read():
    from kubectl_disagg.kube.executor import annotate_patch, scale_patch
    from kubectl_disagg.core.controller.reconcile import Annotate

    assert scale_patch(Scale("x", 3, 1, "9", 0)) == [
        {"op": "test", "path": "/spec/replicas", "value": 3},
        {"op": "replace", "path": "/spec/replicas", "value": 1}]
    key = naming.INITIAL_REPLICAS_ANNOTATION
    assert annotate_patch(Annotate("x", {key: "3"}, "9", 0, 3, True)) == [
        {"op": "test", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/metadata/annotations/disaggregatedset.x-k8s.io~1initial-replicas", "value": "3"}]
    assert annotate_patch(Annotate("x", {key: "3"}, "9", 0, 3, False))[1] == {
        "op": "add", "path": "/metadata/annotations", "value": {key: "3"}}


def test_each_phase_has_its_words():
    """The words of a phase are defined on it, once: a status label and two sentences."""
    for phase in Phase:
        assert phase.label and phase.says("abc123") and phase.says("abc123", planned=True)
    assert Phase.ROLLOUT_STARTED.label == "rollout pending"  # where the slice stands: not started yet
    assert Phase.ROLLOUT_STARTED.says("abc123") == "rollout to revision abc123 started"
    assert Phase.ROLLOUT_STARTED.says("abc123", planned=True) == "the next step starts the rollout to revision abc123"
    assert Phase.WAITING.says("abc123", ("decode: 0/1 ready", "gate")) == "waiting: decode: 0/1 ready; gate"


def test_blocked_slice_refuses_the_whole_set():
    report = SliceReport(1, Phase.BLOCKED, {}, blocked=("service/x exists and is not managed by kubectl-disagg",))
    result = Reconciliation((Delete("Service", "y", "u", "1", 0),), (SliceReport(0, Phase.STEADY, {}), report))
    assert list(result.refusal) == ["slice 1: service/x exists and is not managed by kubectl-disagg"]
    assert list(Reconciliation((), (), problems=("bad",)).refusal) == ["bad"]


def test_a_broken_group_names_its_roles_in_spec_order():
    from types import SimpleNamespace

    from kubectl_disagg.core.controller.reconcile import broken_groups

    group = {"encode": SimpleNamespace(replicas=1), "prefill": SimpleNamespace(replicas=0),
             "decode": SimpleNamespace(replicas=0)}
    (warning,) = broken_groups(0, {"old": group}, {"old": {"prefill", "decode", "encode", "router"}}, "new",
                               ["router", "prefill", "decode", "encode"])
    assert "no LeaderWorkerSet for router; prefill, decode at 0 replicas" in warning


def without_services(ds):
    """`ds` annotated to leave the per-revision Services out (`kubectl-disagg/revision-services`)."""
    from kubectl_disagg.core.delivery.sets import load_sets
    from kubectl_disagg.manifests.reader import parse_stream
    from kubectl_disagg.manifests.writer import to_yaml

    data = copy.deepcopy(ds.source.data)
    data["metadata"].setdefault("annotations", {})[naming.REVISION_SERVICES_ANNOTATION] = "false"
    (annotated,) = load_sets(parse_stream(to_yaml(data), "ds.yaml"))
    return annotated


def test_issue47_item16_a_set_annotated_without_revision_services_renders_and_rolls_without_them():
    """Issue 47 item 16: the set's annotation leaves the `-prv` Services out everywhere: render,
    every pass of a rollout (none created, and ours deleted where a render with them left some),
    and status, which reads complete with none, as `render --no-revision-services` rendered it."""
    from tests.support.sets import status_of

    old = without_services(make_set({"prefill": 2, "decode": 1}, slices=2))
    new = without_services(make_set({"prefill": 2, "decode": 1}, image="img:2", slices=2))
    assert old.revision == make_set({"prefill": 2, "decode": 1}, slices=2).revision  # not a template change
    assert [o["kind"] for o in render_set(old, NS)] == ["LeaderWorkerSet"] * 4
    cluster = MemoryCluster(NS)
    for obj in render_set(make_set({"prefill": 2, "decode": 1}, slices=2), NS):  # deployed with its Services
        cluster.add(obj)
    cluster.settle()
    for passes in (drive(old, cluster), drive(new, cluster)):
        created = [a for result in passes for a in result.actions if getattr(a, "kind", "") == naming.SERVICE_KIND
                   and not isinstance(a, Delete)]
        assert created == []
    assert not [name for kind, name in cluster.objects if kind == naming.SERVICE_KIND]
    status = status_of(new, cluster)
    assert status.complete and status.settled
