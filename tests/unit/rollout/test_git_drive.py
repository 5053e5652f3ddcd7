"""The rollout driver (`rollout step --gitops --push`, issue 49) over a real bare remote: the bot
lands the mechanical steps, stops at each decision, and goes on after a person's merge; the
faults (the remote moved, a push refused, a crash at each point, two drivers, a sync that never
comes) each end with no step lost or doubled."""

from __future__ import annotations

import pytest

from kubectl_disagg.gitops.remote import Clone
from tests.support.git_drive import APP, Remote, RemoteArgo, drive, git

class Crash(BaseException):
    """The process dies here."""


CANARY = {"maxSlicesInFlight": 1, "waves": [{"slices": 1, "pause": {}}, {"slices": "100%"}]}


def deployed(tmp_path, capsys, slices: int = 1, policy: dict | None = None, image: str = "img:2"):
    """The set deployed through the driver, then a person's template change on main."""
    remote = Remote(tmp_path, slices, {"prefill": 1, "decode": 1}, policy or {})
    session = RemoteArgo(remote)
    assert drive(remote, session, capsys)[0] == 0
    remote.person_pushes(image, f"llm: {image}")
    return remote, session


def assert_each_step_once(remote: Remote) -> None:
    """main's state commits (merges of decisions included) count 1, 2, 3, ... toward the revision,
    each step once: none lost (no jump), none doubled (a count moves only by a verb, which keeps it)."""
    states = remote.main_states()
    start = max(at for at, (_, subject) in enumerate(states) if ", step " not in subject and "Merge" not in subject
                and "promote" not in subject.lower())
    counts = [commits for commits, _ in states[start + 1:]]
    assert counts[0] == 1 and all(b - a == 1 or (b == a and "promote" in s.lower())
                                  for (a, _), (b, s) in zip(states[start + 1:], states[start + 2:])), states


def test_a_canary_rollout_lands_its_steps_and_stops_only_at_the_decisions(tmp_path, capsys):
    remote, session = deployed(tmp_path, capsys, slices=3, policy=CANARY)
    code, out = drive(remote, session, capsys)
    assert code == 7, out
    lines = out.splitlines()
    assert [line.split(" ", 1)[1] for line in lines[:3]] == [
        f"llm: rollout to {revision}, step {n} · wave 1 of 2 · slice 0" for n in (1, 2, 3)
        for revision in [lines[0].split()[4].rstrip(",")]]  # one line per step landed, its progress
    assert lines[3].startswith("decision: a pause is reached: llm: rollout to ") and "1 of 3 slices done" in lines[3]
    (branch,) = remote.decision_branches()
    assert branch.endswith("/step-4-pause") and branch in lines[4] and "waits for review" in lines[4]
    assert lines[5] == f"  then: kubectl disagg rollout step --until-complete --push origin --gitops -f {remote.work / APP}"
    assert len(lines) == 6
    assert git(remote.work, "status", "--porcelain") == "" and git(remote.work, "rev-parse", "HEAD") == remote.main()  # the local branch put back: the decision is on its branch

    again = drive(remote, session, capsys)  # not merged yet: the same decision, not a second one
    assert again[0] == 7 and "still waits for review" in again[1] and list(remote.decision_branches()) == [branch]

    remote.merge(branch)  # the person's decision
    code, out = drive(remote, session, capsys)
    assert code == 7 and f"decision {branch} merged by carol <carol@example.invalid>" in out, out
    assert "held: the RolloutPolicy holds the rollout" in out and "rollout promote" in out
    assert remote.decision_branches() == {}  # merged: deleted

    remote.promote(capsys, session)  # the person's second decision: promote at the pause
    code, out = drive(remote, session, capsys)
    assert code == 7 and "decision: a wave starts" in out, out
    (branch,) = remote.decision_branches()
    remote.merge(branch)
    code, out = drive(remote, session, capsys)
    assert code == 0 and out.splitlines()[-1].startswith("complete: nothing left to roll"), out
    assert_each_step_once(remote)
    authors = set(git(remote.desk, "log", "--format=%an <%ae>", "--no-merges", "origin/main", "--", f"{APP}/disagg-rollout-state.yaml").splitlines())
    assert authors == {"disagg-bot <bot@example.invalid>", "carol <carol@example.invalid>"}  # carol: the promote


def test_kinds_not_reviewed_land_by_themselves(tmp_path, capsys):
    remote, session = deployed(tmp_path, capsys, slices=2, policy={"maxSlicesInFlight": 1, "waves": [
        {"slices": 1}, {"slices": "100%"}]})
    code, out = drive(remote, session, capsys, "--review", "pause,abort")
    assert code == 0, out
    assert remote.decision_branches() == {}
    assert_each_step_once(remote)


def test_a_dirty_tree_is_refused(tmp_path, capsys):
    remote, session = deployed(tmp_path, capsys)
    (remote.work / APP / "notes.txt").write_text("mine\n")
    code, out = drive(remote, session, capsys)
    assert code == 1 and "the working tree has changes (app/notes.txt)" in out
    assert [subject for _, subject in remote.main_states()][-1] == "llm: img:2"  # nothing landed


def test_a_push_the_remote_refuses_says_so_and_stops(tmp_path, capsys):
    remote, session = deployed(tmp_path, capsys)
    remote.protect()
    code, out = drive(remote, session, capsys)
    assert code == 1, out
    assert "error: origin refused the push to main (a protected branch?); nothing landed:" in out
    assert "main is protected: changes land through a pull request" in out
    assert git(remote.work, "status", "--porcelain") == "" and [s for _, s in remote.main_states()][-1] == "llm: img:2"


def test_the_remote_moved_while_deciding_the_step_is_decided_again_never_rebased(tmp_path, capsys):
    remote, session = deployed(tmp_path, capsys)
    session.on_watch = lambda: remote.person_pushes(None, "docs: a line")
    code, out = drive(remote, session, capsys)
    assert code == 0 and "origin/main moved while the step was decided: the step was dropped, deciding again" in out
    assert_each_step_once(remote)


def test_two_drivers_one_step_lands_the_other_decides_again(tmp_path, capsys):
    remote, session = deployed(tmp_path, capsys)
    other = remote._clone("other")

    def the_other_driver_steps():
        session.sync()  # the other driver's wait saw the sync first
        code, out, err = __import__("tests.support.cli", fromlist=["run"]).run(
            ["rollout", "step", "--gitops", "-f", str(other / APP), "--commit"], capsys,
            options=__import__("tests.support.cli", fromlist=["on"]).on(session))
        assert code == 0, err
        git(other, "push", "-q", "origin", "main")

    session.on_watch = the_other_driver_steps
    code, out = drive(remote, session, capsys)
    assert code == 0 and "moved while the step was decided" in out, out
    assert_each_step_once(remote)


def test_a_crash_between_commit_and_push_resumes_without_a_second_step(tmp_path, capsys, monkeypatch):
    remote, session = deployed(tmp_path, capsys)
    real = Clone.push

    def crash(self, commit, branch):
        raise Crash  # the process dies after the commit, before the push
    monkeypatch.setattr(Clone, "push", crash)
    with pytest.raises(Crash):
        drive(remote, session, capsys)
    assert git(remote.work, "rev-list", "--count", "origin/main..HEAD") == "1"  # committed, not pushed
    monkeypatch.setattr(Clone, "push", real)
    code, out = drive(remote, session, capsys)
    assert code == 0 and "dropped the step commit(s) that never reached the remote" in out, out
    assert_each_step_once(remote)


def test_a_crash_between_push_and_sync_resumes_without_a_second_step(tmp_path, capsys, monkeypatch):
    remote, session = deployed(tmp_path, capsys)
    real = Clone.push

    def push_then_crash(self, commit, branch):
        real(self, commit, branch)
        raise Crash  # landed, then the process dies before the sync
    monkeypatch.setattr(Clone, "push", push_then_crash)
    with pytest.raises(Crash):
        drive(remote, session, capsys)
    monkeypatch.setattr(Clone, "push", real)
    code, out = drive(remote, session, capsys)
    assert code == 0, out
    assert_each_step_once(remote)


def test_a_sync_that_never_comes_names_the_commit_not_applied(tmp_path, capsys):
    remote, session = deployed(tmp_path, capsys)
    session.syncs = False
    code, out = drive(remote, session, capsys, timeout="1s")
    main = remote.main()
    assert code == 4, out
    assert f"timed out: the cluster does not show {main[:12]} (llm: img:2) of origin" in out
    assert [s for _, s in remote.main_states()][-1] == "llm: img:2"  # nothing landed
