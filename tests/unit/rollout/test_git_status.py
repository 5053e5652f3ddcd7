"""`rollout status --gitops`'s decision at every point of a git-driven rollout: the next action
and the committed position, without a cluster (MemoryArgo plays Argo CD and the LWS controller)."""

from __future__ import annotations

from kubectl_disagg.clock import SYSTEM_CLOCK
from kubectl_disagg.core.controller import planner
from kubectl_disagg.core.delivery.status import NextAction
from kubectl_disagg.rollout.git_status import gitops_status
from kubectl_disagg.rollout.git_step import Outcome, gitops_step
from tests.support.status_views import format_text, to_document
from tests.fakes.argo import deploy, round_trip
from tests.fakes.cluster import MemoryCluster, MemorySession
from tests.support.sets import NS, make_set
from tests.support.gitops import stepped


def status(argo, ds, state):
    return gitops_status(ds, state, argo.snapshot(ds), argo.served, now=SYSTEM_CLOCK.now())


def test_no_state_yet_means_run_the_step():
    ds = make_set({"prefill": 2, "decode": 1})
    result = gitops_status(ds, None, MemoryCluster(NS).snapshot(ds.name), now=SYSTEM_CLOCK.now())
    assert result.sync.next_action == NextAction.STEP and not result.sync.has_state
    assert "no rollout state yet" in format_text(result, "disagg-rollout-state.yaml")


def test_every_point_of_a_whole_rollout_names_the_right_next_action():
    old = make_set({"prefill": 2, "decode": 2})
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    argo, state = deploy(old)
    assert status(argo, old, state).sync.next_action == NextAction.COMPLETE
    # The template change is committed; Argo CD has not synced it: the new LWS are missing.
    waiting = status(argo, new, state)
    assert waiting.sync.next_action == NextAction.SYNC and not waiting.sync.synced and waiting.sync.pruned
    assert waiting.sync.slices[0].position == (0, len(planner.plan((2, 2), (2, 2), [planner.START_CONFIG] * 2)) - 1)
    total = waiting.sync.slices[0].position[1]
    seen = []
    for _ in range(40):
        argo.sync(new, state)
        current = status(argo, new, state)
        if current.sync.next_action == NextAction.COMPLETE:
            break
        if any(o.replicas > o.ready for o in argo.snapshot(new).lws if o.identity.revision == new.revision):
            assert current.sync.next_action == NextAction.READY and current.sync.synced and not current.sync.ready
        argo.cluster.settle()
        current = status(argo, new, state)
        assert current.sync.next_action == NextAction.STEP and current.sync.synced and current.sync.pruned and current.sync.ready
        seen.append(current.sync.slices[0].position)
        step = gitops_step(new, state, argo.snapshot(new))
        assert step.outcome == Outcome.ADVANCED
        state = round_trip(step.state, new)
        committed = status(argo, new, state)  # committed, not synced yet
        assert committed.sync.next_action == NextAction.SYNC and not committed.sync.synced
        if set(state.revisions) == {new.revision}:  # the removal, synced without prune
            argo.sync(new, state, prune=False)
            unpruned = status(argo, new, state)
            assert unpruned.sync.next_action == NextAction.SYNC and unpruned.sync.synced and not unpruned.sync.pruned
    assert seen == [(i, total) for i in range(total + 1)]  # the last: drained, the removal next
    assert current.sync.slices[0].revisions == {new.revision: {"prefill": 2, "decode": 2}}


def test_an_abort_rolls_back_with_the_same_actions():
    old = make_set({"prefill": 3, "decode": 3})
    new = make_set({"prefill": 3, "decode": 3}, image="img:2")
    argo, state = deploy(old)
    state = stepped(argo, new, state, 3)
    argo.sync(new, state)
    argo.cluster.settle()
    back = round_trip(state, old)
    assert status(argo, old, back).sync.next_action == NextAction.SYNC  # the revert is not synced yet
    argo.sync(old, back)
    argo.cluster.settle()
    result = status(argo, old, back)
    assert result.sync.next_action == NextAction.STEP and result.sync.slices[0].position is not None
    document = to_document(result, "s.yaml")
    assert document["sync"]["nextAction"] == "run rollout step --gitops" and document["sync"]["synced"] is True
    assert [r["revision"] for r in document["sync"]["slices"][0]["revisions"]] == [old.revision, new.revision]
    text = format_text(result, "s.yaml")
    assert text.startswith(f"disaggregatedset/llm in {NS}, revision {old.revision}: ")
    assert "\n  git: s.yaml; cluster synced, pruned, new revision ready\n  committed slice 0: step " in text
    assert "\n  next: run rollout step --gitops\n" in text


def test_status_reads_the_steps_result_one_render_one_replay(monkeypatch):
    """Issue 30: `rollout status --gitops` renders (and so checks, design §8) the committed state
    once, and the step it asks about reads that render: one replay, one pass, one render.
    Before: the step rendered and replayed the committed state a second time."""
    from kubectl_disagg.gitops import render, rules
    from kubectl_disagg.rollout import stepper
    from tests.support.gitops import Counted, mid_rollout

    argo, new, state = mid_rollout()
    replays = Counted(monkeypatch, rules, "replay")
    passes = Counted(monkeypatch, stepper, "reconcile")
    renders = Counted(monkeypatch, render, "rendered")
    assert status(argo, new, state).sync.next_action == NextAction.STEP
    assert (replays.calls, passes.calls, renders.calls) == (1, 1, 1)


def test_issue37_item12_gitops_status_says_available_until_the_removal_is_live_then_complete():
    """Through git, the rollout's last step is a commit removing the drained revision: until it
    is written, synced and pruned the set is Available but not complete (text and -o yaml|json);
    `-w --for=complete` waits for that, `--for=available` does not."""
    from kubectl_disagg.core.delivery.status import Until

    old = make_set({"prefill": 2, "decode": 1})
    new = make_set({"prefill": 2, "decode": 1}, image="img:2")
    argo, state = deploy(old)
    drained = 0
    for _ in range(40):
        argo.sync(new, state)
        argo.cluster.settle()
        if set(state.revisions) == {new.revision}:
            break
        current = status(argo, new, state)
        if current.available:  # drained: the next step removes the old revision
            drained += 1
            assert current.sync.next_action == NextAction.STEP and not current.complete
            assert (current.reached(Until.AVAILABLE), current.reached(Until.COMPLETE)) == (True, False)
            document = to_document(current, "s.yaml")
            assert document["complete"] is False
            assert {c["type"]: c["status"] for c in document["status"]["conditions"]}["Available"] == "True"
            assert ": Available, not complete: " in format_text(current, "s.yaml").splitlines()[0]
        state = round_trip(gitops_step(new, state, argo.snapshot(new)).state, new)
    else:
        raise AssertionError("never removed")
    assert drained == 1
    done = status(argo, new, state)
    assert done.sync.next_action == NextAction.COMPLETE and done.complete and done.reached(Until.COMPLETE)
    assert to_document(done, "s.yaml")["complete"] is True
    assert format_text(done, "s.yaml").splitlines()[0].endswith(": Available, complete")


def git_report(ds, action, available):
    """A git report at `action`, the live set `available` or not (its one role's counts)."""
    from kubectl_disagg.core.delivery.status import RoleStatus, SetStatus, Sync

    role = RoleStatus("prefill", 1, 1, 1 if available else 0, 1)
    return SetStatus(ds.name, NS, ds.revision, (role,), (), (), (), (),
                     sync=Sync(True, (), True, True, True, action, ()))


def test_issue37_item12_gitops_watch_for_complete_returns_at_completion_not_at_availability(monkeypatch):
    """`rollout status --gitops -w --for=complete` (the one -w of rollout/status.py over
    `GitLooks`) looks again on every change until every set's rollout is complete;
    `--for=available` stops at the first Available look; without --for, -w still returns when
    the next action changes."""
    from types import SimpleNamespace

    from kubectl_disagg.core.delivery.status import Until
    from kubectl_disagg.rollout import git_status
    from kubectl_disagg.rollout.status import watch_status

    ds = make_set({"prefill": 1, "decode": 1})
    entry = SimpleNamespace(ds=ds, namespace=NS, state=object(), state_path="s.yaml")
    directory = SimpleNamespace(sets=[entry])
    for until, expected in ((Until.COMPLETE, 4), (Until.AVAILABLE, 2), (None, 2)):
        sequence = iter([git_report(ds, NextAction.SYNC, False), git_report(ds, NextAction.STEP, True),
                         git_report(ds, NextAction.SYNC, True), git_report(ds, NextAction.COMPLETE, True)])
        monkeypatch.setattr(git_status, "gitops_status", lambda *args, sequence=sequence, **kwargs: next(sequence))
        seen = []
        cluster = MemorySession(MemoryCluster(NS))  # every watch sees a change
        watch_status(cluster, git_status.GitLooks(cluster, directory), lambda reports, now: "", watch=True,
                     until=until, write=lambda text: None, held=None)
        seen = cluster.watched
        assert len(seen) + 1 == expected, until


def test_gitops_watch_on_a_complete_rollout_returns_at_once_with_complete(monkeypatch):
    """`rollout status --gitops -w` (no --for) on a set whose rollout is complete already: the
    next action can change only by a new commit, so the first look settles it, with no wait, and
    the command's code is 6 (complete), not 4 (it waited out --timeout before). A set still
    waiting is watched until its next action changes, as before."""
    import itertools
    from types import SimpleNamespace

    from kubectl_disagg.exits import StepExit
    from kubectl_disagg.rollout import git_status
    from kubectl_disagg.rollout.outcome import STATUS_EXIT
    from kubectl_disagg.rollout.status import watch_status
    from kubectl_disagg.wait import Deadline

    ds = make_set({"prefill": 1, "decode": 1})
    entry = SimpleNamespace(ds=ds, namespace=NS, state=object(), state_path="s.yaml")
    directory = SimpleNamespace(sets=[entry, entry])
    for actions, waited in (([NextAction.COMPLETE] * 2, False), ([NextAction.COMPLETE, NextAction.SYNC], True)):
        statuses = itertools.cycle([git_report(ds, action, True) for action in actions])
        monkeypatch.setattr(git_status, "gitops_status", lambda *args, statuses=statuses, **kwargs: next(statuses))
        cluster, texts = MemorySession(MemoryCluster(NS), quiet=True), []
        outcome = watch_status(cluster, git_status.GitLooks(cluster, directory), lambda reports, now: "look",
                               watch=True, deadline=Deadline.after(0.3), write=texts.append)
        assert bool(cluster.watched) == waited and (len(texts) == 1) == (not waited), actions
        assert STATUS_EXIT[outcome] == (StepExit.TIMEOUT if waited else StepExit.COMPLETE)


def watched_once(argo, ds, state, until, watch=True, now=None):
    """`rollout status --gitops [-w]` over one set at `state`: the outcome and the held reports' next actions."""
    from types import SimpleNamespace

    from kubectl_disagg.clock import SYSTEM_CLOCK, StoppedClock
    from kubectl_disagg.rollout.git_status import GitLooks
    from kubectl_disagg.rollout.status import watch_status
    from kubectl_disagg.wait import Deadline

    cluster, held = argo.watched(), []
    directory = SimpleNamespace(sets=[SimpleNamespace(ds=ds, namespace=NS, state=state, state_path="s.yaml")])
    outcome = watch_status(cluster, GitLooks(cluster, directory, StoppedClock(now) if now else SYSTEM_CLOCK),
                           lambda reports, at: "", watch=watch, until=until, write=lambda text: None,
                           held=held.extend, deadline=Deadline.after(5))
    return outcome, [report.sync.next_action for report in held]


def test_held_by_its_policy_the_status_has_the_rollout_fields_and_ends_a_watch():
    from dataclasses import replace

    from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
    from kubectl_disagg.core.delivery.status import Until

    old = make_set({"prefill": 1, "decode": 1}, slices=3)
    new = replace(make_set({"prefill": 1, "decode": 1}, image="img:2", slices=3),
                  policy=RolloutPolicy("llm", NS, "llm", (Wave(1, pause=True),)))
    argo, state = deploy(old)
    assert "rollout" not in to_document(status(argo, old, state), "s.yaml")  # no policy, no rollout
    for _ in range(40):
        argo.sync(new, state)
        argo.cluster.settle()
        step = gitops_step(new, state, argo.snapshot(new), argo.served)
        if step.outcome == Outcome.HELD:
            break
        state = round_trip(step.state, new)
    result = status(argo, new, state)
    assert result.sync.next_action == NextAction.HELD
    rollout = to_document(result, "s.yaml")["rollout"]
    assert rollout["phase"] == "AtGate" and rollout["gate"] == {"kind": "pause", "wave": 0, "reached": True}
    assert rollout["held"] and rollout["wave"] == {"index": 0, "count": 2, "firstSlice": 0, "lastSlice": 0}
    assert rollout["fleet"] == {"slices": 3, "done": 1, "inFlight": 0, "held": 2}
    text = format_text(result, "s.yaml")
    assert "\n  RolloutPolicy: AtGate, wave 1 of 2 (slices 0-0)\n  held: wave 1 is paused: " in text
    assert text.count("wave 1 is paused: ") == 1  # the hold said once, in the policy's lines
    # -w ends held, whatever it waits for (the step exits 7 there too)
    for until in (None, Until.COMPLETE):
        assert watched_once(argo, new, state, until) == (Outcome.HELD, [NextAction.HELD])


def test_issue47_item14_at_an_analysis_gate_the_next_action_is_the_step_that_measures_it_and_watch_ends_held():
    """Issue 47 item 14, through git: at an analysis gate without a verdict `rollout step --gitops`
    measures it and writes the verdict (exit 0), so that is the next action, with its code, and
    the words say it measures (they said nothing, or "held by the RolloutPolicy: a --gitops
    verb's commit passes it", exit 7). Nothing but that step measures it, so -w ends there held
    (7), naming it: the cluster's rule (`RolloutStatus.still`), no Lease telling of a --gitops
    step. Both committed states: the gate reached (the real step measures in the pass that
    reaches it) and its reach recorded."""
    import datetime
    from dataclasses import replace

    from kubectl_disagg.core.delivery.analysis import Analysis, Check, Condition, Prometheus, Sample
    from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
    from kubectl_disagg.core.delivery.status import Until
    from kubectl_disagg.exits import StepExit
    from kubectl_disagg.rollout.git_status import still
    from kubectl_disagg.rollout.analysis import GateAnalysis
    from kubectl_disagg.rollout.outcome import STATUS_EXIT, step_exit
    from tests.fakes.clock import FakeClock

    now = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
    gated = RolloutPolicy("llm", NS, "llm", (Wave(1, analysis=("ttft",)),), analysis=Analysis(
        Prometheus(address="http://prometheus:9090"),
        (Check("ttft", "prefill", 'ttft{revision="{{revision}}"}', Condition("<", 0.5), 60, 1, 0, "fail"),)))
    old = make_set({"prefill": 1, "decode": 1}, slices=3)
    new = replace(make_set({"prefill": 1, "decode": 1}, image="img:2", slices=3), policy=gated)
    argo, state = deploy(old)
    at_the_gate = []
    for _ in range(40):
        argo.sync(new, state)
        argo.cluster.settle()
        step = gitops_step(new, state, argo.snapshot(new), argo.served, now=now)  # no Prometheus: no measure
        if step.passed is not None and step.passed.stopped:
            at_the_gate.append(state)
        if step.outcome == Outcome.HELD:
            break
        state = round_trip(step.state, new)
    assert len(at_the_gate) == 2  # reached, then its reach recorded
    measure = GateAnalysis(lambda prometheus: (lambda query: (Sample(0.1),)), clock=FakeClock(wall=now))
    for state in at_the_gate:
        argo.sync(new, state)
        argo.cluster.settle()
        result = status(argo, new, state)
        assert result.paced.unmeasured is not None and result.paced.held is None
        measured = gitops_step(new, state, argo.snapshot(new), argo.served, now=now, analyze=measure)
        assert measured.outcome == Outcome.ADVANCED and measured.state.position.verdicts[0]["phase"] == "passed"
        assert result.sync.next_action == NextAction.STEP
        outcome, held = watched_once(argo, new, state, None, watch=False, now=now)
        assert STATUS_EXIT[outcome] == step_exit([measured.outcome]) == StepExit.OK  # the step's own code
        assert "\n  held: wave 1 waits for analysis (ttft): `kubectl disagg rollout step --gitops -f .` measures it" \
            in format_text(result, "s.yaml")
        assert still(result)
        for until in (None, Until.COMPLETE):
            outcome, held = watched_once(argo, new, state, until, now=now)
            assert STATUS_EXIT[outcome] == StepExit.HELD and held == [NextAction.STEP]


def test_issue48_through_git_watch_for_waits_for_the_sets_still_moving_as_in_the_cluster(monkeypatch):
    """One -w for both stores (issue 48): with --for, git's -w ended held at the first look where
    any set was held, though another set was still on its way (the cluster's -w waits for every
    set that is not there to be still). Now both ends by the one rule: the moving set is watched
    until it is Available, then -w ends held (7) naming the held set only."""
    from dataclasses import replace
    from types import SimpleNamespace

    from kubectl_disagg.core.delivery.status import Until
    from kubectl_disagg.exits import StatusExit
    from kubectl_disagg.rollout import git_status
    from kubectl_disagg.rollout.outcome import STATUS_EXIT
    from kubectl_disagg.rollout.status import watch_status
    from kubectl_disagg.wait import Deadline

    held_set = make_set({"prefill": 1, "decode": 1})
    moving = replace(held_set, name="other")
    reports = iter([git_report(held_set, NextAction.HELD, False), git_report(moving, NextAction.SYNC, False),
                    git_report(held_set, NextAction.HELD, False), git_report(moving, NextAction.STEP, True)])
    monkeypatch.setattr(git_status, "gitops_status", lambda *args, **kwargs: next(reports))
    directory = SimpleNamespace(sets=[SimpleNamespace(ds=ds, namespace=NS, state=object(), state_path="s.yaml")
                                      for ds in (held_set, moving)])
    cluster, texts, held = MemorySession(MemoryCluster(NS)), [], []
    outcome = watch_status(cluster, git_status.GitLooks(cluster, directory), lambda reports, now: "look", watch=True,
                           until=Until.AVAILABLE, write=texts.append, held=held.extend, deadline=Deadline.after(5))
    assert (STATUS_EXIT[outcome], len(texts)) == (StatusExit.HELD, 2)
    assert [report.name for report in held] == [held_set.name]
