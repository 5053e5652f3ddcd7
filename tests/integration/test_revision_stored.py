"""A file and the object the API server stores from it have the same revision, the controller's:
the real kube-apiserver applies the upstream CRD's defaults and prunes unknown fields, and the
revision computed from what it stored must equal the one computed from the file."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings

from kubectl_disagg.core.api import revision
from kubectl_disagg.core.api.model import default_role_spec
from kubectl_disagg.core.api.quantity import go_float
from kubectl_disagg.core.delivery.sets import load_documents, load_sets
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.source import Document
from tests.support.controller import SETS, store
from tests.support.paths import require_vectors
from tests.support.revision_strategies import disaggregated_set


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
        (from_file,) = load_sets([document])
        (from_cluster,) = load_sets([Document(stored, "stored", 0, {})])
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


# -- scalars read as kubectl reads them ----------------------------------------------------------
# go-yaml reads `1e9`, `1E3`, `0o17` and `08` as numbers (PyYAML: strings) and `12:30` as a string
# (PyYAML: 750). The API server stores a quantity written as a number in its canonical form
# (`1e9` → "1G"), and the controller hashes that: the revision from the file must be that one.

KUBECTL_SCALARS = """\
apiVersion: disaggregatedset.x-k8s.io/v1
kind: DisaggregatedSet
metadata:
  name: {name}
spec:
  roles:
  - name: prefill
    spec:
      replicas: 1
      leaderWorkerTemplate:
        size: 2
        workerTemplate:
          spec:
            containers:
            - name: vllm
              image: vllm/vllm-openai:v0.11.0
              args: [12:30, 1:0, "--port"]
              env:
              - name: AT
                value: "1:30"
              resources:
                limits:
                  ephemeral-storage: {storage}
                  memory: {memory}
                  cpu: {cpu}
  - name: decode
    spec:
      leaderWorkerTemplate:
        workerTemplate:
          spec:
            containers:
            - name: vllm
              image: vllm/vllm-openai:v0.11.0
              resources:
                requests:
                  cpu: {cpu}
"""


@pytest.mark.parametrize("storage, memory, cpu", [
    ("1e9", "1E3", "08"), ("1.5e9", "0o17", "09"), ("1e3", "0x10", "1e0"), ('"1e9"', "1_000", '"0.5"'),
    ("2e+9", "1e18", "0b11"), ("1e9", "9223372036854775807", "+1"),
])
def test_scalars_kubectl_reads_differently_from_yaml_1_1_hash_as_the_stored_object(
        control_plane, namespace, tmp_path, storage, memory, cpu):
    name = "scalars-" + str(abs(hash((storage, memory, cpu))) % 10**8)
    path = tmp_path / "set.yaml"
    path.write_text(KUBECTL_SCALARS.format(name=name, storage=storage, memory=memory, cpu=cpu))
    control_plane.kubectl("apply", "--server-side", "-n", namespace, "-f", str(path))
    stored = control_plane.request("GET", SETS.format(namespace) + "/" + name)
    (from_file,) = load_sets(parse_stream(path.read_bytes(), str(path)))
    (from_cluster,) = load_sets([Document(stored, "stored", 0, {})])
    container = stored["spec"]["roles"][0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert container["args"] == ["12:30", "1:0", "--port"]
    assert from_file.revision == from_cluster.revision


@pytest.mark.parametrize("cpu", ["0.5", ".5", "1e21", "1.5", "1e20", "18446744073709551615", "9223372036854775808"])
def test_a_quantity_with_a_fraction_is_refused_as_the_api_server_refuses_it(control_plane, namespace, tmp_path, cpu):
    """The CRD's quantities are int-or-string: a number with a fraction, or an integer beyond int64
    (a float to the API server), is refused, by the server in these words, and by us in the same
    ones at its line."""
    text = KUBECTL_SCALARS.format(name="fraction", storage="1G", memory="1Gi", cpu=cpu)
    path = tmp_path / "set.yaml"
    path.write_text(text)
    refused = control_plane.kubectl("apply", "--server-side", "-n", namespace, "-f", str(path), check=False)
    assert refused.returncode != 0
    from kubectl_disagg.errors import UserError

    with pytest.raises(UserError) as caught:
        load_documents(parse_stream(path.read_bytes(), str(path)))
    lines = [number for number, line in enumerate(text.splitlines(), 1) if line.strip() == f"cpu: {cpu}"]
    assert [problem.line for problem in caught.value.problems] == lines
    for problem in caught.value.problems:
        assert f"{problem.path}: {problem.message}" in refused.stderr


def test_kubectl_s_booleans_and_strings_where_types_differ_are_refused_in_the_api_server_s_words(
        control_plane, namespace, tmp_path):
    """`value: y` is the boolean true to kubectl and `replicas: 1:0` a string: the API server
    refuses the set, and so do we, at each value's line and in the server's words (its schema
    check; server-side apply says it earlier in other words)."""
    text = KUBECTL_SCALARS.format(name="typed", storage="1G", memory="1Gi", cpu="1").replace(
        'value: "1:30"', "value: y").replace("replicas: 1", "replicas: 1:0")
    path = tmp_path / "set.yaml"
    path.write_text(text)
    refused = control_plane.kubectl("create", "-n", namespace, "-f", str(path), check=False)
    assert refused.returncode != 0
    applied = control_plane.kubectl("apply", "--server-side", "-n", namespace, "-f", str(path), check=False)
    assert 'env[name="AT"].value: expected string, got &value.valueUnstructured{Value:true}' in applied.stderr
    from kubectl_disagg.errors import UserError

    with pytest.raises(UserError) as caught:
        load_documents(parse_stream(path.read_bytes(), str(path)))
    lines = text.splitlines()
    assert [problem.line for problem in caught.value.problems] == [
        lines.index("      replicas: 1:0") + 1, lines.index("                value: y") + 1]
    for problem in caught.value.problems:
        assert f"{problem.path}: {problem.message}" in refused.stderr
