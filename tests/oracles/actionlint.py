"""actionlint, which checks GitHub Actions workflows as GitHub reads them: the binary
hack/build-actionlint.sh builds (once, into the per-user cache) from the Go module proxy."""

from __future__ import annotations

import functools
from pathlib import Path

from tests.oracles.go_tools import built_by_script


@functools.lru_cache(maxsize=1)
def actionlint() -> Path:
    return built_by_script("build-actionlint.sh", "actionlint", "actionlint")
