"""Issue 47: history's CHANGE column named a role once per template it changed ("prefill,
prefill, decode": the leader's and the worker's) and read "no template change" for a retry."""

from __future__ import annotations

from kubectl_disagg.core.delivery.history import ABORTED, Commit, RevisionEntry, RoleTemplate, Templates
from kubectl_disagg.views.history import change_words, format_history


def templates(revision: str, image: str, leader: bool = True) -> Templates:
    def spec(role_image: str) -> dict:
        pod = {"spec": {"containers": [{"name": "server", "image": role_image}]}}
        return {"leaderWorkerTemplate": {**({"leaderTemplate": pod} if leader else {}), "workerTemplate": pod}}
    return Templates(revision, (RoleTemplate("prefill", spec(image)), RoleTemplate("decode", spec(image))))


def entry(record, before, **fields) -> RevisionEntry:
    return RevisionEntry(record.revision, Commit("", "alice", "2026-12-07T12:00:00Z", ""), record, before, **fields)


def test_a_role_whose_leader_and_worker_change_is_named_once():
    old, new = templates("aaaa1111", "img:1"), templates("bbbb2222", "img:2")
    assert change_words(entry(new, old)) == "prefill, decode: image img `1 → 2`"


def test_a_retry_says_it_is_one():
    old, new = templates("aaaa1111", "img:1"), templates("bbbb2222", "img:2")
    entries = [entry(old, None), entry(new, old, outcome=ABORTED), entry(new, new)]
    assert change_words(entries[2]) == "retry of bbbb2222"
    assert "no template change" not in format_history("llm", "ns", entries, "text")


def test_wide_adds_who_ended_each_revision_and_the_commit_that_started_it(capsys):
    """Issue 47: `-o wide` was refused; as kubectl's, it is the table with more columns."""
    from tests.support.cli import run

    old, new = templates("aaaa1111", "img:1"), templates("bbbb2222", "img:2")
    started = Commit("0123456789abcdef", "alice", "2026-12-07T12:00:00Z", "roll img:2 out")
    entries = [entry(old, None),
               RevisionEntry(new.revision, started, new, old, outcome=ABORTED, by="bob", why="ttft too slow")]
    lines = format_history("llm", "ns", entries, "wide").splitlines()
    assert lines[1].split() == ["REVISION", "STARTED", "ENDED", "CHANGE", "ENDED", "BY", "COMMIT", "SUBJECT"]
    assert lines[2].split()[-4:] == ["bob", "roll", "img:2", "out"]
    assert lines[3].split()[-2:] == ["-", "-"]
    code, _, err = run(["rollout", "history", "llm", "-o", "wide", "--kubeconfig", "/nonexistent"], capsys)
    assert code != 2, err  # accepted (the kubeconfig is what fails)
