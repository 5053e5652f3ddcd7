"""The dashboard adds nothing to the start-up of the plugin's other commands: its server
(http.server) and its package are imported by `rollout dashboard` alone."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import atexit, sys
atexit.register(lambda: sys.stderr.write("\\nLOADED " + " ".join(sorted(
    m for m in sys.modules if m.startswith("kubectl_disagg.dashboard") or m in ("http.server", "socketserver")))))
from kubectl_disagg.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("argv", [["rollout", "status", "--help"], ["rollout", "promote", "--help"], ["version"]])
def test_other_commands_never_load_the_dashboard(argv):
    run = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True)
    assert run.stderr.rsplit("LOADED", 1)[1].split() == []


def test_the_dashboard_command_loads_it_only_when_it_runs():
    run = subprocess.run([sys.executable, "-c", PROBE, "rollout", "dashboard", "--help"], capture_output=True,
                         text=True)
    assert "Serve a live view" in run.stdout
    assert run.stderr.rsplit("LOADED", 1)[1].split() == []  # --help: not even then
