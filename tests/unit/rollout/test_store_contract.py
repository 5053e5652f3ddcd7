"""The position stores' contract (design §9.8, rollout/store.py `PositionStore`): the same verbs
over the same fleet and position decide alike in the cluster (`ClusterStore`, the RolloutState
in the in-memory cluster) and through git (`GitStore`, the state file in a real temporary git
repository, committed): the same exit codes, refusals, errors and positions (issue 47 items 8
and 10); and twin runs of random verbs between random steps, compared after every verb."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import StepExit, VerbExit
from kubectl_disagg.rollout import history as recorded
from kubectl_disagg.rollout.plan import live_plans
from kubectl_disagg.rollout.verbs import VERB_ATTEMPTS
from tests.support.cli import run
from tests.support.stores import STEP_ENDS, LiveTwins, Twin, git, running

EXAMPLES = int(os.environ.get("KUBECTL_DISAGG_TWIN_EXAMPLES", "25"))

# From the canary held at its pause, each verb in turn through both stores.
SCENARIOS = {
    "pause twice": ["pause", "pause"],
    "abort twice": ["abort", "abort"],
    "resume unpaused": ["resume"],
    "retry not aborted": ["retry"],
    "pause then resume": ["pause", "resume", "resume"],
    "abort then pause": ["abort", "pause"],
    "abort then retry": ["abort", "retry", "retry"],
    "promote": ["promote", "promote"],
    "promote --full": ["promote --full", "pause", "promote"],
    "pause then abort": ["pause", "abort", "resume"],
}


def alike(twin: Twin, verb: str) -> None:
    """`verb` through both stores: the same result, the same position after."""
    in_cluster, in_git = twin.in_cluster(verb), twin.in_git(verb)
    assert in_git == in_cluster, verb
    assert twin.git_position() == twin.cluster_position(), verb


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_verbs_decide_alike_in_both_stores(name, tmp_path):
    twin = Twin(tmp_path)
    assert twin.git_position() == twin.cluster_position()
    for verb in SCENARIOS[name]:
        alike(twin, verb)


def read_alike(twin: Twin) -> None:
    """`rollout history`, `undo` and `plan` read both stores alike: the same entries (who and
    when aside: the cluster's user and git's author differ), the same revision to go back to
    (or the same refusal), and the same plan (the decision's position aside, which names who)."""
    def history(store) -> list:
        return [[(e.revision, e.outcome, e.back, e.retry, e.why) for e in h.entries] for h in recorded.histories(store)]

    def undo(store) -> object:
        try:
            return {name: entry.revision for name, entry in recorded.undo_targets(store, None).items()}
        except UserError as refused:
            return refused.problems

    def plan(store) -> list:
        return [(ds.name, replace(fleet, decision=(fleet.decision.state, fleet.decision.wave, fleet.decision.held)))
                for ds, fleet in live_plans(store, twin.clock.now())]

    git_store, cluster_store = twin.git_store(commit=False), twin.cluster_store()
    assert history(git_store) == history(cluster_store)
    assert undo(git_store) == undo(cluster_store)
    assert plan(git_store) == plan(cluster_store)


def stepped(twin: Twin) -> bool:
    """Whether the set's own revision has been stepped (its newest entry in the cluster): until
    then git lists a committed revision as rolling, the cluster nothing (design §10.3)."""
    (history,) = recorded.histories(twin.cluster_store())
    return bool(history.entries) and history.entries[-1].revision == twin.ds.revision


@pytest.mark.parametrize("name", SCENARIOS)
def test_history_undo_and_plan_read_alike_from_both_stores(name, tmp_path):
    """Issue 48: history, undo and plan each once over the store; after every verb of a
    scenario both stores hold the same story and plan the same rollout."""
    twin = Twin(tmp_path)
    read_alike(twin)
    for verb in SCENARIOS[name]:
        alike(twin, verb)
        read_alike(twin)


def test_history_and_undo_after_a_completed_rollout_read_alike_from_both_stores(tmp_path):
    """A rollout through to its end, then the next image stepped once: both stores list the
    completed revision and the one rolling, and an undo goes back to the completed one."""
    twin = Twin(tmp_path, slices=2)
    alike(twin, "promote --full")
    twin.state = twin.git_store().directory.sets[0].state  # the promote's commit, stepped on from
    while twin.step():
        twin.commit_state("a step")
        twin.seed()
    twin.template("img:3")
    assert twin.step()
    twin.commit_state("a step")
    twin.seed()
    read_alike(twin)
    (history,) = recorded.histories(twin.cluster_store())
    assert [e.outcome for e in history.entries] == ["complete", "rolling"]
    assert recorded.undo_targets(twin.cluster_store(), None)["llm"].revision == history.entries[0].revision


@pytest.mark.parametrize("verb", ["pause", "abort"])
def test_a_repeated_verb_changes_nothing_and_exits_0_in_both_stores(verb, tmp_path):
    """Item 8: a repeated pause or abort exited 0 in the cluster (writing the RolloutState and an
    Event again) and 1 through git with --commit ("nothing to commit"). A no-op is not an error:
    it says it changed nothing, writes nothing, and exits 0."""
    twin = Twin(tmp_path)
    assert twin.in_cluster(verb).code == twin.in_git(verb).code == VerbExit.OK
    head, writes, events = twin.head(), len(twin.cluster.writes), len(twin.cluster.events)
    in_cluster, in_git = twin.in_cluster(verb), twin.in_git(verb)
    assert in_cluster == in_git
    assert (in_git.code, in_git.errors, in_git.lines) == (VerbExit.OK, [], [f"llm: {verb} changed=False"])
    assert twin.head() == head and git(tmp_path, "status", "--porcelain") == ""  # no commit, nothing written
    assert (len(twin.cluster.writes), len(twin.cluster.events)) == (writes, events)


def test_a_repeated_pause_through_git_with_commit_says_it_changed_nothing(tmp_path, capsys):
    """Item 8 as the operator met it: the second `rollout pause --gitops --commit` exited 1
    ("cannot commit the rollout state: git commit: nothing to commit")."""
    twin = Twin(tmp_path)
    argv = ["rollout", "pause", "--gitops", "-f", str(twin.app), "--commit"]
    assert run(argv, capsys)[0] == VerbExit.OK
    head = twin.head()
    code, out, err = run([*argv, "--pr-description", str(tmp_path / "pr.md")], capsys)
    assert (code, err) == (VerbExit.OK, "")
    assert out == (f"disaggregatedset/llm in serving is paused already at wave 1 of 3: nothing changed; `kubectl "
                   f"disagg rollout resume --gitops -f {twin.app}` continues it\n")
    assert twin.head() == head and not (tmp_path / "pr.md").exists()  # no commit, no pull request
    code, out, _ = run(["rollout", "pause", "--gitops", "-f", str(twin.app), "-o", "json"], capsys)
    assert code == VerbExit.OK and json.loads(out)["changed"] is False


def test_a_set_without_a_policy_does_not_stop_the_others_in_either_store(tmp_path):
    """Item 10: through git, a set without a RolloutPolicy stopped a verb over several sets for
    every set (a UserError); the contract says "not paced": that set is an error, the others go on."""
    twin = Twin(tmp_path, plain=True)
    in_cluster, in_git = twin.in_cluster("pause"), twin.in_git("pause")
    assert in_git == in_cluster
    assert in_git.code == VerbExit.ERROR and in_git.lines == ["llm: pause changed=True"]
    assert [line.split(": ", 1)[1] for line in in_git.errors] == [
        "disaggregatedset/plain in serving has no RolloutPolicy: its rollouts are not paced (nothing to promote, "
        "pause, resume, abort or retry)"]
    assert in_git.errors[0].startswith(f"{twin.app / 'plain.yaml'}:3: ")  # at its FILE:LINE
    assert twin.git_position()["paused"] and twin.git_position() == twin.cluster_position()


def test_a_write_in_between_is_never_lost_in_either_store(tmp_path):
    """Item 10: the git store wrote over a state file committed after it read it (design §9.8
    promises the guard the cluster's resourceVersion gives). A pause committed between a verb's
    read and its write: the verb reads again and decides anew; the pause stays."""
    twin = Twin(tmp_path)
    late = twin.git_store()  # its tree read now, before the pause
    assert twin.in_git("pause") == twin.in_cluster("pause")
    assert twin.run(late, "promote") == twin.in_cluster("promote")
    assert twin.git_position()["paused"], "the pause committed in between was written over"
    assert twin.git_position() == twin.cluster_position()


def test_a_state_file_that_keeps_changing_is_never_written_over(tmp_path):
    """A state file changed again before every write (a verb committed meanwhile, each time):
    after VERB_ATTEMPTS reads the verb gives up, exit 1, naming the file; nothing written."""
    twin = Twin(tmp_path)
    store = twin.git_store(commit=False)
    write, attempts = store.write, []

    def another_writer_first(changes):
        attempts.append(len(changes))
        twin.state_path.write_text(twin.state_path.read_text() + f"# meanwhile {len(attempts)}\n")
        return write(changes)

    store.write = another_writer_first
    result = twin.run(store, "pause")
    assert attempts == [1] * VERB_ATTEMPTS
    assert (result.code, result.lines) == (VerbExit.ERROR, [])
    assert result.errors == [f"could not pause disaggregatedset/llm in serving: {twin.state_path} changed since it was "
                             f"read (a commit meanwhile), {VERB_ATTEMPTS} times in a row; run it again"]
    assert twin.state_path.read_text().endswith(f"# meanwhile {VERB_ATTEMPTS}\n") and not twin.git_position().get("paused")


# --- twin runs: random verbs between random steps -------------------------------------------------

VERBS = ("pause", "resume", "abort", "retry", "promote", "promote --full")


@st.composite
def histories(draw):
    slices = draw(st.integers(2, 5))
    events = draw(st.lists(st.sampled_from(("step", "step", "tick", "img:1", "img:3", *VERBS)), min_size=1,
                           max_size=12))
    return slices, draw(st.integers(0, 3)), events


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(histories())
def test_twin_runs_of_random_verbs_and_steps_decide_alike(tmp_path_factory, history):
    """The same random events through both stores: after a step (through git, synced, which the
    cluster's RolloutState is then given), time passing or the template changed (reverted to
    img:1, or img:3 committed), every verb has the same exit, refusals, errors, printed line
    and resulting position in both; and, while both stores have seen the rollout from its
    steps (no template committed since), the same history, undo and plan (`read_alike`)."""
    slices, steps, events = history
    twin = Twin(tmp_path_factory.mktemp("twin"), slices=slices, steps=steps)
    templated = False
    for event in events:
        if event == "step":
            if twin.step():
                twin.commit_state("a step")
                twin.seed()
        elif event == "tick":
            twin.clock.seconds += 16 * 60  # past a soak of 15 minutes
        elif event.startswith("img:"):
            templated = True  # (the cluster's history starts at its first pass; git's at the commit)
            twin.template(event)  # the template changed mid-rollout: a revert, or the next image
        else:
            alike(twin, event)
            if steps and not templated and stepped(twin):
                read_alike(twin)


# --- rollout status: one function over either store -----------------------------------------------

def observed(twin: Twin) -> tuple[list, list]:
    """One look of `rollout status` through each store at the same fleet and position: the
    cluster's (the live LWS, the RolloutState seeded from git's position) and git's (the state
    file committed, the same live LWS; the RolloutState kind not served there)."""
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.rollout.git_status import GitLooks
    from kubectl_disagg.inputs import tree as inputs
    from kubectl_disagg.rollout.status import ClusterLooks
    from tests.fakes.cluster import MemorySession

    reading = inputs.Reading()
    directory = directories.load(inputs.read_tree([str(twin.app)], reading), reading)
    synced = MemorySession(twin.argo.cluster, watches=False)
    return (ClusterLooks(twin.cluster, [twin.ds], None).look(),
            [look for look in GitLooks(synced, directory, twin.clock).look() if look.report.name == "llm"])


def shown(look) -> dict:
    """What both stores must agree on: Available, complete, the roles' counts, the RolloutPolicy's
    rollout (who acted left out) and whether nothing but a person moves it."""
    from kubectl_disagg.core.delivery.rollout_status import rollout_document
    from tests.support.stores import anonymous

    report = look.report
    return {"available": report.available, "complete": report.complete, "roles": report.roles,
            "rollout": anonymous(rollout_document(report.paced)) if report.paced else None, "still": look.still}


@pytest.mark.parametrize("verbs", [[], ["pause"], ["abort"], ["promote"], ["abort", "retry"], ["promote --full"]])
def test_status_observes_alike_in_both_stores(verbs, tmp_path):
    """Issue 48: `rollout status` is one function over the store; at the same fleet and position
    both stores report the same Available, complete, roles, rollout and stillness (the sync part
    only through git), and -w ends alike where nothing moves the rollout."""
    twin = Twin(tmp_path)
    for verb in verbs:
        alike(twin, verb)
    (in_cluster,), (in_git,) = observed(twin)
    assert shown(in_git) == shown(in_cluster), verbs
    assert in_cluster.report.sync is None and in_git.report.sync is not None


def test_status_watch_at_the_canary_s_pause_ends_held_in_both_stores(tmp_path):
    """-w over either store at the canary held at its pause: the first look is the last, held
    (exit 7 in both), the same set reported held."""
    from kubectl_disagg.exits import StatusExit
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.rollout.git_status import GitLooks
    from kubectl_disagg.inputs import tree as inputs
    from kubectl_disagg.rollout.outcome import STATUS_EXIT
    from kubectl_disagg.rollout.status import ClusterLooks, watch_status
    from kubectl_disagg.wait import Deadline
    from tests.fakes.cluster import MemorySession

    twin = Twin(tmp_path)
    reading = inputs.Reading()
    directory = directories.load(inputs.read_tree([str(twin.app)], reading), reading)
    directory.sets[:] = [entry for entry in directory.sets if entry.ds.name == "llm"]
    synced = MemorySession(twin.argo.cluster, watches=False)
    ends = []
    for cluster, store in ((twin.cluster, ClusterLooks(twin.cluster, [twin.ds], None)),
                           (synced, GitLooks(synced, directory, twin.clock))):
        looks, held = [], []
        outcome = watch_status(cluster, store, lambda reports, now: "", watch=True, write=looks.append,
                               held=held.extend, deadline=Deadline.after(5))
        ends.append((STATUS_EXIT[outcome], len(looks), [report.name for report in held]))
    assert ends == [(StatusExit.HELD, 1, ["llm"])] * 2


# --- rollout step over both stores: the same fleet, stepped alike ---------------------------------

# From img:1 at rest to img:2 under the policy: the canary held at its pause, promoted, the
# second wave soaked (15 minutes: held until the clock passes it), the rest; readiness between
# the steps, a pause and its resume on the way. Each entry: an event, then what `rollout step`
# ends with in both stores (git's "waiting" and "complete" are a terminal pass with nothing to do).
ROLLOUT = [("img:2", StepExit.OK), ("ready", StepExit.HELD), ("promote", StepExit.OK), ("pause", StepExit.HELD),
           ("ready", StepExit.HELD), ("resume", StepExit.HELD), ("ready", StepExit.HELD), ("tick", StepExit.OK),
           ("ready", StepExit.OK), ("ready", StepExit.OK), ("ready", StepExit.OK)]


def test_step_moves_the_same_fleet_alike_in_both_stores(tmp_path, monkeypatch):
    """`rollout step` in the cluster (passes writing the LWS and the RolloutState) and through
    git (commits of the state file, each synced as Argo CD syncs it), over the same fleet from
    the same position: after every step the same LWS run (slice, role, revision, replicas), the
    same position is recorded, and the step ends alike (its exit tables mapped: STEP_ENDS)."""
    twins = LiveTwins(tmp_path, monkeypatch, slices=4)
    for _ in range(2):  # img:1 deployed, then at rest
        twins.step_terminal(), twins.step_git()
        twins.ready()
    for event, ends in ROLLOUT:
        if event.startswith("img:"):
            twins.edit(image=event)
        elif event == "ready":
            twins.ready()
        elif event == "tick":
            twins.clock.seconds += 16 * 60  # past the second wave's soak
        else:
            assert twins.verb(event) == (VerbExit.OK, VerbExit.OK), event
        terminal, in_git = twins.step_terminal(), twins.step_git()
        assert (terminal, STEP_ENDS[in_git]) == (ends, ends), (event, terminal, in_git)
        assert running(twins.live(twins.argo.cluster)) == running(twins.live(twins.terminal.memory)), event
        assert twins.git_position() == twins.terminal_position(), event
    assert twins.status_terminal()[1]["complete"] and twins.status_git()[1]["complete"]
    assert {lws[2] for lws in running(twins.live(twins.argo.cluster))["lws"].values()} == {
        next(iter(running(twins.live(twins.terminal.memory))["lws"].values()))[2]}  # every slice at img:2
