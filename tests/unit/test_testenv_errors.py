"""`make demo` and `make cluster` end in a message and an exit code, never a Python traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from testenv.controlplane import ControlPlane, ControlPlaneError
from tests.support.paths import REPO


def run_module(module: str, tmp_path, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module], cwd=REPO, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("module, prog", [("testenv.demo", "demo"), ("testenv.demo_git", "demo-git"),
                                          ("testenv.controlplane", "testenv.controlplane")])
def test_missing_crd_directory(module, prog, tmp_path):
    result = run_module(module, tmp_path, KUBECTL_DISAGG_CRDS=str(tmp_path / "no-crds"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{prog}: error: CRD directory {tmp_path / 'no-crds'} does not exist" in result.stderr


def test_missing_binaries(tmp_path):
    result = run_module("testenv.controlplane", tmp_path, KUBECTL_DISAGG_TESTENV_BIN=str(tmp_path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "testenv.controlplane: error: $KUBECTL_DISAGG_TESTENV_BIN:" in result.stderr
    assert "lacks executable etcd, kube-apiserver, kubectl" in result.stderr


def test_a_crd_directory_without_the_needed_crds(tmp_path):
    # Found before any process starts: a directory without the CRDs the plugin needs.
    (tmp_path / "only.yaml").write_text("kind: ConfigMap\n")
    result = run_module("testenv.controlplane", tmp_path, KUBECTL_DISAGG_CRDS=str(tmp_path))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "lack leaderworkersets.leaderworkerset.x-k8s.io" in result.stderr


def test_project_forces_the_projects_crds(monkeypatch):
    from testenv.controlplane import PROJECT_CRDS, ControlPlane, upstream_crds_dir

    monkeypatch.setenv("KUBECTL_DISAGG_CRDS", "project")
    assert upstream_crds_dir() is None
    assert ControlPlane()._crd_dirs == PROJECT_CRDS


def test_a_control_plane_names_a_missing_crd_directory_before_starting_anything(tmp_path):
    missing = tmp_path / "no-crds"
    with pytest.raises(ControlPlaneError, match=str(missing)):
        ControlPlane(crds=missing).start()


@pytest.mark.parametrize("target, module", [("demo", "testenv.demo"), ("demo-progressive", "testenv.demo_progressive"),
                                            ("demo-git", "testenv.demo_git")])
@pytest.mark.parametrize("keep, flag", [("1", " --keep"), ("", ""), ("0", "")])
def test_make_keep_passes_keep_to_each_demo(target, module, keep, flag):
    """`make demo KEEP=1` (and the other demos) runs the demo with --keep; without KEEP, or KEEP=0, not."""
    shown = subprocess.run(["make", "-n", "--no-print-directory", target, f"KEEP={keep}"], cwd=REPO,
                           capture_output=True, text=True, timeout=60, check=True).stdout
    (line,) = [line for line in shown.splitlines() if f"-m {module}" in line]
    assert line.rstrip().endswith(f"-m {module}{flag}"), line
