"""A RolloutPolicy's waves and gates in `rollout plan` (views/waves.py)."""

from __future__ import annotations

import json

import pytest

from kubectl_disagg.cli import main
from tests.support.policy import POLICY, SET


def test_rollout_plan_shows_the_waves_and_gates(tmp_path, capsys):
    (tmp_path / "ds.yaml").write_text(SET)
    (tmp_path / "policy.yaml").write_text(POLICY)
    with pytest.raises(SystemExit) as exited:
        main(["rollout", "plan", "-f", str(tmp_path), "--from", "1,1"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert out.splitlines()[:5] == [
        "disaggregatedset/llama RolloutPolicy llama: 3 waves, at most 2 slices in flight, a failed check does pause",
        "  WAVE  SLICES      GATES AFTER IT",
        f"     1  slice 0     a pause until `kubectl disagg rollout promote -f {tmp_path}`",  # the user's -f
        "     2  slice 1     analysis ttft, then a 15m soak",
        "     3  slices 2-3  -"]
    with pytest.raises(SystemExit):
        main(["rollout", "plan", "-f", str(tmp_path), "--from", "1,1", "-o", "json"])
    document = json.loads(capsys.readouterr().out)
    assert document["policies"][0]["waves"][1] == {"wave": 2, "slices": [1], "analysis": ["ttft"],
                                                    "pause": {"duration": "15m"}}
