"""Shared test helpers: where the repository and the upstream CRDs are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
GOLDEN = REPO / "tests" / "golden"
CRDS = Path(os.environ.get("KUBECTL_DISAGG_CRDS", REPO.parent / "shared" / "crds"))
LWS_CRD = CRDS / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
DS_CRD = CRDS / "disaggregatedset.x-k8s.io_disaggregatedsets.yaml"


def without_namespace(example: Path) -> str:
    """An example's text with its metadata.namespace removed, so that -n decides where it goes."""
    return "".join(line for line in example.read_text().splitlines(keepends=True)
                   if not line.startswith("  namespace: "))


def copy_without_namespaces(directory: Path) -> Path:
    """The examples, namespace-less, in `directory`."""
    for example in sorted(EXAMPLES.glob("*.yaml")):
        (directory / example.name).write_text(without_namespace(example))
    return directory


def require_crds() -> Path:
    """The upstream CRDs folder; skip without it, except in CI where it must be there."""
    if not LWS_CRD.is_file() or not DS_CRD.is_file():
        message = f"upstream CRDs not found in {CRDS} (set KUBECTL_DISAGG_CRDS)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; CI must not skip these tests")
        pytest.skip(message)
    return CRDS


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden from the current output")
