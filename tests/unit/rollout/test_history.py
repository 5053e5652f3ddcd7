"""The history `rollout step` and the verbs keep in the RolloutState object (issue 40): three
rollouts over an in-memory cluster, the middle one aborted, read back by `rollout history`'s
library call; a set without a policy keeps one too."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kubectl_disagg.core.delivery.history import ABORTED, COMPLETE
from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.exits import StepExit, VerbExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.history import histories
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.views.history import format_history
from kubectl_disagg.wait import Deadline
from tests.fakes.paced import NS, PacedCluster, Printer
from tests.support.sets import fleet, make_set

POLICY = RolloutPolicy("llm", NS, "llm", (Wave(1),), 1)


def at(image: str, policy=POLICY):
    return replace(make_set({"prefill": 1, "decode": 1}, image=image, slices=2), policy=policy)


def cluster_history(cluster, ds=None):
    """The entries the cluster's store records for `llm` (rollout/history.py `histories`)."""
    (recorded,) = histories(ClusterStore(cluster, [ds or at("img:2")], NS))
    return recorded.entries


def until_complete(cluster, ds) -> StepExit:
    return run.step(ClusterStore(cluster, [ds]), Printer(), run.StepOptions(until_complete=True, deadline=Deadline.after(30)))


def test_three_rollouts_one_aborted_read_back_newest_first():
    memory, first = fleet(2, POLICY)
    cluster = PacedCluster(memory)
    assert until_complete(cluster, first) == StepExit.OK
    second = at("img:3")
    assert run.step(ClusterStore(cluster, [second]), Printer()) == StepExit.OK  # slice 0 started
    assert run_verb(ClusterStore(cluster, [second], None), "abort", Printer(), reason="p99 doubled") == VerbExit.OK
    assert until_complete(cluster, second) == StepExit.HELD  # rolled back
    third = at("img:4")
    assert until_complete(cluster, third) == StepExit.OK
    entries = cluster_history(cluster)
    assert [(e.revision, e.outcome, e.back) for e in entries] == [
        (first.revision, COMPLETE, False), (second.revision, ABORTED, False), (third.revision, COMPLETE, False)]
    assert entries[1].why == "p99 doubled" and entries[1].by and entries[1].ended is not None
    text = format_history("llm", NS, entries).splitlines()
    assert text[0] == f"disaggregatedset/llm in {NS}: 3 revisions, newest first"
    assert text[2].split()[0] == third.revision and text[2].endswith("prefill, decode: image img `3 → 4`")
    assert f"by {entries[1].by}: p99 doubled" in text[3]


def test_a_set_without_a_policy_keeps_its_history_and_the_limit_holds():
    memory, first = fleet(1, None)
    cluster = PacedCluster(memory)
    assert until_complete(cluster, first) == StepExit.OK
    cluster.state["revisionHistoryLimit"] = 2
    for image in ("img:3", "img:4"):
        assert until_complete(cluster, replace(at(image, None), slices=1)) == StepExit.OK
    entries = cluster_history(cluster)
    assert [e.outcome for e in entries] == [COMPLETE, COMPLETE] and cluster.state["revisionHistoryLimit"] == 2
    assert entries[-1].templates.roles[0].spec["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0][
        "image"] == "img:4"
    assert cluster.state["rollout"]["phase"] == "AtRest" and "position" not in cluster.state


def test_a_rollout_back_to_a_revision_the_set_ran_reads_as_a_rollback_through_the_waves():
    from kubectl_disagg.core.delivery.fleet import fleet_of
    from kubectl_disagg.rollout.stepper import Pass
    from kubectl_disagg.views.fleet import progress_line, slice_sentence

    memory, first = fleet(2, POLICY)
    cluster = PacedCluster(memory)
    assert until_complete(cluster, first) == StepExit.OK
    assert until_complete(cluster, at("img:3")) == StepExit.OK
    printer = Printer()
    assert run.step(ClusterStore(cluster, [first]), printer) == StepExit.OK  # back: the canary first
    passes = [p for p in printer.shown if isinstance(p, Pass)]
    fleet_now = fleet_of(first, passes[0].reconciliation)
    assert fleet_now.returning and not fleet_now.rollback
    line = progress_line(fleet_now)
    assert line.startswith(f"llm: rollback to {first.revision} (a revision it ran before): wave 1 of 2 (slice 0)")
    assert slice_sentence(passes[0].reconciliation.slices[0], fleet_now) == \
        f"rollback to revision {first.revision} started"
    assert until_complete(cluster, first) == StepExit.OK
    entries = cluster_history(cluster)
    assert [(e.revision, e.outcome, e.back) for e in entries][-1] == (first.revision, COMPLETE, True)
    again = Printer()
    assert run.step(ClusterStore(cluster, [first]), again) == StepExit.OK  # at rest: no longer going back
    assert not any(p.reconciliation.returning for p in again.shown if isinstance(p, Pass))


def three_rollouts_one_aborted():
    """The history of the first test: img:2 complete, img:3 aborted, img:4 complete."""
    memory, first = fleet(2, POLICY)
    cluster = PacedCluster(memory)
    assert until_complete(cluster, first) == StepExit.OK
    second = at("img:3")
    assert run.step(ClusterStore(cluster, [second]), Printer()) == StepExit.OK
    assert run_verb(ClusterStore(cluster, [second], None), "abort", Printer(), reason="p99 doubled") == VerbExit.OK
    assert until_complete(cluster, second) == StepExit.HELD
    third = at("img:4")
    assert until_complete(cluster, third) == StepExit.OK
    return cluster, first, second, third


def test_issue47_a_forged_history_entry_is_refused_by_history_and_undo(tmp_path, capsys):
    """An image patched into a history entry (its templates no longer hash to its revision):
    `rollout history` and `rollout undo` refuse it, naming the entry, as a forged position is;
    nothing is written. An honest undo prints the revision the set was left at."""
    from kubectl_disagg.manifests.writer import to_yaml
    from tests.support.cli import on, run as cli
    from tests.support.stepping import model

    cluster, first, _, third = three_rollouts_one_aborted()
    path = tmp_path / "llm.yaml"
    path.write_text(to_yaml(third.source.data))
    honest = path.read_text()
    cluster.state["history"][0]["roles"][1]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0][
        "image"] = "evil:666"
    refusal = "rolloutstate/llm: history[0].revision: the role templates recorded here hash to revision "
    for argv in (["rollout", "history", "-f", str(path)], ["rollout", "undo", "-f", str(path)],
                 ["rollout", "undo", "-f", str(path), "--to-revision", first.revision]):
        code, out, err = cli(argv, capsys, options=on(cluster))
        assert (code, out) == (1, ""), (argv, out)
        assert err.startswith(refusal) and err.rstrip().endswith(
            f"not {first.revision} (edited by hand?): this entry cannot be shown or rolled back to"), err
        assert path.read_text() == honest
    cluster.state["history"][0]["roles"][1]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0][
        "image"] = "img:2"
    code, out, err = cli(["rollout", "undo", "-f", str(path), "--to-revision", first.revision], capsys,
                         options=on(cluster))
    assert (code, out) == (0, f"disaggregatedset/llm rolled back to revision {model(path).revision}\n"), err
    assert model(path).revision == first.revision


@pytest.mark.parametrize("policy", [POLICY, None], ids=["policy", "no-policy"])
def test_issue47_a_rollout_driven_by_single_steps_is_recorded_complete_by_the_status_that_sees_it(policy):
    """Single `rollout step`s until `rollout status --for=complete` exits 0: the status that
    observes the rollout complete records it (the history's entry complete, the RolloutState at
    rest for Argo CD), so the next image does not find it still rolling and call it replaced."""
    from kubectl_disagg.core.delivery.status import Until
    from kubectl_disagg.core.delivery.outcome import Outcome
    from kubectl_disagg.rollout.status import ClusterLooks, watch_status

    memory, first = fleet(2, policy)
    cluster = PacedCluster(memory)

    def complete() -> bool:
        return watch_status(cluster, ClusterLooks(cluster, [first], None), lambda reports, now: "", write=lambda text: None,
                            until=Until.COMPLETE) == Outcome.AVAILABLE

    for _ in range(20):
        if complete():
            break
        assert run.step(ClusterStore(cluster, [first]), Printer()) == StepExit.OK
        memory.settle()
    else:
        raise AssertionError("never complete")
    assert cluster.state["history"][-1]["outcome"] == COMPLETE
    assert cluster.state["rollout"]["phase"] == "AtRest" and "at rest" in cluster.state["rollout"]["message"]
    writes = len(cluster.writes)
    assert complete() and len(cluster.writes) == writes  # recorded once
    assert run.step(ClusterStore(cluster, [at("img:3", policy)]), Printer()) == StepExit.OK
    assert [e.outcome for e in cluster_history(cluster)] == [COMPLETE, "rolling"]


def test_issue48_undo_reads_its_inputs_once(tmp_path, monkeypatch, capsys):
    """Issue 48: `rollout undo -f` read its inputs twice (the history's sets, then the files to
    rewrite), against design §1.1; a set given on stdin was gone by the second read ("no
    DisaggregatedSet found"). Read once, the undo of stdin prints the set rolled back."""
    from kubectl_disagg.manifests.writer import to_yaml
    from tests.support.cli import on, run as cli

    cluster, first, _, third = three_rollouts_one_aborted()
    code, out, err = cli(["rollout", "undo", "-f", "-", "--to-revision", first.revision, "--dry-run", "-o", "name"],
                         capsys, stdin=to_yaml(third.source.data), monkeypatch=monkeypatch, options=on(cluster))
    assert (code, out) == (0, "disaggregatedset/llm\n"), err
