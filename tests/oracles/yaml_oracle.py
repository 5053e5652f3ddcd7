"""kubectl's reading of YAML, for the tests: hack/yaml's yaml2json, built on first use.

`kubectl_reads(texts)` gives, for every text, what kubectl makes of it as a manifest file: the
list of its JSON documents, or `Refused(message)`. hack/build-yaml-oracle.sh builds the program
once into the per-user cache (seconds, once the Go modules are cached). Without a Go toolchain
the tests that need it skip, except in CI (CI=true) where they must run.
"""

from __future__ import annotations

import base64
import functools
import json
import subprocess
from collections import namedtuple
from decimal import Decimal
from pathlib import Path

import pytest

from tests.oracles.go_tools import built_by_script

Refused = namedtuple("Refused", "message")


@functools.lru_cache(maxsize=1)
def _binary() -> Path:
    return built_by_script("build-yaml-oracle.sh", "yaml2json", "hack/yaml")


def kubectl_reads(texts: list[str | bytes]) -> list[list | Refused]:
    """What kubectl reads in each text: its documents as JSON values, or Refused."""
    if not texts:
        return []
    lines = "".join(base64.b64encode(t.encode("utf-8", "surrogatepass") if isinstance(t, str) else t).decode() + "\n"
                    for t in texts)
    result = subprocess.run([str(_binary())], input=lines, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.fail(f"yaml2json failed:\n{result.stderr}")
    answers = [json.loads(line) for line in result.stdout.split("\n") if line]
    assert len(answers) == len(texts), result.stderr
    return [Refused(a["error"]) if "error" in a else [as_read(d) for d in a["documents"]] for a in answers]


def as_read(value: object) -> object:
    """A JSON value as the API server holds it once decoded: a float with an integral value
    is an integer (Go writes 1e3 as 1000), as our reader gives it."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value) if abs(value) < 2**53 else int(Decimal(repr(value)))
    if isinstance(value, dict):
        return {k: as_read(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_read(v) for v in value]
    return value


def typed(value: object) -> str:
    """A value's JSON with its types kept apart (True is not 1, 1 is not 1.0)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
