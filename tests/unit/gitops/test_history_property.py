"""One history in both stores (issue 47): random histories of template changes, steps, aborts
and retries, kept by the cluster's rules (core/delivery/history.py `advance`, a call per pass or verb)
and read back from git's commits (gitops/history.py `revisions`, a commit per change of the set
or of its state file) give the same revisions, the same outcomes, and the same undo, at every
point of the history."""

from __future__ import annotations

import datetime
from types import SimpleNamespace

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubectl_disagg.core.delivery.history import advance, entries
from kubectl_disagg.core.delivery.undo import target_of
from kubectl_disagg.gitops.history import Commit, revisions
from tests.support.sets import make_set

SETS = [make_set({"prefill": 1, "decode": 1}, image=f"img:{n}") for n in range(3)]
EVENTS = st.lists(st.one_of(st.tuples(st.just("image"), st.integers(0, len(SETS) - 1)),
                            st.tuples(st.sampled_from(["step", "finish", "abort", "retry"]), st.just(0))),
                  max_size=24)
START = datetime.datetime(2026, 12, 7, 10, tzinfo=datetime.timezone.utc)


class Twins:
    """The same events kept by both stores: the cluster's list, and git's commits."""

    def __init__(self):
        self.ds = SETS[0]
        self.held = {self.ds.revision}  # what the slices run
        self.position: dict = {"revision": self.ds.revision}
        self.cluster: list = []
        self.versions: list = []
        self.ticks = 0
        self.record(complete=True)  # deployed: the first pass finds it at rest

    def now(self) -> str:
        self.ticks += 1
        return (START + datetime.timedelta(minutes=self.ticks)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def stamp(self, key: str) -> SimpleNamespace | None:
        raw = self.position.get(key) if self.position["revision"] == self.ds.revision else None
        return SimpleNamespace(**raw) if raw else None

    def record(self, complete: bool) -> None:
        """A pass or a verb over the set: the cluster's call, and git's state commit."""
        now = self.now()
        self.cluster = advance(self.cluster, self.ds, now=now, who=lambda: "alice", complete=complete,
                               aborted=self.stamp("aborted"), retried=self.stamp("retried"), limit=1000)
        # (once the position aborts the set's revision, the steps roll toward what else the slices run)
        toward = self.ds.revision if self.stamp("aborted") is None else min(self.held - {self.ds.revision}, default="")
        state = {"target": {"revision": toward}, "position": dict(self.position),
                 "slices": [{"slice": 0, "revisions": [{"revision": r} for r in sorted(self.held)]}]}
        self.commit(now, state)

    def commit(self, now: str, state: dict | None = None) -> None:
        state = state if state is not None else self.versions[-1][2]
        self.versions.append((Commit(f"{len(self.versions):040x}", "alice", now, "c"), self.ds, state))

    def apply(self, event: str, argument: int) -> None:
        mine = self.position["revision"] == self.ds.revision
        aborted = mine and "aborted" in self.position
        if event == "image":
            self.ds = SETS[argument]
            self.commit(self.now())
        elif event in ("step", "finish"):
            if not mine:  # a rollout of its own starts
                self.position = {"revision": self.ds.revision}
            if aborted:  # the rollback: the slices leave the aborted revision
                self.held = (self.held - {self.ds.revision}) or {self.position.get("stable", SETS[0].revision)}
            elif event == "finish":
                self.held = {self.ds.revision}
            else:
                self.held = self.held | {self.ds.revision}
            self.record(complete=not aborted and self.held == {self.ds.revision})
        elif event == "abort" and mine and not aborted and self.held != {self.ds.revision}:
            self.position = {**self.position, "aborted": {"at": self.now(), "by": "bob", "reason": "p99"}}
            self.record(complete=False)
        elif event == "retry" and aborted:
            self.position = {"revision": self.ds.revision, "retried": {"at": self.now(), "by": "carol", "reason": ""}}
            self.record(complete=False)

    def compared(self) -> tuple[list, list]:
        return ([(e.revision, e.outcome, e.back, e.retry) for e in entries(self.cluster)],
                [(e.revision, e.outcome, e.back, e.retry) for e in revisions(self.versions)])


def undo_of(listed, current: str) -> str:
    """Where `rollout undo` goes (a revision), or that it refuses."""
    target = target_of(listed, current, None)
    return "refused" if isinstance(target, str) else target.revision


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(EVENTS)
@example([("image", 1), ("step", 0), ("abort", 0), ("step", 0), ("retry", 0), ("finish", 0), ("image", 2)])
@example([("image", 1), ("image", 2), ("step", 0), ("image", 1)])
@example([("image", 1), ("step", 0), ("abort", 0), ("step", 0), ("image", 2), ("finish", 0)])
def test_the_cluster_and_git_keep_one_history_and_undo_alike(events):
    twins = Twins()
    for event, argument in events:
        twins.apply(event, argument)
        current = twins.ds.revision
        assert undo_of(entries(twins.cluster), current) == undo_of(revisions(twins.versions), current), (
            events, twins.compared())
    twins.apply("step", 0)  # the set's revision stepped: git lists nothing the cluster has not seen
    cluster, git = twins.compared()
    assert cluster == git, events
