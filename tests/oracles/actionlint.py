"""actionlint, which checks GitHub Actions workflows as GitHub reads them: the binary
hack/build-actionlint.sh builds (once, into the per-user cache) from the Go module proxy."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO


@functools.lru_cache(maxsize=1)
def actionlint() -> Path:
    if shutil.which("go") is None and not Path("/usr/local/go/bin/go").exists():
        message = "the Go toolchain is not installed (needed to build actionlint)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; CI must not skip these tests")
        pytest.skip(message)
    result = subprocess.run([str(REPO / "hack" / "build-actionlint.sh")], capture_output=True, text=True,
                            timeout=900)
    if result.returncode != 0:
        pytest.fail(f"hack/build-actionlint.sh failed:\n{result.stderr}")
    return Path(result.stdout.strip()) / "actionlint"
