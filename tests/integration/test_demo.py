"""The README's main command (`make demo`) runs end to end: deploy, template change, cleanup."""

from __future__ import annotations

import os
import subprocess
import sys

from testenv.upstream import unavailable_reason
from tests.support.paths import REPO


def test_demo_rolls_out_a_template_change_and_cleans_up(control_plane):
    # control_plane: the session's, for its binaries; the demo starts and stops its own (with the
    # project's CRDs unless KUBECTL_DISAGG_CRDS names others), which must leave nothing behind.
    env_bin = {"KUBECTL_DISAGG_TESTENV_BIN": str(control_plane.bin_dir)}
    result = subprocess.run([sys.executable, "-m", "testenv.demo"], cwd=REPO,
                            env={**os.environ, **env_bin}, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert out.count("rollout complete at revision") == 2
    assert out.count(": Available") == 2
    assert "rollout to revision" in out and "dry run" in out
    assert "cleaning up" in out.splitlines()[-1]
    # It says what plays the LWS controller: the real one where its source is beside the clone.
    real = unavailable_reason() is None
    assert ("starting the upstream stack" in out) == real
    assert ("the LWS status simulator plays the LWS controller" in out) == (not real)
