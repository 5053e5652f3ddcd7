"""The analysis section of a step's pull request: the verdicts it recorded, every value."""

from __future__ import annotations

from kubectl_disagg.core.delivery import analysis
from kubectl_disagg.core.delivery.analysis import Check, Condition, Measurement, Sample
from kubectl_disagg.core.delivery.position import Position, Stamp
from kubectl_disagg.views.analysis_verdicts import recorded_verdicts, verdicts_markdown

TTFT = Check("ttft", "prefill", "q", Condition("<", 0.5), 60, 2, 0, "fail")


def record(*values) -> dict:
    measurements = [Measurement(1_764_626_045 + 60 * i, (Sample(v),)) for i, v in enumerate(values)]
    verdict = analysis.judge(TTFT, measurements)
    return analysis.gate_record([verdict], verdict.phase, verdict.why)


def test_only_what_the_step_recorded():
    passed = record(0.3, 0.31)
    assert recorded_verdicts(Position(verdicts={0: passed}), Position(verdicts={0: passed})) == []
    (shown,) = recorded_verdicts(Position(), Position(verdicts={0: passed}))
    assert shown["wave"] == 1 and shown["phase"] == "passed" and shown["then"] == ""


def test_the_markdown_carries_every_value():
    aborted = Position(verdicts={1: record(0.3, 0.9)}, aborted=Stamp("2025-12-01T21:56:00Z", "analysis", "x"))
    text = verdicts_markdown(recorded_verdicts(None, aborted))
    assert text == (
        "**Analysis after wave 2: failed.** ttft: 1 of 2 measurements failed (failureLimit 0): 0.9 is not < 0.5\n"
        "\n"
        "| check | role | condition | measurements (UTC) |\n"
        "| --- | --- | --- | --- |\n"
        "| ttft | prefill | `< 0.5` | 21:54:05 0.3 (held); 21:55:05 0.9 (missed) |\n"
        "\n"
        "The policy's `onFailure: abort` follows: this commit starts rolling every slice that has the new "
        "revision back to the stable one, step by step; the slices of later waves are never written.\n"
        "\n")
    assert verdicts_markdown([]) == ""


def test_each_measurement_of_a_passed_check_says_whether_it_held():
    check = Check("ttft", "prefill", "q", Condition("<", 0.5), 60, 3, 1, "fail")
    at = [Measurement(1_764_626_045 + 60 * i, (Sample(v),)) for i, v in enumerate((0.3, 0.82, 0.31))]
    verdict = analysis.judge(check, at)
    assert verdict.phase == "passed"
    (shown,) = recorded_verdicts(None, Position(verdicts={0: analysis.gate_record([verdict], "passed", verdict.why)}))
    assert shown["message"] == "ttft: 0.31 < 0.5 at 2 of 3 measurements; missed 1 (failureLimit 1): 0.82 is not < 0.5"
    assert shown["checks"][0]["measurements"] == ["21:54:05 0.3 (held)", "21:55:05 0.82 (missed)",
                                                  "21:56:05 0.31 (held)"]
