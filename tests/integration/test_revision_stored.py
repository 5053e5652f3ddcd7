"""A file and the object the API server stores from it have the same revision, the controller's:
the real kube-apiserver applies the upstream CRD's defaults and prunes unknown fields, and the
revision computed from what it stored must equal the one computed from the file."""

from __future__ import annotations

import copy
import urllib.error

import pytest
from hypothesis import HealthCheck, given, settings

from kubectl_disagg.core import revision
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.source import Document
from kubectl_disagg.core.sets import load_documents
from kubectl_disagg.core.model import default_role_spec
from kubectl_disagg.core.quantity import go_float
from tests.conftest import require_vectors
from tests.revision_strategies import disaggregated_set

SETS = "/apis/disaggregatedset.x-k8s.io/v1/namespaces/{}/disaggregatedsets"


def store(control_plane, namespace: str, document: dict) -> dict:
    """POST the document; the answer is the object as stored (defaulted, pruned)."""
    document = copy.deepcopy(document)
    document["metadata"].pop("namespace", None)
    try:
        return control_plane.request("POST", SETS.format(namespace), document)
    except urllib.error.HTTPError as error:
        raise AssertionError(f"the API server refused the document: {error.read().decode()}") from None


def without_floats(value: object) -> object:
    """The CRD takes quantities as integers or strings only: a float is sent as Go spells it."""
    if isinstance(value, dict):
        return {key: without_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_floats(item) for item in value]
    return go_float(value) if isinstance(value, float) else value


def role_revision(document: dict) -> str:
    """The revision straight from the role templates (no validation of this tool's own)."""
    roles = [(role["name"], default_role_spec(role["spec"])["leaderWorkerTemplate"]) for role in document["spec"]["roles"]]
    return revision.compute_revision(roles)


def test_every_vector_stored_by_the_api_server_has_the_controllers_revision(control_plane, namespace):
    for vector in require_vectors():
        (document,) = parse_stream(vector["document"], "vector.yaml")
        stored = store(control_plane, namespace, document.data)
        (from_file,) = load_documents([document]).sets
        (from_cluster,) = load_documents([Document(stored, "stored", 0, {})]).sets
        assert from_file.revision == from_cluster.revision == vector["revision"], document.data["metadata"]["name"]


def test_defaults_the_api_server_adds_are_the_ones_hashed(control_plane, namespace):
    template = {"workerTemplate": {"metadata": {"generateName": "pruned-"}, "spec": {"containers": [{
        "name": "c", "ports": [{"containerPort": 80}], "startupProbe": {"grpc": {"port": 9}},
        "env": [{"name": "E", "valueFrom": {"configMapKeyRef": {"key": "k"}}}]}]}},
        "subGroupPolicy": {"subGroupSize": 1}}
    roles = [{"name": name, "spec": {"leaderWorkerTemplate": copy.deepcopy(template)}} for name in ("a", "b")]
    document = {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
                "metadata": {"name": "defaults"}, "spec": {"roles": roles}}
    stored = store(control_plane, namespace, document)["spec"]["roles"][0]["spec"]["leaderWorkerTemplate"]
    container = stored["workerTemplate"]["spec"]["containers"][0]
    assert container["ports"][0]["protocol"] == "TCP"
    assert container["startupProbe"]["grpc"]["service"] == ""
    assert stored["size"] == 1 and stored["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert stored["subGroupPolicy"]["subGroupPolicyType"] == "LeaderWorker"
    assert "generateName" not in stored["workerTemplate"]["metadata"]
    ours = default_role_spec(roles[0]["spec"])["leaderWorkerTemplate"]
    assert ours["workerTemplate"]["spec"] == stored["workerTemplate"]["spec"]
    assert role_revision(document) == role_revision({"spec": {"roles": [
        {"name": "a", "spec": {"leaderWorkerTemplate": stored}}, {"name": "b", "spec": {"leaderWorkerTemplate": stored}}]}})


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(document=disaggregated_set(prunable=True))
def test_generated_sets_hash_alike_in_the_file_and_in_the_cluster(control_plane, namespace, document):
    document = without_floats(document)
    document["metadata"]["generateName"] = "gen-"
    del document["metadata"]["name"]
    stored = store(control_plane, namespace, document)
    assert role_revision(stored) == role_revision(document)
