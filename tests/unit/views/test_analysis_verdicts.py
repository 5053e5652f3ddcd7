"""The analysis section of a step's pull request: the verdicts it recorded, every value."""

from __future__ import annotations

from kubectl_disagg.core import analysis
from kubectl_disagg.core.analysis import Check, Condition, Measurement, Sample
from kubectl_disagg.core.position import Position, Stamp
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
        "| ttft | prefill | `< 0.5` | 21:54:05 0.3; 21:55:05 0.9 ✗ |\n"
        "\n"
        "The policy's `onFailure: abort` follows: this commit starts rolling every slice that has the new "
        "revision back to the stable one, step by step; the slices of later waves are never written.\n"
        "\n")
    assert verdicts_markdown([]) == ""
