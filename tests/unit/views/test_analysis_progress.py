"""The analysis progress: bars on a terminal, one line per new measurement elsewhere."""

from __future__ import annotations

import io

from kubectl_disagg.core.delivery import analysis
from kubectl_disagg.core.delivery.analysis import Check, Condition, Measurement, Sample
from kubectl_disagg.rollout.analysis import GateRun
from kubectl_disagg.views.analysis_progress import AnalysisProgress, progress_lines

TTFT = Check("ttft", "prefill", "q", Condition("<", 0.5), 60, 5, 1, "fail")
TPOT = Check("tp", "decode", "q", Condition("<", 0.05), 30, 2, 0, "fail")


def run(ttft: list, tpot: list) -> GateRun:
    return GateRun((analysis.judge(TTFT, [Measurement(0, (Sample(v),)) for v in ttft]),
                    analysis.judge(TPOT, [Measurement(0, (Sample(v),)) for v in tpot])))


def test_bars():
    assert progress_lines(run([0.3, 0.31], [0.01, 0.02])) == [
        "ttft [########------------] 2/5  0.31 < 0.5",
        "tp   [####################] 2/2  0.02 < 0.05  passed"]


def test_lines_only_for_new_measurements():
    stream = io.StringIO()
    progress = AnalysisProgress("wave 1", stream)
    progress(run([0.3], [0.01]))
    progress(run([0.3, 0.9], [0.01]))
    assert stream.getvalue().splitlines() == [
        "analysis wave 1: ttft [####----------------] 1/5  0.3 < 0.5",
        "analysis wave 1: tp   [##########----------] 1/2  0.01 < 0.05",
        "analysis wave 1: ttft [########------------] 2/5  0.9 is not < 0.5"]
