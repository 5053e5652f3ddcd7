"""Where the repository, the examples, the golden files and the upstream CRDs (the conformance
reference) are; reading sets as the commands read them."""

from __future__ import annotations

import json
import os
import pathlib
from pathlib import Path

import pytest

from testenv.controlplane import PROJECT_CRDS, upstream_crds_dir


REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DATA = REPO / "tests" / "data"
GOLDEN = DATA / "golden" / "render"
CERTS = DATA / "certs"
CRDS = upstream_crds_dir() or REPO.parent / "shared" / "crds"
LWS_CRD = CRDS / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
DS_CRD = CRDS / "disaggregatedset.x-k8s.io_disaggregatedsets.yaml"
# Documents and the revision the upstream controller computed for them (../shared/vectors).
VECTORS = Path(os.environ.get("KUBECTL_DISAGG_VECTORS", REPO.parent / "shared" / "vectors" / "controller-revisions.json"))


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


def require_vectors() -> list[dict]:
    """The controller's revision vectors; skip without them, except in CI where they must be there."""
    if not VECTORS.is_file():
        message = f"controller revision vectors not found at {VECTORS} (set KUBECTL_DISAGG_VECTORS)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; CI must not skip these tests")
        pytest.skip(message)
    return json.loads(VECTORS.read_text())["vectors"]


class _Sets(list):
    @property
    def sets(self) -> list:
        return list(self)


def load_sets(paths, recursive: bool = False) -> _Sets:
    """The sets of -f inputs, read as every command reads them (`inputs.directory`, states
    not read): `load_sets(paths).sets`."""
    from kubectl_disagg.inputs import directory
    from kubectl_disagg.inputs import tree as inputs

    reading = inputs.Reading(recursive)
    return _Sets(entry.ds for entry in directory.load(inputs.read_tree(list(paths), reading), reading).sets)


def sets_from_files(paths, recursive: bool = False) -> list:
    return load_sets(paths, recursive).sets


PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "kubectl_disagg"


def session_crds() -> tuple[Path, ...]:
    """The upstream CRDs when present (the conformance reference), else the project's.

    CI has the upstream ones and must not silently fall back to ours.
    """
    upstream = upstream_crds_dir()
    if upstream is not None:
        if not upstream.is_dir():
            pytest.fail(f"KUBECTL_DISAGG_CRDS={upstream} is not a directory")
        return (upstream,)
    if os.environ.get("CI") == "true":
        pytest.fail("upstream CRDs not found in ../shared/crds (set KUBECTL_DISAGG_CRDS); "
                    "CI must run the integration tier against them")
    return PROJECT_CRDS
