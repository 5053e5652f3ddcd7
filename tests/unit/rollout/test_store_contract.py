"""The position stores' contract (design §9.8, rollout/store.py `PositionStore`): the same verbs
over the same fleet and position decide alike in the cluster (`ClusterStore`, the RolloutState
in the in-memory cluster) and through git (`GitStore`, the state file in a real temporary git
repository, committed): the same exit codes, refusals, errors and positions (issue 47 items 8
and 10); and twin runs of random verbs between random steps, compared after every verb."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataclasses import replace

from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import VerbExit
from kubectl_disagg.rollout import history as recorded
from kubectl_disagg.rollout.plan import live_plans
from kubectl_disagg.rollout.verbs import VERB_ATTEMPTS
from tests.support.cli import run
from tests.support.stores import Twin, git

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
