"""The Python revision against Go: Go's encoding/json over the controller's types (the oracle,
hack/revision/cmd/revision-oracle) must write the same bytes for every generated template.

Needs the Go toolchain, not the control plane. The documents are defaulted by Python first
(the oracle does not default); the defaults themselves are checked against the CRD in
tests/unit/core/api/test_revision.py and against the API server in test_revision_stored.py.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings

from kubectl_disagg.core.api import revision
from kubectl_disagg.core.api.model import default_role_spec
from tests.oracles.go_tools import MODULE, build
from tests.support.revision_strategies import disaggregated_set


@pytest.fixture(scope="module")
def oracle():
    process = subprocess.Popen([str(build("revision-oracle")), "-json"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, encoding="utf-8")
    yield process
    process.stdin.close()
    process.wait(timeout=10)


def go_answer(oracle, document: dict) -> tuple[str, str]:
    oracle.stdin.write(json.dumps(document) + "\n")
    oracle.stdin.flush()
    line = oracle.stdout.readline()
    assert line, "the oracle stopped (see its stderr above)"
    revision_, _, encoded = line.rstrip("\n").partition("\t")
    return revision_, encoded


def defaulted(document: dict) -> dict:
    """The document as the API server stores it: the role templates with their CRD defaults."""
    roles = [role | {"spec": default_role_spec(role["spec"])} for role in document["spec"]["roles"]]
    return document | {"spec": document["spec"] | {"roles": roles}}


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(document=disaggregated_set())
def test_python_writes_the_bytes_go_writes(oracle, document):
    stored = defaulted(document)
    roles = [(role["name"], role["spec"]["leaderWorkerTemplate"]) for role in stored["spec"]["roles"]]
    go_revision, go_bytes = go_answer(oracle, stored)
    assert revision.encode_roles(roles).decode() == go_bytes
    assert revision.compute_revision(roles) == go_revision


def test_the_oracle_can_disagree(oracle):
    document = {"spec": {"roles": [{"name": "a", "spec": {"leaderWorkerTemplate": {"workerTemplate": {}}}}]}}
    go_revision, go_bytes = go_answer(oracle, document)
    assert go_bytes == '[{"name":"a","template":{"workerTemplate":{"metadata":{},"spec":{"containers":null}}}}]'
    assert revision.compute_revision([("b", {"workerTemplate": {}})]) != go_revision


def test_regenerating_the_table_gives_the_committed_bytes(tmp_path):
    generator = build("revision-table")
    result = subprocess.run([str(generator)], cwd=MODULE,
                            capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()
    with open(revision.TABLE_PATH, "rb") as committed:
        assert result.stdout == committed.read(), "kubectl_disagg/data/revision-table.json is stale: run make generate"


@pytest.mark.parametrize("amount", ["1" * 5000, "9" * 4301 + "Mi", "0." + "0" * 4400 + "1", "1" * 5000 + "e3",
                                    12345678901234567890])
def test_quantities_longer_than_pythons_int_text_limit(oracle, amount):
    """Go's inf.Dec reads quantities of any length; Python's int from text stops at 4,300 digits."""
    template = {"workerTemplate": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": amount}}}]}}}
    stored = defaulted({"spec": {"roles": [{"name": "a", "spec": {"leaderWorkerTemplate": template}}]}})
    roles = [(role["name"], role["spec"]["leaderWorkerTemplate"]) for role in stored["spec"]["roles"]]
    go_revision, go_bytes = go_answer(oracle, stored)
    assert revision.encode_roles(roles).decode() == go_bytes
    assert revision.compute_revision(roles) == go_revision


@pytest.mark.parametrize("identity", [None, "", "Ordinal", "Hash"])
def test_group_identity_writes_the_bytes_go_writes(oracle, identity):
    """lws#987: the role's groupIdentity between its name and template, Ordinal written as none."""
    spec = {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "c"}]}}}}
    if identity is not None:
        spec["groupIdentity"] = identity
    stored = defaulted({"spec": {"roles": [{"name": "a", "spec": spec}]}})
    role_spec = stored["spec"]["roles"][0]["spec"]
    roles = [("a", role_spec["leaderWorkerTemplate"])]
    go_revision, go_bytes = go_answer(oracle, stored)
    assert revision.encode_roles(roles, {"a": identity}).decode() == go_bytes
    assert revision.compute_revision(roles, {"a": identity}) == go_revision
    assert ('"groupIdentity":"Hash"' in go_bytes) == (identity == "Hash")
