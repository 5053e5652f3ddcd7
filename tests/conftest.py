"""Shared test helpers: where the repository and the upstream CRDs (the conformance reference) are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testenv.controlplane import upstream_crds_dir

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
GOLDEN = REPO / "tests" / "golden"
CRDS = upstream_crds_dir() or REPO.parent / "shared" / "crds"
LWS_CRD = CRDS / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
DS_CRD = CRDS / "disaggregatedset.x-k8s.io_disaggregatedsets.yaml"


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
