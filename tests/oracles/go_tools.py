"""The Go programs of hack/revision, built once into the per-user cache for the tests that need them.

Without a Go toolchain those tests skip, except in CI (CI=true) where they must run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO

MODULE = REPO / "hack" / "revision"
GO_HOME_BINARY = "/usr/local/go/bin/go"  # where Go's own installer puts it, often not on PATH
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubectl-disagg" / "revision-tools"


def require_go(needed_for: str = "the Go tools under hack/") -> str:
    go = shutil.which("go") or (GO_HOME_BINARY if Path(GO_HOME_BINARY).exists() else None)
    if go is None:
        message = f"the Go toolchain is not installed (needed to build {needed_for})"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; CI must not skip these tests")
        pytest.skip(message)
    return go


def build(command: str) -> Path:
    """`go build` of hack/revision/cmd/<command> into the cache (incremental: fast when built)."""
    go = require_go()
    CACHE.mkdir(parents=True, exist_ok=True)
    binary = CACHE / command
    result = subprocess.run([go, "build", "-o", str(binary), f"./cmd/{command}"], cwd=MODULE,
                            capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        pytest.fail(f"go build ./cmd/{command} failed:\n{result.stderr}")
    return binary


def built_by_script(script: str, binary: str, needed_for: str) -> Path:
    """`binary`, built (once, into the per-user cache) by hack/`script`, which prints the folder
    it is in; a failed build fails the test with the script's stderr."""
    require_go(needed_for)
    result = subprocess.run([str(REPO / "hack" / script)], capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        pytest.fail(f"hack/{script} failed:\n{result.stderr}")
    return Path(result.stdout.strip()) / binary
