"""Fleet-sized text (issue 39): `rollout step` over 12 and 100 slices, as a person reads it.

Driven through `run.step` (`rollout.store.ClusterStore`) and the real Console over the in-memory cluster with a
RolloutPolicy (tests/fakes/paced.py), whose LWS turn ready one
watch after they are scaled, as the LWS controller's do: each step waits at least once."""

from __future__ import annotations

import contextlib
import io
import re

from kubectl_disagg.core.api.naming import spans
from kubectl_disagg.core.delivery.fleet import fleet_of, situations
from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.core.controller.reconcile import Rollback
from kubectl_disagg.exits import StepExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.views.stops import abort_sentence
from kubectl_disagg.views.step_console import Console
from tests.support.sets import fleet
from tests.fakes.paced import Lagging, brake
from tests.support.fleet_text import CANARY_25_100, lines, stepped

NS = "serving"


# --- the budgets -----------------------------------------------------------------------------------


def test_a_100_slice_rollout_to_the_canarys_gate_prints_at_most_40_lines():
    # Before: 324 lines (each waiting pass listed all 100 slices, 99 of them "held: its wave has not started").
    memory, ds = fleet(100, RolloutPolicy("llm", NS, "llm", CANARY_25_100, 3))
    code, out, err = stepped(Lagging(memory), ds)
    assert code == StepExit.HELD and "wave 1 is paused" in err
    assert lines(out, err) <= 40, out + err
    assert "held" not in out + err.split("is held;")[0]  # no held slice is listed one by one


def test_a_whole_12_slice_3_wave_rollout_prints_at_most_150_lines():
    # Before: 397 lines (every action of every slice listed, every slice on each waiting pass); now 49.
    memory, ds = fleet(12, RolloutPolicy("llm", NS, "llm", CANARY_25_100, 3))
    code, out, err = stepped(Lagging(memory), ds, promote_at_gates=True)
    assert code == StepExit.OK, err
    assert "rollout complete at revision" in out
    assert lines(out, err) <= 150, out + err
    assert "slices 3-5: rollout to revision" in out  # the budget's slices, one line


# --- what the lines say ------------------------------------------------------------------------------


def test_each_pass_ends_with_the_fleets_progress_line():
    memory, ds = fleet(12, RolloutPolicy("llm", NS, "llm", CANARY_25_100, 3))
    code, out, err = stepped(Lagging(memory), ds)
    progress = [line for line in err.splitlines() if line.startswith("llm: ")]
    assert progress[0] == ("llm: wave 1 of 3 (slice 0), slice 0 in flight (at most 3), 0 of 12 slices done; "
                           "next gate: a pause after wave 1")
    assert progress[-1] == "llm: wave 1 of 3 (slice 0), 1 of 12 slices done; at the gate: a pause after wave 1"
    # piped, a line that did not change since the last one is not printed again
    assert all(before != after for before, after in zip(progress, progress[1:]))


def test_quiet_prints_only_the_progress_line_and_errors():
    memory, ds = fleet(12, RolloutPolicy("llm", NS, "llm", CANARY_25_100, 3))
    code, out, err = stepped(Lagging(memory), ds, quiet=True)
    assert code == StepExit.HELD and out == ""
    assert all(line.startswith(("llm: ", "disaggregatedset/llm in serving is held", "  wave 1 is paused"))
               for line in err.splitlines()), err


def test_a_full_report_folds_the_held_slices_into_one_line_per_wave():
    from kubectl_disagg.views.step_report import format_text

    memory, ds = fleet(12, RolloutPolicy("llm", NS, "llm", CANARY_25_100, 3))
    cluster = Lagging(memory)
    printer = []

    class Keep(Console):
        def report(self, step, *, only_changed=False):
            printer.append(step)

    with contextlib.redirect_stderr(io.StringIO()):
        run.step(ClusterStore(cluster, [ds]), Keep("text"))  # one pass: the canary starts
    text = format_text(printer[0])
    assert "slices 1-2: held, wave 2 not started\nslices 3-11: held, wave 3 not started\n" in text
    assert text.count("\n") == 1 + 1 + 6 + 2  # the header, slice 0 with its 6 actions, two held lines


def test_an_abort_reads_as_a_rollback_in_the_step_output():
    # Before: "slices 0-5: rollout to revision <the new one> started" while they went back.
    memory, ds = fleet(12, RolloutPolicy("llm", NS, "llm", (Wave(1), Wave("25%"), Wave("100%")), 3))
    aborted: list = []
    cluster = Lagging(memory, between=brake("abort", ds, aborted, after=9))
    code, out, err = stepped(cluster, ds)
    assert aborted and code == StepExit.HELD
    stable = cluster.position(ds).stable
    back = out[out.index("rollback"):]
    assert f"rollback to revision {stable} started" in back and f"rollback to revision {stable} complete" in back
    assert f"rollout to revision {ds.revision}" not in back  # nothing after the abort reads as a rollout
    assert re.search(rf"^llm: rollback of slices [-0-9, ]+ to {stable} — aborted( by \S+)?; \d+ of 12 slices done at revision "
                     rf"{stable}", err, re.M), err


def wired(monkeypatch):
    """The lead's wiring in rollout/progressive.py (Progressive.admit hands reconcile the
    decision's rollback), emulated: `replace(passage.admission, rollback=rollback_of(decision))`."""
    from dataclasses import replace

    from kubectl_disagg.core.delivery.fleet import rollback_of
    from kubectl_disagg.rollout.progressive import Progressive

    admit = Progressive.admit

    def admit_with_rollback(self, ds, snapshot):
        target, admission = admit(self, ds, snapshot)
        if self.passage is None:
            return target, admission
        return target, replace(admission, rollback=rollback_of(self.passage.decision))
    monkeypatch.setattr(Progressive, "admit", admit_with_rollback)


def test_wired_an_abort_says_who_aborted_in_the_progress_line(monkeypatch):
    wired(monkeypatch)
    memory, ds = fleet(12, RolloutPolicy("llm", NS, "llm", (Wave(1), Wave("25%"), Wave("100%")), 3))
    aborted: list = []
    cluster = Lagging(memory, between=brake("abort", ds, aborted, after=9))
    code, out, err = stepped(cluster, ds)
    stable, by = cluster.position(ds).stable, cluster.position(ds).aborted.by
    assert re.search(rf"^llm: rollback of slices [-0-9, ]+ to {stable} — aborted by {by}; \d+ of 12 slices done",
                     err, re.M), err


def test_wired_a_template_set_back_mid_rollout_reads_as_the_same_rollback(monkeypatch):
    # Before (and unwired): "slice 0: rollout to revision <img:1> started ... complete".
    from dataclasses import replace

    from tests.support.sets import make_set

    wired(monkeypatch)
    policy = RolloutPolicy("llm", NS, "llm", (Wave(1), Wave(2), Wave("100%")), 3)
    memory, forward = fleet(4, policy)
    cluster = Lagging(memory)
    with contextlib.redirect_stdout(io.StringIO()):  # two passes of the rollout to img:2: slice 0 starts, scales up
        for _ in range(2):
            assert run.step(ClusterStore(cluster, [forward]), Console("text")) == StepExit.OK
            memory.settle()
    reverted = replace(make_set({"prefill": 1, "decode": 1}, "img:1", 4), policy=policy)  # the template set back
    code, out, err = stepped(cluster, reverted)
    assert code == StepExit.OK, err
    assert f"slice 0: rollback to revision {reverted.revision} complete" in out, out
    assert f"rollout to revision {reverted.revision}" not in out
    assert f"llm: rollback of slice 0 to {reverted.revision} — aborted: the template was set back to " \
           f"{reverted.revision}" in err, err


# --- the pure parts ------------------------------------------------------------------------------------


def test_slices_alike_fold_and_spans_read_as_people_list_them():
    assert situations(["a", "b", "a", "a"]) == [((0, 2, 3), "a"), ((1,), "b")]
    assert spans([7, 0, 1, 2, 5, 8, 9, 10, 11]) == "0-2, 5, 7-11"
    verdict = Rollback("a3c625b8", "ttft 2.425 s is not < 0.5", "analysis")
    assert abort_sentence([0, 1], "a3c625b8", verdict, (2, 4)) == (
        "rollback of slices 0-1 to a3c625b8, step 2 of 4 — aborted: ttft 2.425 s is not < 0.5")
    # a template set back reads the same way
    assert abort_sentence([0, 1], "a3c625b8", Rollback("a3c625b8", revert=True), (2, 4)) == (
        "rollback of slices 0-1 to a3c625b8, step 2 of 4 — aborted: the template was set back to a3c625b8")
    assert abort_sentence([0], "a3c625b8", Rollback("a3c625b8", "rollout abort", "alice")) == (
        "rollback of slice 0 to a3c625b8 — aborted by alice")


def test_the_fleet_of_a_pass_without_a_policy_has_no_wave():
    from kubectl_disagg.core.controller.reconcile import reconcile

    memory, ds = fleet(3, None)
    result = reconcile(ds, memory.snapshot(ds.name))
    summary = fleet_of(ds, result)
    assert summary.waves == () and summary.in_flight == (0, 1, 2) and summary.done == () and not summary.rollback


def test_the_rolloutstate_message_and_event_of_an_abort_say_rollback():
    # Before: "llm: aborted at wave 1 of 3 (slices 0-0) (...); rolling back to revision <stable>" and the
    # Event "Rollout aborted at wave 1: <reason>", read as a rollout that goes on.
    import datetime

    from kubectl_disagg.core.delivery.position import Stamp
    from kubectl_disagg.core.controller.reconcile import reconcile
    from kubectl_disagg.core.delivery.waves import admit
    from kubectl_disagg.views.stops import abort_event_message, abort_message

    now = datetime.datetime(2026, 12, 6, 12, 0, tzinfo=datetime.timezone.utc)
    memory, ds = fleet(12, RolloutPolicy("llm", NS, "llm", (Wave(2), Wave("25%"), Wave("100%")), 3))
    passage = admit(ds, memory.snapshot(ds.name), None, now)
    memory.execute(reconcile(passage.reconciled, memory.snapshot(ds.name), passage.admission).actions)  # 0-1 start
    started = admit(ds, memory.snapshot(ds.name), passage.decision.position, now).decision
    verdict = Stamp("2026-12-06T12:00:00Z", "analysis", "analysis failed after wave 1: ttft 2.425 s is not < 0.5")
    from dataclasses import replace
    decision = admit(ds, memory.snapshot(ds.name), replace(started.position, aborted=verdict), now).decision
    stable = decision.moves_to
    assert abort_message("llm", decision) == (
        f"llm: rollback of slices 0-1 to {stable} — aborted: analysis failed after wave 1: ttft 2.425 s is not < 0.5")
    from kubectl_disagg.core.delivery.waves import WaveEvent
    from kubectl_disagg.rollout.progressive import summary, wave_events

    assert summary(ds, decision)["message"] == abort_message("llm", decision)  # what the RolloutState records
    (event,) = wave_events(decision, [WaveEvent("RolloutAborted", decision.wave, "")], {})
    assert event.message == abort_event_message(decision)
    assert abort_event_message(decision) == (
        f"Rollout aborted at wave 1 of 3: rollback of slices 0-1 to {stable} — aborted: analysis failed after "
        "wave 1: ttft 2.425 s is not < 0.5")


def test_a_run_that_rolled_slices_out_and_back_does_not_end_saying_nothing_was_changed():
    # Issue 47: the last line said "is held; nothing was changed" after slice 0 went out and back.
    memory, ds = fleet(12, RolloutPolicy("llm", NS, "llm", (Wave(1), Wave("25%"), Wave("100%")), 3))
    aborted: list = []
    code, out, err = stepped(Lagging(memory, between=brake("abort", ds, aborted, after=9)), ds)
    assert aborted and code == StepExit.HELD
    held = next(line for line in err.splitlines() if line.startswith("disaggregatedset/llm in serving is held"))
    assert "nothing was changed" not in held and "this run changed it (above)" in held, err


def test_a_first_deploys_progress_line_does_not_read_as_a_budget_breach():
    # Issue 47: "slices 12-99 in flight (at most 3)" during a first deploy, which the budget does not pace.
    from dataclasses import replace

    from tests.fakes.cluster import MemoryCluster
    from tests.support.sets import make_set

    ds = replace(make_set({"prefill": 1, "decode": 1}, "img:1", 100), policy=RolloutPolicy("llm", NS, "llm",
                                                                                            CANARY_25_100, 3))
    code, out, err = stepped(Lagging(MemoryCluster(NS)), ds)
    assert code == StepExit.OK, err
    progress = [line for line in err.splitlines() if line.startswith("llm: ")]
    assert progress and not any("(at most 3)" in line for line in progress), progress
    assert "llm: slices 0-99 deploying (no old revision: not paced by the budget), 0 of 100 slices done" in progress
