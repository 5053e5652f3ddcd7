"""Prometheus's own programs for the tests: `promtool` (its PromQL parser) and the server.

Debian's `prometheus` package provides both (`.ci/run` installs it, hack/prometheus/install.sh).
Where they are missing the tests that need them skip, naming what; under CI=true they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest


def missing(message: str):
    if os.environ.get("CI") == "true":
        pytest.fail(message + "; CI installs it (.ci/run, hack/prometheus/install.sh), so CI must not skip")
    pytest.skip(message)


def require(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        missing(f"{program} not on PATH: apt-get install prometheus")
    return found


def promtool_refusals(expressions: list[str]) -> list[str | None]:
    """Per expression, Prometheus's parse error (None where it parses), from one `promtool check
    rules` run over a rule file holding each expression as one recording rule."""
    promtool = require("promtool")
    rules = [{"record": f"r{index}", "expr": text} for index, text in enumerate(expressions)]
    with tempfile.TemporaryDirectory(prefix="promtool-") as work:
        path = Path(work) / "rules.yml"
        # JSON is YAML: every expression goes in as one quoted scalar, whatever it holds.
        path.write_text(json.dumps({"groups": [{"name": "corpus", "rules": rules}]}))
        result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True,
                                timeout=120)
    refusals: list[str | None] = [None] * len(expressions)
    for line in (result.stdout + result.stderr).splitlines():
        found = re.search(r'rule (\d+), "r\d+": (.*)', line)
        if found:
            refusals[int(found.group(1)) - 1] = found.group(2)
    if result.returncode != 0 and not any(refusals):
        pytest.fail(f"promtool check rules failed without naming a rule:\n{result.stdout}{result.stderr}")
    return refusals
