"""`rollout plan` for a fleet under a RolloutPolicy (rollout/plan.py's `fleet_plan`, issue 39):
held slices at the revision and replicas they run, the waves with their steps, the passes to
the end and where the gates fall, checked against the passes `rollout step` takes on the
in-memory cluster; a rollout over a rollout, and the rollback after an abort."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.core.delivery.position import ANALYSIS, PAUSE, PROMOTED
from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.delivery.waves import State, abort, admit
from kubectl_disagg.rollout.plan import SliceLive, fleet_plan, live_from_snapshot
from kubectl_disagg.views.plan import fleet_text
from tests.fakes.cluster import MemoryCluster
from tests.support.sets import NS, fleet, make_set
from tests.support.waves import T0

REPLICAS = {"prefill": 2, "decode": 3}


def issue_policy(slices_in_flight=3) -> RolloutPolicy:
    """The issue's fleet policy: a canary paused for a person, 25 % under analysis, then the rest."""
    return RolloutPolicy("llm", NS, "llm", (Wave(1, pause=True), Wave("25%", analysis=("ttft",))), slices_in_flight)


def plan_of(ds, cluster, position):
    return fleet_plan(ds, position, live_from_snapshot(ds, cluster.snapshot(ds.name)), T0)


def drive(ds, cluster, position, *, abort_after=None):
    """`rollout step` pass by pass on the in-memory cluster, every gate passed as it comes (a
    promote, a passed verdict): (passes that wrote, [(passes before, wave, gate kind)], position)."""
    passes, gates = 0, []
    for _ in range(400):
        passage = admit(ds, cluster.snapshot(ds.name), position, T0)
        decision = passage.decision
        position = decision.position
        if abort_after is not None and passes == abort_after and decision.state != State.ABORTED:
            position = abort(decision, T0, "alice")
            continue
        result = reconcile(passage.reconciled, cluster.snapshot(ds.name), passage.admission)
        if result.actions:
            passes += 1
            cluster.execute(result.actions)
            cluster.settle()
            continue
        if decision.state == State.AT_GATE:
            gate = decision.gate
            gates.append((passes, gate.wave, gate.kind))
            position = (position.with_verdict(gate.wave, {"phase": "passed"}) if gate.kind == ANALYSIS
                        else position.with_gate(gate.wave, PAUSE, "2026-12-01T12:00:00Z", "alice", PROMOTED))
            continue
        return passes, gates, position
    raise AssertionError("never ended")


def test_issue39_held_slices_show_the_revision_and_replicas_they_run():
    """Issue 39: slices 1-11 read "no rollout under way (held at revision <new>)" with 0
    replicas, while they ran the old revision at 2 and 3."""
    cluster, ds = fleet(12, issue_policy(), REPLICAS)
    old = make_set(REPLICAS, "img:1", 12).revision
    at_gate = drive_until_gate(ds, cluster)
    plan = plan_of(ds, cluster, at_gate)
    held = [line for line in plan.slices if line.situation == "held"]
    assert len(held) == 11 and {(line.revision, line.replicas) for line in held} == {
        (old, (("prefill", 2), ("decode", 3)))}
    text = fleet_text(plan)
    assert f"  slices 1-2: held at {old[:8]} (prefill 2, decode 3), wave 2\n" in text
    assert f"  slices 3-11: held at {old[:8]} (prefill 2, decode 3), wave 3\n" in text
    assert f"  slice 0: done at {ds.revision[:8]} (prefill 2, decode 3), wave 1\n" in text


def drive_until_gate(ds, cluster):
    position = None
    for _ in range(40):
        passage = admit(ds, cluster.snapshot(ds.name), position, T0)
        position = passage.decision.position
        if passage.decision.state == State.AT_GATE:
            return position
        cluster.execute(reconcile(passage.reconciled, cluster.snapshot(ds.name), passage.admission).actions)
        cluster.settle()
    raise AssertionError("no gate")


def stepped(ds, cluster, position, count):
    """`count` passes of `rollout step` on the in-memory cluster, whatever they meet: the position after."""
    for _ in range(count):
        passage = admit(ds, cluster.snapshot(ds.name), position, T0)
        position = passage.decision.position
        cluster.execute(reconcile(passage.reconciled, cluster.snapshot(ds.name), passage.admission).actions)
        cluster.settle()
    return position


@pytest.mark.parametrize("slices, in_flight", [(12, 3), (7, 1), (5, None)])
def test_issue39_the_passes_and_gates_are_the_ones_rollout_step_takes(slices, in_flight):
    """The plan's passes to the end and where each gate falls, from the start and from the
    canary's gate, equal what driving `rollout step` pass by pass does."""
    cluster, ds = fleet(slices, issue_policy(in_flight), REPLICAS)
    plan = plan_of(ds, cluster, None)
    passes, gates, _ = drive(ds, cluster, None)
    assert plan.passes == passes
    assert [(stop.after, stop.wave, stop.kind) for stop in plan.gates] == gates
    rows = {row.wave.index: row for row in plan.waves}
    assert rows[0].passes == (1, 9) and rows[0].steps_each == (7,)
    assert max(row.passes[1] for row in rows.values()) == passes

    cluster, ds = fleet(slices, issue_policy(in_flight), REPLICAS)
    at_gate = drive_until_gate(ds, cluster)
    plan = plan_of(ds, cluster, at_gate)
    left, gates_left, _ = drive(ds, cluster, at_gate)
    assert (plan.passes, plan.gates[0].after) == (left, 0) and left == passes - 9
    assert plan.commits < plan.passes + 2  # git: starts folded into a step; the canary's pause and promote


def test_issue39_a_rollback_reads_as_a_rollback_and_counts_its_passes():
    """After an abort the plan is the rollback of the slices that started, to the stable
    revision: not a forward rollout; its passes are the ones `rollout step` takes."""
    cluster, ds = fleet(12, issue_policy(), REPLICAS)
    at_gate = drive_until_gate(ds, cluster)
    promoted = at_gate.with_gate(0, PAUSE, "2026-12-01T12:00:00Z", "alice", PROMOTED)
    _, _, position = drive(ds, cluster, promoted, abort_after=3)  # wave 2 mid-way, aborted; rolled back
    cluster2, ds2 = fleet(12, issue_policy(), REPLICAS)
    at_gate = drive_until_gate(ds2, cluster2)
    promoted = at_gate.with_gate(0, PAUSE, "2026-12-01T12:00:00Z", "alice", PROMOTED)
    for _ in range(3):
        passage = admit(ds2, cluster2.snapshot(ds2.name), promoted, T0)
        promoted = passage.decision.position
        cluster2.execute(reconcile(passage.reconciled, cluster2.snapshot(ds2.name), passage.admission).actions)
        cluster2.settle()
    aborted = abort(admit(ds2, cluster2.snapshot(ds2.name), promoted, T0).decision, T0, "alice")
    plan = plan_of(ds2, cluster2, aborted)
    old = make_set(REPLICAS, "img:1", 12).revision
    assert plan.rollback and plan.moves_to == old and plan.stable == ds2.revision
    text = fleet_text(plan)
    assert text.startswith(f"disaggregatedset/llm: rollback of slices 0-2 to {old[:8]} (the rollout to "
                           f"{ds2.revision[:8]} was aborted at wave 2)\n")
    assert "rollout to revision" not in text and "to the end of the rollback: " in text
    assert f"  slices 3-11: held at {old[:8]} (prefill 2, decode 3), wave 3: the rollout was aborted before its wave" in text
    passes, gates, _ = drive(ds2, cluster2, aborted)
    assert (plan.passes, plan.gates, gates) == (passes, (), [])


def test_issue39_a_rollout_over_a_rollout_rolls_every_slice_from_where_it_stands():
    """The template changed again mid-rollout: slices that run two revisions roll to the third,
    from the counts they run (held slices at the first revision); with two old revisions in a
    slice, the first drained is removed mid-rollout and shortens it: the passes are a bound."""
    cluster, ds = fleet(4, RolloutPolicy("llm", NS, "llm", (), 2), REPLICAS)
    position = stepped(ds, cluster, None, 4)
    third = replace(make_set(REPLICAS, "img:3", 4), policy=ds.policy)
    plan = plan_of(third, cluster, position)
    assert [line.situation for line in plan.slices] == ["starts", "starts", "held", "held"]
    held = plan.slices[2]
    assert (held.revision, held.replicas) == (make_set(REPLICAS, "img:1", 4).revision, (("prefill", 2), ("decode", 3)))
    passes, _, _ = drive(third, cluster, position)
    assert not plan.exact and passes <= plan.passes
    assert "  to the end: at most 18 passes of `kubectl disagg rollout step`" in fleet_text(plan)


def test_issue39_a_hundred_slices_stay_short():
    cluster, ds = fleet(100, RolloutPolicy("llm", NS, "llm", (Wave(1, pause=True), Wave("10%", pause=True),
                                                              Wave("50%", analysis=("ttft",))), 10), REPLICAS)
    text = fleet_text(plan_of(ds, cluster, None))
    assert len(text.splitlines()) <= 30, text
    assert "  slices 1-9: held at " in text and "slices 0-99: the steps of each slice" in text


def test_the_state_file_and_the_cluster_give_the_same_plan():
    """One computation for both modes: a state file's deployed replicas and initial counts are
    the same progress as the live LWS that render from it."""
    cluster, ds = fleet(4, issue_policy(2), REPLICAS)
    at_gate = drive_until_gate(ds, cluster)
    live = live_from_snapshot(ds, cluster.snapshot(ds.name))
    as_state = tuple(SliceLive({r: dict(c) for r, c in s.runs.items()}, {r: dict(c) for r, c in s.initial.items()})
                     for s in live)
    assert fleet_plan(ds, at_gate, as_state, T0) == fleet_plan(ds, at_gate, live, T0)


def test_a_set_not_created_yet_is_one_pass_per_slice():
    cluster = MemoryCluster(NS)
    ds = replace(make_set(REPLICAS, "img:1", 3), policy=issue_policy())
    plan = plan_of(ds, cluster, None)
    assert {line.situation for line in plan.slices} == {"not created"}
    assert plan.passes == 1  # one pass creates every slice at the set's revision


def test_issue39_a_reverted_template_reads_as_the_same_rollback_as_an_abort():
    """The template set back mid-rollout: the plan is the rollback of the started slices to the
    stable revision, in an abort's words, and its passes are the ones `rollout step` takes."""
    cluster, ds = fleet(6, issue_policy(), REPLICAS)
    position = stepped(ds, cluster, drive_until_gate(ds, cluster).with_gate(
        0, PAUSE, "2026-12-01T12:00:00Z", "alice", PROMOTED), 3)
    back = replace(make_set(REPLICAS, "img:1", 6), policy=ds.policy)
    plan = plan_of(back, cluster, position)
    text = fleet_text(plan)
    assert plan.rollback and text.startswith(f"disaggregatedset/llm: rollback of slices 0-1 to {back.revision[:8]}\n")
    assert f"  slice 1: rolling back to {back.revision[:8]} (prefill 2, decode 2 so far), 2 steps left, wave 2\n" in text
    assert "rollout to revision" not in text and "rolling to" not in text
    passes, _, _ = drive(back, cluster, position)
    assert plan.passes == passes


def test_issue39_the_commits_are_the_ones_a_git_rollout_takes():
    """Through git (`rollout step --gitops`, a commit per step that changes the state file), the
    plan from the committed state file counts the commits of the rollout to its end: the steps,
    the step recording the canary's pause and the promote commit."""
    from kubectl_disagg.core.delivery.waves import promote
    from kubectl_disagg.gitops.state import parse_state, state_document
    from kubectl_disagg.rollout.git_step import Outcome, gitops_step
    from kubectl_disagg.gitops.waves import change_state
    from kubectl_disagg.manifests.reader import parse_stream
    from kubectl_disagg.manifests.writer import to_yaml
    from kubectl_disagg.gitops.store import live_from_state
    from tests.fakes.argo import deploy

    def reread(state, ds):
        (document,) = parse_stream(to_yaml(state_document(state)), "disagg-rollout-state.yaml")
        return parse_state(document, ds, NS)

    policy = RolloutPolicy("llm", NS, "llm", (Wave(1, pause=True), Wave("50%")), 2)
    new = replace(make_set(REPLICAS, "img:2", 5), policy=policy)
    argo, state = deploy(make_set(REPLICAS, "img:1", 5))
    plan = fleet_plan(new, state.position, live_from_state(new, state), T0)
    commits, at_gate = 0, None
    for _ in range(200):
        argo.sync(new, state)
        argo.cluster.settle()
        step = gitops_step(new, state, argo.snapshot(new), argo.served, now=T0)
        if step.outcome == Outcome.COMPLETE:
            break
        if step.outcome == Outcome.HELD:
            at_gate = (commits, fleet_plan(new, state.position, live_from_state(new, state), T0))
            _, _, state = change_state(new, state, lambda d: promote(d, T0, "alice"), T0)
        else:
            assert step.outcome == Outcome.ADVANCED, step
            state = step.state
        state = reread(state, new)
        commits += 1
    assert plan.commits == commits == 26  # the steps (a start lands with the first step), the pause, its promote
    assert plan.passes == 27  # in the cluster a start is a pass of its own: 1 + 7 + 1 passes a slice, 3 rounds
    before, from_the_gate = at_gate  # the state file at the canary's gate, its pause recorded by a commit
    assert from_the_gate.commits == commits - before and from_the_gate.gates[0].after == 0


REPLACED = "every role's groups are replaced, whichever role's template changed"


def test_a_rollout_plan_says_every_roles_groups_are_replaced():
    """Issue 47: `rollout restart --role decode` replaces the prefill groups too (the revision
    covers every role's template, as the upstream controller's does); the plan says so, with a
    policy (the fleet's heading) and without (each rolling slice's title)."""
    from kubectl_disagg.rollout.plan import slice_plan
    from kubectl_disagg.views.plan import format_live

    cluster, ds = fleet(4, issue_policy(), REPLICAS)
    heading = fleet_text(plan_of(ds, cluster, None)).splitlines()[0]
    assert heading.startswith("disaggregatedset/llm: rollout to revision ") and heading.endswith(f" ({REPLACED})")
    cluster, ds = fleet(2, None, REPLICAS)
    slices = [slice_plan(ds, report) for report in reconcile(ds, cluster.snapshot(ds.name)).slices]
    (title, *_) = format_live([(ds, slices)], "table").splitlines()
    assert title == (f"disaggregatedset/llm slices 0-1: the next step starts the rollout to revision {ds.revision} "
                     f"({REPLACED})")
