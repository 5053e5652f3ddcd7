"""hack/check-prereqs.sh: each missing prerequisite is one line naming it and how to get it, exit 1.

The script runs from a copy of the repository's hack/ and CRD folders in a temporary directory
(so no ../shared beside it) with a PATH holding only the tools it may use; a prerequisite is
made to go missing by leaving it off that PATH or by an environment override.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

TOOLS = ("bash", "sh", "awk", "df", "dirname", "cat", "cut", "sha256sum", "mktemp", "flock", "env")


def fake_program(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


@pytest.fixture
def sandbox(tmp_path):
    """A repository copy and a PATH directory with the real tools, python3, go, make and openssl."""
    repo = tmp_path / "repo"
    for part in ("hack", "config/crd", "testenv/crd"):
        shutil.copytree(REPO / part, repo / part)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    (bin_dir / "python3").symlink_to(sys.executable)
    fake_program(bin_dir, "go", 'echo go1.99.0')  # `go env GOVERSION`
    fake_program(bin_dir, "make", "exit 0")
    fake_program(bin_dir, "openssl", "exit 0")
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return repo, bin_dir, env


def check(sandbox, target="demo", **overrides) -> tuple[int, list[str]]:
    repo, _, env = sandbox
    env = {**env, **overrides}
    result = subprocess.run(["bash", str(repo / "hack" / "check-prereqs.sh"), target], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.stdout == ""
    return result.returncode, result.stderr.splitlines()


def only_line(sandbox, target="demo", **overrides) -> str:
    code, lines = check(sandbox, target, **overrides)
    assert code == 1, lines
    assert len(lines) == 1, lines
    assert lines[0].startswith("check-prereqs: missing: ")
    return lines[0]


def test_all_present(sandbox):
    assert check(sandbox, "demo") == (0, [])
    assert check(sandbox, "test") == (0, [])


def test_python_missing(sandbox):
    line = only_line(sandbox, PYTHON="python3.99")
    assert "Python >= 3.11 (no 'python3.99' on PATH)" in line and "make PYTHON=" in line


def test_python_too_old(sandbox):
    _, bin_dir, _ = sandbox
    (bin_dir / "python3").unlink()
    fake_program(bin_dir, "python3", 'case "$2" in *print*) echo 3.9;; *) exit 1;; esac')
    assert "Python >= 3.11 ('python3' is 3.9)" in only_line(sandbox)


def test_python_without_venv(sandbox):
    _, bin_dir, _ = sandbox
    (bin_dir / "python3").unlink()
    fake_program(bin_dir, "python3", 'case "$2" in *print*) echo 3.12;; *ensurepip*) exit 1;; *) exit 0;; esac')
    assert "apt-get install python3-venv" in only_line(sandbox)


def test_go_too_old(sandbox):
    _, bin_dir, _ = sandbox
    fake_program(bin_dir, "go", "echo go1.22.4")
    line = only_line(sandbox)
    required = next(x.split()[1] for x in (REPO / "hack/testenv/go.mod").read_text().splitlines() if x.startswith("go "))
    assert f"Go >= {required} (found 1.22.4" in line and "https://go.dev/dl/" in line


def test_go_that_does_not_run(sandbox):
    assert "GO=/nowhere/go does not run" in only_line(sandbox, GO="/nowhere/go")


def test_go_not_needed_with_prebuilt_binaries(sandbox, tmp_path):
    prebuilt = tmp_path / "prebuilt"
    prebuilt.mkdir()
    for name in ("etcd", "kube-apiserver", "kubectl"):
        fake_program(prebuilt, name, "exit 0")
    assert check(sandbox, GO="/nowhere/go", KUBECTL_DISAGG_TESTENV_BIN=str(prebuilt)) == (0, [])
    (prebuilt / "etcd").unlink()
    assert "etcd in KUBECTL_DISAGG_TESTENV_BIN" in only_line(sandbox, KUBECTL_DISAGG_TESTENV_BIN=str(prebuilt))


@pytest.mark.parametrize("tool", ["openssl", "make"])
def test_tool_missing(sandbox, tool):
    _, bin_dir, _ = sandbox
    (bin_dir / tool).unlink()
    line = only_line(sandbox)
    assert f"missing: {tool} (not on PATH): apt-get install {tool}" in line


def test_not_enough_disk_for_the_build(sandbox):
    line = only_line(sandbox, KUBECTL_DISAGG_MIN_FREE_MB=str(10**12))
    assert f"{10**12} MB of free disk for the one-time control plane build" in line


def test_project_crds_missing(sandbox):
    repo, _, _ = sandbox
    shutil.rmtree(repo / "testenv" / "crd")
    assert "the project's CRDs in testenv/crd/" in only_line(sandbox)


def test_upstream_crds_named_but_absent(sandbox):
    assert "KUBECTL_DISAGG_CRDS=/nowhere" in only_line(sandbox, KUBECTL_DISAGG_CRDS="/nowhere")


def test_project_forces_the_projects_crds(sandbox):
    assert check(sandbox, "test", KUBECTL_DISAGG_CRDS="project") == (0, [])


def test_ci_needs_the_upstream_crds(sandbox):
    assert "the upstream CRDs (CI=true" in only_line(sandbox, "test", CI="true")
    assert check(sandbox, "demo", CI="true") == (0, [])  # the demo runs on the project's CRDs


def test_every_missing_piece_at_once(sandbox):
    _, bin_dir, _ = sandbox
    (bin_dir / "openssl").unlink()
    code, lines = check(sandbox, PYTHON="python3.99", GO="/nowhere/go")
    assert code == 1 and len(lines) == 3


def test_make_runs_the_check_first(tmp_path):
    # `make demo` with a Python that does not exist stops at once, before the venv and the build.
    env = {**os.environ, "PYTHON": "python3.99"}
    result = subprocess.run(["make", "-C", str(REPO), "demo", f"VENV={tmp_path / 'venv'}"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "check-prereqs: missing: Python >= 3.11" in result.stderr
    assert not (tmp_path / "venv").exists()
