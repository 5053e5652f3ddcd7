"""The concurrent writer (`write_scheduler`, through `stepper.run_pass`) over in-memory executors:
orders within a slice kept, bounded in flight, a failure mid-pass stops new units, undoes the
unit it cut short and leaves a state the next pass converges from."""

from __future__ import annotations

import threading
import time

import pytest

from kubectl_disagg.core.controller.reconcile import Annotate, Create, Delete, Scale, reconcile, write_units
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.rollout.stepper import PassInterrupted, run_pass
from kubectl_disagg.rollout.write_scheduler import chains, run_units
from tests.fakes.cluster import MemoryCluster, MemoryExecutor
from tests.support.sets import make_set


class Recorder:
    """Executes nothing; records order and how many writes were out at once, fails on request."""

    def __init__(self, fail_on: set[str] = frozenset(), error: type[UserError] = UserError, delay: float = 0.002):
        self.order: list[str] = []
        self.fail_on, self.error, self.delay = fail_on, error, delay
        self.in_flight = self.peak = 0
        self.lock = threading.Lock()

    def execute(self, action) -> None:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(self.delay)  # long enough for the other workers to overlap
            if action.name in self.fail_on:
                raise self.error(f"leaderworkerset/{action.name} changed since it was read")
            with self.lock:
                self.order.append(action.name)
        finally:
            with self.lock:
                self.in_flight -= 1


def scale(name: str, slice_index: int, revision: str = "r1", to: int = 1) -> Scale:
    return Scale(name, 0, to, "1", slice_index, revision=revision)


def annotate(name: str, slice_index: int) -> Annotate:
    return Annotate(name, {"a": "b"}, "1", slice_index, 1, True)


def create(name: str, slice_index: int) -> Create:
    return Create({"kind": "LeaderWorkerSet", "metadata": {"name": name}}, slice_index)


def pass_actions(slices: int) -> list:
    """Per slice: annotate, create, then a two-role drain and scale-up unit, then a delete."""
    actions = []
    for s in range(slices):
        actions += [annotate(f"old-{s}", s), create(f"new-{s}", s),
                    scale(f"old-{s}-a", s, "old", 0), scale(f"old-{s}-b", s, "old", 0),
                    scale(f"new-{s}-a", s, "new"), scale(f"new-{s}-b", s, "new"),
                    Delete("Service", f"gone-{s}", "u", "1", s)]
    return actions


def test_units_of_one_slice_form_one_chain_in_order():
    units = write_units(pass_actions(3))
    assert [[len(u) for u in chain] for chain in chains(units)] == [[1, 1, 4, 1]] * 3
    assert {a.slice for chain in chains(units) for unit in chain for a in unit} == {0, 1, 2}


@pytest.mark.parametrize("max_in_flight", [1, 4, 16])
def test_every_write_lands_each_slice_in_order_and_never_more_than_the_limit(max_in_flight):
    actions = pass_actions(20)
    recorder = Recorder()
    outcome = run_units(write_units(actions), recorder.execute, lambda landed, failed, err, unit: [], max_in_flight=max_in_flight)
    assert outcome.error is None and outcome.done == actions  # reported in reconcile's order
    assert sorted(recorder.order) == sorted(a.name for a in actions)
    for s in range(20):
        mine = [name for name in recorder.order if name.endswith(f"-{s}") or f"-{s}-" in name]
        assert mine == [f"old-{s}", f"new-{s}", f"old-{s}-a", f"old-{s}-b", f"new-{s}-a", f"new-{s}-b", f"gone-{s}"]
    assert 1 <= recorder.peak <= max_in_flight
    if max_in_flight == 1:
        assert recorder.order == [a.name for a in actions]  # one at a time, exactly reconcile's order
    else:
        assert recorder.peak > 1


def test_a_failure_stops_new_units_and_undoes_the_unit_it_cut_short():
    actions = pass_actions(10)
    undone = []
    recorder = Recorder(fail_on={"new-3-b"}, error=Conflict)

    def undo_unit(landed, failed, err, unit):
        undone.extend(a.name for a in landed)
        return [f"undid: {a.describe()}" for a in landed]

    outcome = run_units(write_units(actions), recorder.execute, undo_unit, max_in_flight=4)
    assert isinstance(outcome.error, Conflict) and "new-3-b" in str(outcome.error)
    assert undone == ["old-3-a", "old-3-b", "new-3-a"]
    assert outcome.undo_notes == [f"undid: {a.describe()}" for a in actions if a.name in undone]
    done = [a.name for a in outcome.done]
    assert not {"old-3-a", "old-3-b", "new-3-a", "new-3-b"} & set(done)
    # Slice 3 stopped at the failing unit: its delete never started.
    assert "gone-3" not in recorder.order
    # Whatever landed elsewhere landed as whole units, in slice order.
    for s in range(10):
        mine = [name for name in done if name.endswith(f"-{s}") or f"-{s}-" in name]
        full = [f"old-{s}", f"new-{s}", f"old-{s}-a", f"old-{s}-b", f"new-{s}-a", f"new-{s}-b", f"gone-{s}"]
        assert mine == full[:len(mine)] and len(mine) in (0, 1, 2, 6, 7)
    assert len(done) < len(actions)


def test_a_real_error_is_reported_before_a_conflict():
    actions = pass_actions(2)

    both_out = threading.Barrier(2, timeout=10)  # both slices' first writes are in flight together

    def execute(action):
        both_out.wait()
        if action.name == "old-0":
            raise Conflict("leaderworkerset/old-0 changed since it was read")
        if action.name == "old-1":
            raise UserError("leaderworkerset/old-1: 403 Forbidden")

    outcome = run_units(write_units(actions), execute, lambda landed, failed, err, unit: [], max_in_flight=2)
    assert type(outcome.error) is UserError and "403" in str(outcome.error)


def test_a_409_in_the_middle_of_a_concurrent_pass_leaves_a_state_the_next_pass_converges_from():
    cluster = MemoryCluster("serving")
    executor = MemoryExecutor(cluster)
    old = make_set({"prefill": 2, "decode": 1}, slices=8)
    for _ in range(10):
        if run_pass(executor, old, "serving", max_in_flight=8).complete:
            break
        cluster.settle()
    new = make_set({"prefill": 2, "decode": 1}, slices=8, image="img:2")
    # The rollout start: annotate every old LWS, create every new one; a 409 on slice 5's.
    planned = reconcile(new, cluster.snapshot(new.name)).actions
    executor.conflict_on = next(a.name for a in planned if isinstance(a, Create) and a.slice == 5)
    with pytest.raises(PassInterrupted) as interrupted:
        run_pass(executor, new, "serving", max_in_flight=8)
    assert isinstance(interrupted.value.error, Conflict)
    done = interrupted.value.partial.done
    assert 0 < len(done) < len(planned) and all(a in planned for a in done)
    # Passes from here on converge: the same end state as a run without the 409.
    for _ in range(40):
        result = run_pass(executor, new, "serving", max_in_flight=8)
        if result.complete:
            break
        cluster.settle()
    assert result.complete
    assert all(s.phase == "steady" for s in result.reconciliation.slices)
