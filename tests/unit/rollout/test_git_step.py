"""`rollout step --gitops`'s pass without a cluster (rollout/git_step.py): each step, its wait,
the state it writes, the bad states it refuses, and adoption of a live fleet.

`MemoryArgo` plays Argo CD over a MemoryCluster (apply what render says, prune the rest) and
the LWS controller (settle status); each round commits the state `gitops_step` writes.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops.render import render_with_state
from kubectl_disagg.gitops.state import FORMAT_VERSION, parse_state, state_document
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from kubectl_disagg.rollout.git_step import Outcome, StateExecutor, gitops_step, looks
from kubectl_disagg.rollout.served import served_object
from kubectl_disagg.rollout.stepper import drive, run_pass
from kubectl_disagg.wait import Deadline
from tests.fakes.argo import MemoryArgo, assert_steady, deploy, roll, round_trip
from tests.fakes.clock import FakeClock
from tests.fakes.cluster import MemoryCluster, MemoryExecutor
from tests.support.gitops import Counted, external_set, mid_rollout, stepped
from tests.support.sets import NS, groups_by_slice, make_set

# --- the state document ---------------------------------------------------------------------


def test_first_step_creates_the_state_and_it_round_trips():
    ds = make_set({"prefill": 2, "decode": 1})
    step = gitops_step(ds, None, MemoryCluster(NS).snapshot(ds.name))
    assert step.outcome == Outcome.ADVANCED
    document = state_document(step.state)
    assert document["kind"] == "RolloutState" and document["formatVersion"] == FORMAT_VERSION
    assert document["slices"] == [{"slice": 0, "revisions": [
        {"revision": ds.revision, "replicas": {"prefill": 2, "decode": 1}}], "previous": []}]
    assert document["target"] == {"revision": ds.revision, "slices": 1, "roles": [
        {"name": "prefill", "replicas": 2, "maxSurge": 1, "maxUnavailable": 0},
        {"name": "decode", "replicas": 1, "maxSurge": 1, "maxUnavailable": 0}]}
    assert round_trip(step.state, ds) == step.state


def test_scale_changes_directly_and_a_slice_is_added_by_a_step():
    """Replicas apply at once in steady state; a slice the set gains is refused until a step
    records it (the state alone cannot tell a new slice from a recorded one deleted by hand)."""
    ds = make_set({"prefill": 2, "decode": 1})
    argo, state = deploy(ds)
    scaled = make_set({"prefill": 4, "decode": 1})
    assert render_with_state(scaled, state, NS) == list(render_set(scaled, NS))
    bigger = make_set({"prefill": 4, "decode": 1}, slices=2)
    with pytest.raises(UserError, match="slice 1 has no counts: the set has 2 slices"):
        render_with_state(bigger, state, NS)
    argo.sync(scaled, state)  # what the commit before synced
    argo.cluster.settle()
    step = gitops_step(bigger, state, argo.snapshot(bigger))
    assert step.outcome == Outcome.ADVANCED, step.reasons
    assert render_with_state(bigger, round_trip(step.state, bigger), NS) == list(render_set(bigger, NS))


def test_a_slice_gained_with_a_template_change_or_over_an_unsynced_step_is_added_by_the_next_step():
    """Render refuses the commit that grows the set, so Argo CD never syncs it: the step finds
    what runs (the committed state's render without the rollout that commit started, or the
    points before a step whose commit never synced) and records the new slice from there."""
    ds = make_set({"prefill": 2, "decode": 2})
    argo, state = deploy(ds)
    grown = make_set({"prefill": 2, "decode": 2}, image="img:2", slices=2)  # a template change too
    with pytest.raises(UserError, match="slice 1 has no counts"):
        argo.sync(grown, state)
    step = gitops_step(grown, state, argo.snapshot(grown))
    assert step.outcome == Outcome.ADVANCED, step.reasons
    started = round_trip(step.state, grown)
    assert list(started.replicas[0]) == [ds.revision, grown.revision] and list(started.replicas[1]) == [grown.revision]

    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    argo, state = deploy(ds)
    argo.sync(new, state)
    argo.cluster.settle()
    state = round_trip(gitops_step(new, state, argo.snapshot(new)).state, new)
    argo.sync(new, state)  # the step's commit syncs; the next one's will not
    argo.cluster.settle()
    unsynced = round_trip(gitops_step(new, state, argo.snapshot(new)).state, new)
    grown = make_set({"prefill": 2, "decode": 2}, image="img:2", slices=2)
    step = gitops_step(grown, unsynced, argo.snapshot(grown))
    assert step.outcome == Outcome.ADVANCED, step.reasons
    assert step.state.previous[0].replicas == state.replicas[0] and 1 in step.state.replicas
    argo.sync(grown, round_trip(step.state, grown))


# --- whole rollouts ---------------------------------------------------------------------------


@pytest.mark.parametrize("slices", [1, 2])
def test_gitops_rollout_follows_the_live_steppers_trajectory(slices):
    """One decision, two executors: git lands exactly the states the live stepper would."""
    old = make_set({"prefill": 2, "decode": 3}, slices=slices)
    new = make_set({"prefill": 2, "decode": 3}, image="img:2", slices=slices)
    argo, state = deploy(old)
    live_executor = MemoryExecutor(MemoryCluster(NS))
    list(drive(live_executor, old, NS))
    live_executor.cluster.settle()
    trajectory = []
    for _pass in drive(live_executor, new, NS):
        if not trajectory or trajectory[-1] != groups_by_slice(live_executor.cluster):
            trajectory.append(groups_by_slice(live_executor.cluster))
        live_executor.cluster.settle()
    seen = []
    for _ in range(50):
        argo.sync(new, state)
        seen.append(groups_by_slice(argo.cluster))
        argo.cluster.settle()
        step = gitops_step(new, state, argo.snapshot(new))
        if step.outcome == Outcome.COMPLETE:
            break
        state = round_trip(step.state, new)
    # git's first sync is the live stepper's first pass (rollout started); then pass for pass.
    assert seen == trajectory
    assert_steady(argo, new)
    assert list(state.revisions) == [new.revision]


def test_template_and_scale_change():
    argo, state = deploy(make_set({"prefill": 2, "decode": 2}))
    new = make_set({"prefill": 3, "decode": 4}, image="img:2")
    state, steps = roll(argo, new, state)
    assert_steady(argo, new)
    assert len(steps) > 3


def test_second_template_change_mid_rollout():
    argo, state = deploy(make_set({"prefill": 3, "decode": 3}))
    second = make_set({"prefill": 3, "decode": 3}, image="img:2")
    for _ in range(2):
        argo.sync(second, state)
        argo.cluster.settle()
        state = round_trip(gitops_step(second, state, argo.snapshot(second)).state, second)
    assert len(state.replicas[0]) == 2
    third = make_set({"prefill": 3, "decode": 3}, image="img:3")
    state, _ = roll(argo, third, state)
    assert_steady(argo, third)
    assert list(state.revisions) == [third.revision]


def test_the_live_rollout_state_must_be_the_committed_one():
    # Where the cluster serves the kind, the state object Argo CD applied is read back: LWS that
    # happen to match are not enough while it is another commit's (a sync under way, a wave).
    argo, state = deploy(make_set({"prefill": 2, "decode": 2}))
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    argo.sync(new, state)
    argo.cluster.settle()
    first = round_trip(gitops_step(new, state, argo.snapshot(new), argo.served).state, new)
    argo.sync(new, first)
    argo.cluster.settle()
    stale = served_object(new, state)
    waiting = gitops_step(new, first, argo.snapshot(new), stale)
    assert waiting.outcome == Outcome.WAITING
    assert waiting.reasons == ("rolloutstate/llm: live commits, revisions, slices, target differ from the committed state "
                               "(not synced)",)
    assert gitops_step(new, first, argo.snapshot(new)).outcome == Outcome.ADVANCED  # the LWS alone: synced
    assert gitops_step(new, first, argo.snapshot(new), argo.served).outcome == Outcome.ADVANCED
    # What the API server and Argo CD add (metadata, the summary) is not the document.
    applied = {**argo.served, "metadata": {**argo.served["metadata"], "uid": "x", "annotations": {"a": "b"}},
               "rollout": {"phase": "Rolling"}}
    assert gitops_step(new, first, argo.snapshot(new), applied).outcome == Outcome.ADVANCED


def test_step_waits_until_the_state_is_synced_and_ready():
    argo, state = deploy(make_set({"prefill": 2, "decode": 2}))
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    not_synced = gitops_step(new, state, argo.snapshot(new))
    assert not_synced.outcome == Outcome.WAITING and not_synced.state is state
    assert any("not synced" in reason or "not live" in reason for reason in not_synced.reasons)
    argo.sync(new, state)
    argo.cluster.settle()
    first = gitops_step(new, state, argo.snapshot(new))
    assert first.outcome == Outcome.ADVANCED
    argo.sync(new, first.state)
    argo.cluster.settle(ready_cap=lambda name, replicas: 0)  # synced, not ready
    waiting = gitops_step(new, first.state, argo.snapshot(new))
    assert waiting.outcome == Outcome.WAITING and waiting.state is first.state
    assert any("ready" in reason for reason in waiting.reasons)


def test_adopting_a_set_deployed_by_rollout_step():
    old = make_set({"prefill": 2, "decode": 2})
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    live = MemoryExecutor(MemoryCluster(NS))
    list(drive(live, old, NS))
    live.cluster.settle()
    run_pass(live, new, NS)  # the rollout started live
    live.cluster.settle()
    run_pass(live, new, NS)
    live.cluster.settle()
    adopted = gitops_step(new, None, live.cluster.snapshot(new.name))
    assert adopted.outcome == Outcome.ADVANCED
    state = round_trip(adopted.state, new)
    assert set(state.revisions) == {old.revision, new.revision}
    # The adopted state renders exactly the live objects.
    rendered = {o["metadata"]["name"]: o for o in render_with_state(new, state, NS)}
    for (_kind, name), obj in live.cluster.objects.items():
        assert rendered[name]["spec"] == obj["spec"], name
    argo = MemoryArgo()
    argo.cluster = live.cluster
    roll(argo, new, state)
    assert_steady(argo, new)


def test_adoption_records_no_metadata_the_sync_stamped():
    old = make_set({"prefill": 2, "decode": 2})
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    live = MemoryExecutor(MemoryCluster(NS))
    list(drive(live, old, NS))
    live.cluster.settle()
    for obj in live.cluster.lws().values():  # what Argo CD and the plugin put on what they sync
        obj["metadata"]["labels"].update({"app.kubernetes.io/instance": "llm", "argocd.argoproj.io/x": "y"})
        obj["metadata"].setdefault("annotations", {}).update({
            "kubectl-disagg/source-revision": "4f1c2b7", "argocd.argoproj.io/tracking-id": "llm:x"})
    run_pass(live, new, NS)
    live.cluster.settle()
    state = gitops_step(new, None, live.cluster.snapshot(new.name)).state
    document = to_yaml(state_document(state))
    assert "argocd.argoproj.io" not in document and "app.kubernetes.io/instance" not in document
    assert "source-revision" not in document


def test_state_executor_lands_reconciles_actions_in_the_state():
    old = make_set({"prefill": 2, "decode": 2})
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    argo, state = deploy(old)
    argo.sync(new, state)
    argo.cluster.settle()
    snapshot = argo.snapshot(new)
    executor = StateExecutor(new, state, snapshot)
    result = reconcile(new, snapshot)
    for action in result.actions:
        executor.execute(action, NS)
    after = executor.state()
    assert after.replicas[0][new.revision] == {"prefill": 1, "decode": 1}
    assert sum(after.replicas[0][old.revision].values()) <= 4


def next_step(*args, **kwargs):
    """The step a git step's looks end with (`looks`), and whether --wait gave up: its last look unsettled."""
    *_, last = looks(*args, **kwargs)
    return last.kept, not last.settled


def test_wait_watches_the_lws_until_the_step_can_advance():
    argo, state = deploy(make_set({"prefill": 2, "decode": 2}))
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    clock = [0.0]

    def synced():
        argo.sync(new, state)
        argo.cluster.settle()

    cluster = argo.watched([None, synced], clock)
    step, timed_out = next_step(cluster, new, state, NS, wait=True, deadline=Deadline(600.0, FakeClock(read=lambda: clock[0])))
    assert step.outcome == Outcome.ADVANCED and not timed_out
    assert cluster.watches == [60.0, 60.0]  # a quiet watch is watched again, 60 s at a time
    (once, timed_out) = next_step(argo.watched([], clock), new, step.state, NS)
    assert once.outcome == Outcome.WAITING and not timed_out  # without --wait: one look


def test_wait_watches_the_rollout_state_too_so_a_sync_that_writes_it_last_wakes_the_step():
    """Found by the driver (issue 49): the watch between looks saw the LWS only, so a sync whose
    last write was the RolloutState object left the step asleep until --timeout. Each watch now
    names the RolloutState's resourceVersion as the look read it ("" for none)."""
    argo, state = deploy(make_set({"prefill": 2, "decode": 2}))
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    clock = [0.0]
    argo.served = {**(argo.served or {}), "metadata": {**((argo.served or {}).get("metadata") or {}),
                                                         "resourceVersion": "41"}}
    cluster = argo.watched([None], clock)
    next_step(cluster, new, state, NS, wait=True, deadline=Deadline(90.0, FakeClock(read=lambda: clock[0])))
    assert cluster.state_versions and set(cluster.state_versions) == {"41"}


def test_one_git_step_replays_its_pass_once_and_its_views_neither_plan_nor_render(monkeypatch):
    """Issue 30: a git step reconciles the live LWS once (the pass), replays once (the design §8 check
    of the committed state, which every slice moved), and checks the state it writes against
    that pass instead of replaying it again; the summary, -o yaml and the pull request read what
    the step computed. Before: three reconciles (the committed check, the pass, the check of
    the new state) and the pull request planned again."""
    from kubectl_disagg.core.controller import planner
    from kubectl_disagg.gitops import render, rules
    from kubectl_disagg.rollout import stepper
    from kubectl_disagg.views import gitops_pr, gitops_report

    argo, new, state = mid_rollout()
    replays = Counted(monkeypatch, rules, "replay")
    passes = Counted(monkeypatch, stepper, "reconcile")
    renders = Counted(monkeypatch, render, "rendered")
    step, timed_out = next_step(argo.watched([], [0.0]), new, state, NS)
    assert step.outcome == Outcome.ADVANCED and not timed_out, step
    assert (replays.calls, passes.calls, renders.calls) == (1, 1, 1)
    assert set(step.state.previous) == {0, 1, 2} and all(step.state.previous[s] != state.previous[s] for s in range(3))

    def refused(*args, **kwargs):
        raise AssertionError("a view planned or rendered")
    for module, name in ((planner, "plan"), (render, "rendered"), (render, "render_with_state")):
        monkeypatch.setattr(module, name, refused)
    assert not hasattr(gitops_pr, "planner") and not hasattr(gitops_pr, "rendered")
    text = gitops_report.format_pr_description(new, NS, step, "f") + gitops_report.format_summary(new, NS, step, "f")
    gitops_report.to_document(new, NS, step, "f")
    assert "rollout to " in text and "step 3 of 4" in text and "slices 0-2: step 3/4" in text
    assert (replays.calls, passes.calls) == (1, 1)


def test_a_step_whose_pass_cannot_stand_for_the_replay_is_replayed(monkeypatch):
    """Where the set the state's target names does not decide as the one the pass reconciled
    (here its budgets), the check replays the step as render will."""
    from kubectl_disagg.gitops import rules
    from kubectl_disagg.rollout import git_step as steps

    argo, new, state = mid_rollout(slices=1)
    replays = Counted(monkeypatch, rules, "replay")
    monkeypatch.setattr(steps, "_decides", lambda ds: id(ds))  # no two sets alike
    step = gitops_step(new, state, argo.snapshot(new))
    assert step.outcome == Outcome.ADVANCED and replays.calls == 2


def test_wait_gives_up_at_the_deadline_waiting():
    argo, state = deploy(make_set({"prefill": 2, "decode": 2}))
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    clock = [0.0]
    cluster = argo.watched([], clock)
    step, timed_out = next_step(cluster, new, state, NS, wait=True, deadline=Deadline(90.0, FakeClock(read=lambda: clock[0])))
    assert step.outcome == Outcome.WAITING and timed_out and cluster.watches == [60.0, 30.0]


# --- bad input --------------------------------------------------------------------------------


def _bad(edit, ds=None, state=None):
    ds = ds or make_set({"prefill": 2, "decode": 1})
    state = state or gitops_step(ds, None, MemoryCluster(NS).snapshot(ds.name)).state
    document = state_document(state)
    edit(document)
    (parsed,) = parse_stream(to_yaml(document), "disagg-rollout-state.yaml")
    with pytest.raises(UserError) as raised:
        render_with_state(ds, parse_state(parsed, ds, NS), NS)
    return raised.value.lines()


def test_newer_format_is_refused_with_file_line_and_field():
    lines = _bad(lambda d: d.update(formatVersion=FORMAT_VERSION + 1))
    assert lines[0].startswith("disagg-rollout-state.yaml:") and "formatVersion: written by a newer" in lines[0]


def test_another_set_or_namespace():
    lines = _bad(lambda d: d["metadata"].update(name="other", namespace="elsewhere"))
    assert any("metadata.name" in line for line in lines) and any("metadata.namespace" in line for line in lines)


def test_a_revision_the_state_cannot_explain():
    def edit(d):
        d["revisions"][0]["roles"][0]["spec"]["leaderWorkerTemplate"]["size"] = 7
    (line,) = _bad(edit)
    assert "revisions[0].revision" in line and "cannot explain" in line
    (line,) = _bad(lambda d: d["slices"][0]["revisions"][0].update(revision="deadbeef"))
    assert "slices[0].revisions[0].revision" in line and "no record" in line


def test_hand_edited_replicas_that_split_a_group_or_break_the_surge_bound():
    line, step = _bad(lambda d: d["slices"][0]["revisions"][0]["replicas"].update(decode=0))
    assert "some roles at 0" in line and ":" in line.split(" ")[0]
    assert "not one planner step" in step
    old, new = make_set({"prefill": 2, "decode": 1}), make_set({"prefill": 2, "decode": 1}, image="img:2")
    argo, state = deploy(old)
    argo.sync(new, state)
    argo.cluster.settle()
    rolling = gitops_step(new, state, argo.snapshot(new)).state
    assert list(rolling.replicas[0]) == [old.revision, new.revision]
    line, step = _bad(lambda d: d["slices"][0]["revisions"][1]["replicas"].update(prefill=2), new, rolling)
    assert "slices[0].revisions[0].replicas.prefill" in line and "surge allows (3)" in line
    assert "slices[0].revisions" in step and "one step at a time" in step
    assert line.startswith("disagg-rollout-state.yaml:") and line.split(":")[1].isdigit()


def test_render_refuses_a_bad_state_with_nothing_on_stdout(tmp_path, capsys):
    from kubectl_disagg.cli import main

    ds = make_set({"prefill": 2, "decode": 1})
    (tmp_path / "llm.yaml").write_text(to_yaml(ds.source.data))
    state = gitops_step(ds, None, MemoryCluster(NS).snapshot(ds.name)).state
    document = state_document(state)
    document["formatVersion"] = 99
    (tmp_path / "disagg-rollout-state.yaml").write_text(to_yaml(document))
    with pytest.raises(SystemExit) as exited:
        main(["render", "-f", str(tmp_path)])
    out, err = capsys.readouterr()
    assert exited.value.code == 1 and out == ""
    assert err.startswith(f"{tmp_path / 'disagg-rollout-state.yaml'}:") and "formatVersion" in err
    document["formatVersion"] = FORMAT_VERSION
    (tmp_path / "disagg-rollout-state.yaml").write_text(to_yaml(document))
    with pytest.raises(SystemExit) as exited:
        main(["render", "-f", str(tmp_path)])
    out, err = capsys.readouterr()
    assert exited.value.code == 0 and "RolloutState" not in out and "LeaderWorkerSet" in out
    with pytest.raises(SystemExit) as exited:
        main(["render", "-f", str(tmp_path / "llm.yaml"), "--require-state"])
    assert exited.value.code == 0
    capsys.readouterr()
    (tmp_path / "disagg-rollout-state.yaml").unlink()
    with pytest.raises(SystemExit) as exited:
        main(["render", "-f", str(tmp_path / "llm.yaml"), "--require-state"])
    out, err = capsys.readouterr()
    assert exited.value.code == 1 and out == "" and "no rollout state" in err


def test_external_role_renders_without_replicas_at_rest_and_keeps_its_size_through_a_rollout():
    old = external_set("img:1")
    argo = MemoryArgo()
    state, _ = roll(argo, old, None)
    decode = [o for o in argo.cluster.lws().values() if o["metadata"]["labels"][naming.ROLE_LABEL] == "decode"]
    assert [o["spec"]["replicas"] for o in decode] == [1]  # the seed
    decode[0]["spec"]["replicas"] = 3  # the autoscaler grew it
    assert all(o["metadata"]["annotations"][naming.REPLICAS_OWNER_ANNOTATION] == "autoscaler"
               for o in render_with_state(old, state, NS)
               if o["kind"] == "LeaderWorkerSet" and "decode" in o["metadata"]["name"])
    after, steps = roll(argo, old, state)  # the autoscaler's size is synced: nothing to commit
    assert [s.outcome for s in steps] == [Outcome.COMPLETE] and after == state
    assert [o["spec"]["replicas"] for o in decode] == [3]
    new = external_set("img:2")
    state, _ = roll(argo, new, state)
    sizes = {o["metadata"]["labels"][naming.ROLE_LABEL]: o["spec"]["replicas"] for o in argo.cluster.lws().values()}
    assert sizes == {"prefill": 2, "decode": 3}
    assert list(state.revisions) == [new.revision]


def test_an_external_role_is_handed_back_through_handing_back():
    """The replicas-owner annotation of the External role's LWS, state after state: the
    autoscaler's at rest, the state's during the rollout, `handing-back` at the first state at
    rest (Argo CD applies the state's count, and the live object takes the annotation), then
    the autoscaler's again; at no synced point does the role run less than it did."""
    old, new = external_set("img:1"), external_set("img:2")
    argo = MemoryArgo()
    state, _ = roll(argo, old, None)
    for lws in argo.cluster.lws().values():
        if lws["metadata"]["labels"][naming.ROLE_LABEL] == "decode":
            lws["spec"]["replicas"] = 3  # the autoscaler grew it
    owners, sizes = [], []
    for _ in range(30):
        rendered = [o for o in render_with_state(new, state, NS) if o["kind"] == "LeaderWorkerSet"
                    and o["metadata"]["labels"][naming.ROLE_LABEL] == "decode"]
        owner = {(o["metadata"].get("annotations") or {}).get(naming.REPLICAS_OWNER_ANNOTATION) for o in rendered}
        if not owners or owners[-1] != owner:
            owners.append(owner)
        argo.sync(new, state)
        sizes.append(sum(o["spec"]["replicas"] for o in argo.cluster.lws().values()
                         if o["metadata"]["labels"][naming.ROLE_LABEL] == "decode"))
        argo.cluster.settle()
        step = gitops_step(new, state, argo.snapshot(new), argo.served)
        if step.outcome == Outcome.COMPLETE:
            break
        assert step.outcome == Outcome.ADVANCED, step
        state = round_trip(step.state, new)
    assert owners == [{naming.REPLICAS_OWNER_AUTOSCALER, None}, {None}, {naming.REPLICAS_OWNER_HANDING_BACK},
                      {naming.REPLICAS_OWNER_AUTOSCALER}]
    assert min(sizes) >= 3 and sizes[-1] == 3, sizes
    (decode,) = [o for o in argo.cluster.lws().values() if o["metadata"]["labels"][naming.ROLE_LABEL] == "decode"]
    decode["spec"]["replicas"] = 5  # the autoscaler has it back: a sync keeps it, no commit
    argo.sync(new, state)
    argo.cluster.settle()
    assert decode["spec"]["replicas"] == 5
    assert gitops_step(new, state, argo.snapshot(new), argo.served).outcome == Outcome.COMPLETE


def test_a_role_made_external_at_rest_renders_handing_back_then_the_autoscalers():
    """External is no part of the revision, so making a role External at rest keeps its LWS:
    the state sized it until then (Argo CD's field manager owns its replicas), so the first
    render says `handing-back` at the state's count, and the step after the sync hands it back
    (the record then marks the role External) to render `autoscaler`."""
    fixed = make_set({"prefill": 2, "decode": 3})
    argo, state = deploy(fixed)
    external = external_set("img:1", decode=3)
    assert external.revision == fixed.revision

    def decode_owners(current):
        return {(o["metadata"].get("annotations") or {}).get(naming.REPLICAS_OWNER_ANNOTATION)
                for o in render_with_state(external, current, NS)
                if o["kind"] == "LeaderWorkerSet" and o["metadata"]["labels"][naming.ROLE_LABEL] == "decode"}

    assert decode_owners(state) == {naming.REPLICAS_OWNER_HANDING_BACK}
    argo.sync(external, state)
    argo.cluster.settle()
    step = gitops_step(external, state, argo.snapshot(external), argo.served)
    assert step.outcome == Outcome.ADVANCED and step.reasons == (
        "hands the size of the External roles back to their autoscaler",)
    state = round_trip(step.state, external)
    assert decode_owners(state) == {naming.REPLICAS_OWNER_AUTOSCALER}
    assert state.revisions[external.revision].role("decode").external
    argo.sync(external, state)
    argo.cluster.settle()
    assert gitops_step(external, state, argo.snapshot(external), argo.served).outcome == Outcome.COMPLETE


def test_reverting_the_template_change_rolls_the_state_back():
    old = make_set({"prefill": 3, "decode": 3})
    new = make_set({"prefill": 3, "decode": 3}, image="img:2")
    argo, state = deploy(old)
    state = stepped(argo, new, state, 3)
    assert state.replicas[0][new.revision]["prefill"] > 0
    state, _ = roll(argo, old, round_trip(state, old))
    assert_steady(argo, old)
    assert list(state.revisions) == [old.revision]


def test_pr_description_and_summary_of_a_step():
    from kubectl_disagg.views.gitops_report import format_pr_description, format_summary, to_document

    old = make_set({"prefill": 2, "decode": 3}, slices=2)
    new = make_set({"prefill": 2, "decode": 3}, image="img:2", slices=2)
    argo, state = deploy(old)
    for _ in range(2):
        argo.sync(new, state)
        argo.cluster.settle()
        step = gitops_step(new, state, argo.snapshot(new))
        state = step.state
    text = format_pr_description(new, NS, step, "disagg-rollout-state.yaml")
    assert text.startswith(f"llm: rollout to {new.revision}, step 2 · slices 0-1 · 0 of 2 slices done\n\n")
    assert "### Slices 0-1: step 2 of 7 (proportional drain)\n\n" in text
    assert "| decode | 3 → **2** | 1 → **1** | 4 → **3** of 3 + 1 | 3 |" in text
    assert f"`llm-0-{new.revision}-decode` 1/1" in text and "run `kubectl disagg rollout step --gitops` again" in text
    summary = format_summary(new, NS, step, "disagg-rollout-state.yaml")
    assert summary.startswith("disaggregatedset/llm in serving (revision ") and "advanced, wrote" in summary
    document = to_document(new, NS, step, "disagg-rollout-state.yaml")
    assert document["written"] and document["slices"][0]["roles"][1] == {"name": "decode", "old": [3, 2],
                                                                          "new": [1, 1]}


def test_one_state_file_holds_the_states_of_every_set_beside_it(tmp_path):
    from kubectl_disagg.core.api.naming import STATE_FILE
    from kubectl_disagg.gitops.state import find_state
    from kubectl_disagg.gitops.files import write_state
    from kubectl_disagg.inputs.tree import Reading, contents, state_path

    first, second = make_set({"prefill": 1, "decode": 1}), make_set({"prefill": 2, "decode": 2}, name="other")
    path = tmp_path / STATE_FILE
    for ds in (first, second):
        state = gitops_step(ds, None, MemoryCluster(NS).snapshot(ds.name)).state
        write_state(str(path), contents([str(path)])[str(path)], state)
    documents = parse_stream(path.read_bytes(), str(path))
    assert [d.data["metadata"]["name"] for d in documents] == ["llm", "other"]
    assert find_state(documents, second, NS).replicas == {0: {second.revision: {"prefill": 2, "decode": 2}}}
    assert find_state(documents, make_set({"prefill": 1, "decode": 1}, name="third"), NS) is None
    moved = replace(second, source=second.source._replace(file=str(tmp_path / "other.yaml")))
    assert state_path(moved, Reading()) == str(path)
    path.write_text(path.read_text() + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(UserError, match="holds only RolloutState documents"):
        find_state(parse_stream(path.read_bytes(), str(path)), first, NS)


# --- adoption after the template changed in git (issue 29, defect 4) ----------------------------


def _adopts_exactly_what_runs(ds_in_git, cluster):
    """Adopt the live fleet for the set as git now has it; the state must render the live LWS
    exactly (spec and replicas), plus at most the set's own revision at 0 (a rollout starting)."""
    adopted = gitops_step(ds_in_git, None, cluster.snapshot(ds_in_git.name))
    assert adopted.outcome == Outcome.ADVANCED, adopted.reasons
    state = round_trip(adopted.state, ds_in_git)
    rendered = {o["metadata"]["name"]: o for o in render_with_state(ds_in_git, state, NS)
                if o["kind"] == "LeaderWorkerSet"}
    live = cluster.lws()
    for name, obj in live.items():
        assert rendered[name]["spec"] == obj["spec"], name
    for name in set(rendered) - set(live):
        assert rendered[name]["metadata"]["labels"][naming.REVISION_LABEL] == ds_in_git.revision, name
        assert rendered[name]["spec"]["replicas"] == 0, name
    return state


def test_adopting_a_set_whose_template_changed_before_its_first_git_step():
    """Deployed at v1 by `render | kubectl apply`, the image changed in git, then the first
    `rollout step --gitops`: the state records v1 at its live replicas, and the step after
    it starts the rollout to v2 (it was refused as a hand edit)."""
    v1 = make_set({"prefill": 2, "decode": 3}, slices=2)
    v2 = make_set({"prefill": 2, "decode": 3}, image="img:2", slices=2)
    live = MemoryExecutor(MemoryCluster(NS))
    list(drive(live, v1, NS))
    live.cluster.settle()
    state = _adopts_exactly_what_runs(v2, live.cluster)
    assert set(state.revisions) == {v1.revision} and state.stepped_for.revision == v1.revision
    assert state.replicas == {s: {v1.revision: {"prefill": 2, "decode": 3}} for s in range(2)}
    argo = MemoryArgo()
    argo.cluster = live.cluster
    argo.sync(v2, state)
    argo.cluster.settle()
    started = gitops_step(v2, state, argo.snapshot(v2))
    assert started.outcome == Outcome.ADVANCED, started.reasons
    assert any(v2.revision in counts for counts in started.state.replicas.values())
    roll(argo, v2, round_trip(started.state, v2))
    assert_steady(argo, v2)


def _fleets():
    from hypothesis import strategies as st

    return st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(0, 4),
                     st.sampled_from(["unchanged", "changed", "changed-at-rest"]),
                     st.sampled_from([None, {"maxSurge": 0, "maxUnavailable": 1}, {"maxSurge": 2, "maxUnavailable": 0}]))


def test_adopting_random_live_fleets_renders_them_exactly():
    """Property: a live fleet left by the planner (several revisions, slices drained to any
    point, the template in git unchanged since or changed again) is adopted into a state that
    renders exactly the live LWS."""
    from hypothesis import given, settings

    @settings(deadline=None)
    @given(_fleets())
    def check(fleet):
        prefill, decode, slices, passes, template, rolling = fleet
        budgets = {"prefill": rolling, "decode": rolling} if rolling else None
        v1 = make_set({"prefill": prefill, "decode": decode}, slices=slices, rolling=budgets)
        v2 = make_set({"prefill": prefill, "decode": decode}, image="img:2", slices=slices, rolling=budgets)
        v3 = make_set({"prefill": prefill, "decode": decode}, image="img:3", slices=slices, rolling=budgets)
        live = MemoryExecutor(MemoryCluster(NS))
        list(drive(live, v1, NS))
        live.cluster.settle()
        if template != "changed-at-rest":
            for _ in range(passes):  # the rollout to v2 started live, stopped anywhere
                run_pass(live, v2, NS)
                live.cluster.settle()
        in_git = {"unchanged": v2, "changed": v3, "changed-at-rest": v2}[template]
        _adopts_exactly_what_runs(in_git, live.cluster)

    check()


def test_issue39_each_step_commit_is_counted_and_old_states_still_read():
    """The state counts the step commits toward its target's revision (the pull requests'
    numbers); a rollback starts again at 1; a state written without the count reads as 0, and a
    bad count is an error at its line."""
    old, new = make_set({"prefill": 2, "decode": 2}), make_set({"prefill": 2, "decode": 2}, image="img:2")
    argo, state = deploy(old)
    assert state.commits == 0
    counts = []
    for _ in range(3):
        argo.sync(new, state)
        argo.cluster.settle()
        state = round_trip(gitops_step(new, state, argo.snapshot(new)).state, new)
        counts.append(state.commits)
    argo.sync(old, state)
    argo.cluster.settle()
    back = round_trip(gitops_step(old, state, argo.snapshot(old)).state, old)
    assert counts == [1, 2, 3] and back.commits == 1
    document = state_document(state)
    del document["commits"]
    (without,) = parse_stream(to_yaml(document), "disagg-rollout-state.yaml")
    assert parse_state(without, new, NS) == replace(state, commits=0)
    document["commits"] = -1
    (bad,) = parse_stream(to_yaml(document), "disagg-rollout-state.yaml")
    with pytest.raises(UserError, match=r"disagg-rollout-state.yaml:\d+: commits: must be a non-negative integer"):
        parse_state(bad, new, NS)


def test_a_step_is_judged_at_the_clock_it_is_given():
    """`next_step` read the wall time itself (`rollout.progressive.utcnow`), a second clock
    beside the one injected everywhere else: a step recorded a wave's completion (what a soak is
    timed from) at the machine's time whatever clock the caller had."""
    import datetime

    from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave

    old = make_set({"prefill": 1, "decode": 1}, slices=2)
    new = replace(make_set({"prefill": 1, "decode": 1}, image="img:2", slices=2),
                  policy=RolloutPolicy("llm", NS, "llm", (Wave(1, pause=True),)))
    argo, state = deploy(old)
    clock = FakeClock(wall=datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc))
    for _ in range(12):
        argo.sync(new, state)
        argo.cluster.settle()
        step, _ = next_step(argo.watched([], [0.0]), new, state, NS, clock=clock)
        if step.outcome != Outcome.ADVANCED:
            break
        state = round_trip(step.state, new)
    assert step.outcome == Outcome.HELD and state.position.completed == {0: "2030-01-02T03:04:05Z"}
