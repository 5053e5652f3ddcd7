"""The cluster's revision history (core/delivery/history.py): a new entry per revision, how each rollout
ended, a retry, the bound; read back as entries."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_disagg.core.delivery.history import (
    ABORTED, COMPLETE, REPLACED, ROLLING, advance, entries, forged, history_of, limit_of, templates_of)
from tests.support.sets import make_set

A, B, C = (make_set({"prefill": 1, "decode": 1}, image=f"img:{n}") for n in (1, 2, 3))


def asked(name="alice"):
    calls = []

    def who():
        calls.append(name)
        return name
    return who, calls


def test_a_revision_starts_an_entry_once_and_ends_complete_or_replaced():
    who, calls = asked()
    history = advance([], A, now="t1", who=who, complete=False)
    history = advance(history, A, now="t2", who=who, complete=False)
    assert len(history) == 1 and calls == ["alice"]  # who is asked only when an entry starts
    history = advance(history, A, now="t3", who=who, complete=True)
    assert history[-1]["outcome"] == COMPLETE and history[-1]["ended"] == {"at": "t3"}
    assert advance(history, A, now="t4", who=who, complete=True) == history  # ended once
    history = advance(history, B, now="t5", who=who, complete=False)
    history = advance(history, C, now="t6", who=who, complete=False)  # B never completed
    assert [(e["revision"], e["outcome"]) for e in history] == [
        (A.revision, COMPLETE), (B.revision, REPLACED), (C.revision, ROLLING)]
    assert history[0]["roles"] == [{"name": "prefill", "leaderWorkerTemplate": {"workerTemplate": {"spec": {
        "containers": [{"name": "c", "image": "img:1"}]}}}}, {"name": "decode", "leaderWorkerTemplate": {
        "workerTemplate": {"spec": {"containers": [{"name": "c", "image": "img:1"}]}}}}]
    back = advance(history, A, now="t7", who=who, complete=False)
    assert back[-1]["rollback"] is True and "rollback" not in back[0]


def test_an_abort_ends_the_entry_with_who_and_why_and_a_retry_starts_it_again():
    who, _ = asked()
    history = advance([], B, now="t1", who=who, complete=False)
    stamp = SimpleNamespace(at="t2", by="bob", reason="ttft doubled")
    history = advance(history, B, now="t3", who=who, complete=False, aborted=stamp)
    assert history[-1] | {} == {**history[-1], "outcome": ABORTED, "ended": {"at": "t2"}, "by": "bob",
                                "reason": "ttft doubled"}
    assert advance(history, B, now="t4", who=who, complete=True, aborted=stamp) == history
    retried = SimpleNamespace(at="t5", by="carol", reason="node fixed")
    history = advance(history, B, now="t6", who=who, complete=False, retried=retried)
    assert [(e["outcome"], e.get("retry")) for e in history] == [(ABORTED, None), (ROLLING, True)]
    assert history[-1]["started"] == {"at": "t5", "by": "carol"} and history[-1]["retryReason"] == "node fixed"
    assert advance(history, B, now="t7", who=who, complete=False, retried=retried) == history  # once


def test_the_oldest_entries_beyond_the_limit_go_first():
    who, _ = asked()
    history: list = []
    sets = [make_set({"prefill": 1, "decode": 1}, image=f"img:{n}") for n in range(5)]
    for ds in sets:
        history = advance(history, ds, now="t", who=who, complete=True, limit=3)
    assert [e["revision"] for e in history] == [ds.revision for ds in sets[2:]]
    assert limit_of({"revisionHistoryLimit": 3}) == 3
    assert limit_of({"revisionHistoryLimit": 0}) == limit_of({}) == limit_of(None) == 10


def test_entries_read_back_each_against_the_one_before():
    who, _ = asked()
    history = advance(advance([], A, now="t1", who=who, complete=True), B, now="t2", who=who, complete=False)
    read = entries(history_of({"history": [*history, {"no": "revision"}]}))
    assert [(e.revision, e.outcome, e.started.author, e.started.date) for e in read] == [
        (A.revision, COMPLETE, "alice", "t1"), (B.revision, ROLLING, "alice", "t2")]
    assert read[1].before == templates_of(A) and read[1].templates == templates_of(B)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=8), st.data())
def test_issue47_every_entry_advance_writes_hashes_to_its_revision_and_a_forged_one_is_named(images, data):
    """Random histories: nothing `advance` writes is taken for a forgery; an image patched into
    any one entry's template is named, at its index, and no other."""
    who, _ = asked()
    history: list = []
    for image in images:
        history = advance(history, make_set({"prefill": 1, "decode": 1}, image=f"img:{image}"), now="t", who=who,
                          complete=True)
    assert forged({"history": history}) == []
    index = data.draw(st.integers(0, len(history) - 1))
    role = data.draw(st.integers(0, 1))
    history[index]["roles"][role]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = \
        "evil:666"
    assert [path for path, _ in forged({"history": history})] == [("history", index, "revision")]
