"""A failing input for every validation rule of design §1, asserting the path and the message."""

from __future__ import annotations

import copy

import pytest

from kubectl_disagg.core.delivery.sets import load_documents
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from tests.support.validation import (
    GPU,
    MORE_POD_TEMPLATE_REFUSALS,
    POD_TEMPLATE_REFUSALS,
    REFUSED_BY_THE_CLUSTER,
    SERVER_SAYS,
    SCHEMA_VERDICTS,
    WORKER,
    _container_update,
    _mutated,
    _placement,
    _pod_spec_update,
    with_env_value,
    base,
    errors_of,
    only_error,
    role_spec,
)


def warnings_of(doc: dict) -> list[str]:
    return [str(w) for w in load_documents(parse_stream(to_yaml(doc), "ds.yaml"))[1]]


def test_base_document_is_valid():
    assert errors_of(base()) == []


def test_wrong_api_version():
    doc = base()
    doc["apiVersion"] = "disaggregatedset.x-k8s.io/v1alpha1"
    assert ": apiVersion: Unsupported value: \"disaggregatedset.x-k8s.io/v1alpha1\"" in only_error(doc)


def test_wrong_kind_in_our_group():
    doc = base()
    doc["kind"] = "DisaggregatedSett"
    assert ": kind: Unsupported value: \"DisaggregatedSett\"" in only_error(doc)


def test_name_required():
    doc = base()
    del doc["metadata"]["name"]
    assert "metadata.name: Required value" in only_error(doc)


# A trailing line break too: Go's `$` (the API server's) ends the text, Python's `$` would not.
@pytest.mark.parametrize("name", ["My-LLM", "llm_1", "-llm", "a" * 254, "my-llm\n"])
def test_name_must_be_dns_subdomain(name):
    doc = base()
    doc["metadata"]["name"] = name
    assert "metadata.name: Invalid value" in errors_of(doc)[0]


@pytest.mark.parametrize("name", ["my.llm", "1llm"])
def test_name_must_fit_service_names(name):
    doc = base()
    doc["metadata"]["name"] = name
    assert "prefixes the generated Service names" in only_error(doc)


@pytest.mark.parametrize("namespace, valid", [("team-a", True), ("Team-A", False), ("team-a\n", False), ("", False),
                                              ("n" * 63, True), ("n" * 64, False)])
def test_namespace_must_be_dns_label(namespace, valid):
    doc = base()
    doc["metadata"]["namespace"] = namespace
    assert errors_of(doc) == [] if valid else "metadata.namespace: Invalid value" in only_error(doc)


@pytest.mark.parametrize("count", [1, 11])
def test_role_count(count):
    doc = base()
    doc["spec"]["roles"] = [
        {"name": f"r{i}", "spec": {"leaderWorkerTemplate": {"workerTemplate": WORKER}}} for i in range(count)
    ]
    assert f"spec.roles: Invalid value: {count} roles: must have between 2 and 10" in only_error(doc)


def test_roles_required():
    doc = base()
    del doc["spec"]["roles"]
    assert "spec.roles: Required value" in only_error(doc)


def test_spec_required():
    doc = base()
    del doc["spec"]
    assert ": spec: Required value" in only_error(doc)


def test_duplicate_role_names():
    doc = base()
    doc["spec"]["roles"][1]["name"] = "prefill"
    assert 'spec.roles[1].name: Duplicate value: "prefill" (also spec.roles[0])' in only_error(doc)


@pytest.mark.parametrize("name", ["Prefill", "pre_fill", "prefill-", "x" * 64, "prefill\n"])
def test_role_name_pattern(name):
    doc = base()
    doc["spec"]["roles"][0]["name"] = name
    assert "spec.roles[0].name: Invalid value" in errors_of(doc)[0]


def test_role_name_required():
    doc = base()
    del doc["spec"]["roles"][0]["name"]
    assert "spec.roles[0].name: Required value" in only_error(doc)


@pytest.mark.parametrize("slices", [0, 101, -1])
def test_slices_range(slices):
    doc = base()
    doc["spec"]["slices"] = slices
    assert f"spec.slices: Invalid value: {slices}: must be between 1 and 100" in only_error(doc)


def test_slices_type():
    doc = base()
    doc["spec"]["slices"] = "two"
    assert 'spec.slices: Invalid value: "string": spec.slices in body must be of type integer: "string"' in only_error(doc)


def test_worker_template_required():
    doc = base()
    del role_spec(doc, 1)["leaderWorkerTemplate"]["workerTemplate"]
    role_spec(doc, 1)["leaderWorkerTemplate"]["size"] = 2
    assert "spec.roles[1].spec.leaderWorkerTemplate.workerTemplate: Required value" in only_error(doc)


def test_leader_worker_template_required():
    doc = base()
    del role_spec(doc, 0)["leaderWorkerTemplate"]
    assert "spec.roles[0].spec.leaderWorkerTemplate: Required value" in only_error(doc)


def test_all_or_nothing_replicas():
    doc = base()
    role_spec(doc, 0)["replicas"] = 0
    error = only_error(doc)
    assert "spec.roles: Invalid value: replicas must be zero for all non-External roles" in error
    assert "prefill=0, decode=1" in error


def test_all_or_nothing_counts_unset_as_one():
    doc = base()
    role_spec(doc, 0)["replicas"] = 0
    del role_spec(doc, 1)["replicas"]
    assert "decode=1" in only_error(doc)


def test_all_zero_is_a_valid_paused_set():
    doc = base()
    role_spec(doc, 0)["replicas"] = 0
    role_spec(doc, 1)["replicas"] = 0
    assert errors_of(doc) == []


def test_external_roles_do_not_count_for_all_or_nothing():
    doc = base()
    role_spec(doc, 0)["replicas"] = 0
    doc["spec"]["roles"][1]["scaling"] = {"mode": "External"}
    assert errors_of(doc) == []


def test_negative_replicas():
    doc = base()
    role_spec(doc, 0)["replicas"] = -1
    errors = errors_of(doc)
    assert any("spec.roles[0].spec.replicas: Invalid value: -1" in e for e in errors)


def test_rollout_strategy_type():
    doc = base()
    role_spec(doc, 0)["rolloutStrategy"] = {"type": "Recreate"}
    assert 'spec.roles[0].spec.rolloutStrategy.type: Unsupported value: "Recreate"' in only_error(doc)


def test_rollout_strategy_type_empty_is_refused_as_the_crd_enum_does():
    # Design §1: absent or RollingUpdate; the CRD's enum refuses "" (tests/integration/test_api_verdicts.py).
    doc = base()
    role_spec(doc, 0)["rolloutStrategy"] = {"type": ""}
    assert only_error(doc) == ('ds.yaml:17: spec.roles[0].spec.rolloutStrategy.type: '
                               'Unsupported value: "": supported values: "RollingUpdate"')


def test_partition_forbidden():
    doc = base()
    role_spec(doc, 0)["rolloutStrategy"] = {"rollingUpdateConfiguration": {"partition": 1}}
    assert "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.partition: Forbidden:" in only_error(doc)


def test_partition_zero_allowed():
    doc = base()
    role_spec(doc, 0)["rolloutStrategy"] = {"rollingUpdateConfiguration": {"partition": 0}}
    assert errors_of(doc) == []


@pytest.mark.parametrize("value, message", [(-1, "must be non-negative"), ("150%", "greater than 100%"),
                                            ("ten", "percentage"), ("5.5%", "percentage")])
def test_surge_values(value, message):
    doc = base()
    role_spec(doc, 0)["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": value}}
    error = only_error(doc)
    assert "spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge: Invalid value" in error
    assert message in error


def test_surge_and_unavailable_not_both_zero():
    doc = base()
    role_spec(doc, 0)["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": 0, "maxUnavailable": 0}}
    assert "rollingUpdateConfiguration: Invalid value: maxSurge and maxUnavailable must not both be 0" in only_error(doc)


def test_surge_and_unavailable_zero_once_scaled():
    # 2 replicas: 10% unavailable rounds down to 0 and 0% surge is 0.
    doc = base()
    role_spec(doc, 0)["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": "0%", "maxUnavailable": "10%"}}
    assert "must not both be 0 (resolved against 2 replicas)" in only_error(doc)


def test_both_zero_is_fine_for_a_paused_role():
    doc = base()
    for i in (0, 1):
        role_spec(doc, i)["replicas"] = 0
    role_spec(doc, 0)["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": 0, "maxUnavailable": 0}}
    assert errors_of(doc) == []


def test_generated_names_must_fit():
    doc = base()
    doc["metadata"]["name"] = "n" * 30
    doc["spec"]["slices"] = 10
    doc["spec"]["roles"][0]["name"] = "p" * 17  # 30 + 3 + 1 + 8 + 17 + 4 = 63: fits
    doc["spec"]["roles"][1]["name"] = "d" * 18  # 64: one too many
    error = only_error(doc)
    assert "spec.roles[1].name: Invalid value" in error and "would be 64 characters" in error


def test_placement_needs_topology():
    doc = base()
    doc["spec"]["placementPolicy"] = {"type": "ExclusiveSlice"}
    assert "spec.placementPolicy.topology: Required value" in only_error(doc)


def test_placement_type_enum():
    doc = base()
    doc["spec"]["placementPolicy"] = {"type": "Spread", "topology": "zone"}
    assert 'spec.placementPolicy.type: Unsupported value: "Spread"' in only_error(doc)


def test_placement_none_needs_no_topology():
    doc = base()
    doc["spec"]["placementPolicy"] = {"type": "None"}
    assert errors_of(doc) == []


@pytest.mark.parametrize("where", ["role", "worker", "leader"])
def test_placement_forbids_exclusive_topology_annotations(where):
    doc = base()
    doc["spec"]["placementPolicy"] = {"type": "ExclusiveTopology", "topology": "zone"}
    annotation = {"leaderworkerset.sigs.k8s.io/exclusive-topology": "rack"}
    role = doc["spec"]["roles"][0]
    if where == "role":
        role["metadata"] = {"annotations": annotation}
        path = "spec.roles[0].metadata.annotations"
    else:
        key = "workerTemplate" if where == "worker" else "leaderTemplate"
        template = role["spec"]["leaderWorkerTemplate"].setdefault(key, copy.deepcopy(WORKER))
        template["metadata"] = {"annotations": annotation}
        path = f"spec.roles[0].spec.leaderWorkerTemplate.{key}.metadata.annotations"
    assert f"{path}.leaderworkerset.sigs.k8s.io/exclusive-topology: Forbidden" in only_error(doc)


def test_exclusive_annotations_fine_without_placement():
    doc = base()
    doc["spec"]["roles"][0]["metadata"] = {"annotations": {"leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology": "x"}}
    assert errors_of(doc) == []


def test_external_scaling_forbids_slices():
    doc = base()
    doc["spec"]["slices"] = 2
    doc["spec"]["roles"][0]["scaling"] = {"mode": "External"}
    assert "spec.roles[0].scaling.mode: Forbidden: External scaling cannot be combined with slices > 1" in only_error(doc)


def test_external_scaling_warns_about_replicas():
    doc = base()
    doc["spec"]["roles"][0]["scaling"] = {"mode": "External"}
    (warning,) = warnings_of(doc)
    assert "spec.roles[0].spec.replicas: ignored" in warning


@pytest.mark.parametrize("path", [
    ("spec", "replcas"),
    ("spec", "roles", 0, "spec", "replcas"),
    ("spec", "roles", 0, "spec", "leaderWorkerTemplate", "workerTemplat"),
    ("spec", "roles", 0, "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", 0, "imagee"),
    ("spec", "roles", 1, "sepc"),
    ("metadata", "lables"),
])
def test_unknown_fields_are_rejected_with_their_path(path):
    doc = base()
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = 3
    dotted = ".".join(str(p) for p in path).replace(".0.", "[0].").replace(".1.", "[1].")
    assert f"{dotted}: unknown field" in only_error(doc)


def test_type_errors_deep_in_the_template():
    doc = base()
    role_spec(doc, 0)["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["ports"] = [{"containerPort": "80"}]
    assert ('containers[0].ports[0].containerPort: Invalid value: "string": spec.roles[0].spec.leaderWorkerTemplate.'
            'workerTemplate.spec.containers[0].ports[0].containerPort in body must be of type integer: "string"'
            in only_error(doc))


def test_label_values_must_be_strings():
    doc = base()
    doc["spec"]["roles"][0]["metadata"] = {"labels": {"version": 2}}
    assert ('spec.roles[0].metadata.labels.version: Invalid value: "integer": spec.roles[0].metadata.labels.version '
            'in body must be of type string: "integer"' in only_error(doc))


def test_every_error_at_once_with_file_and_line():
    text = """\
apiVersion: disaggregatedset.x-k8s.io/v1
kind: DisaggregatedSet
metadata:
  name: my-llm
spec:
  slices: 0
  roles:
  - name: prefill
    spec:
      replcas: 2
      leaderWorkerTemplate:
        workerTemplate: {spec: {containers: [{name: c, image: i}]}}
  - name: Decode
    spec:
      leaderWorkerTemplate:
        workerTemplate: {spec: {containers: [{name: c, image: i}]}}
"""
    errors = errors_of(text)
    # An unknown field changes no shape: every other rule still runs, and all come in file order.
    assert errors[0] == "ds.yaml:6: spec.slices: Invalid value: 0: must be between 1 and 100"
    assert errors[1] == "ds.yaml:10: spec.roles[0].spec.replcas: unknown field"
    assert errors[2].startswith('ds.yaml:13: spec.roles[1].name: Invalid value: "Decode"')
    assert len(errors) == 3
    # A wrong type stops the semantic rules: they would only repeat it in other words.
    errors = errors_of(text.replace("slices: 0", "slices: many"))
    assert errors == ['ds.yaml:6: spec.slices: Invalid value: "string": spec.slices in body must be of type integer: '
                      '"string"',
                      "ds.yaml:10: spec.roles[0].spec.replcas: unknown field"]


def test_errors_from_several_documents_are_all_reported():
    first = to_yaml({**base(), "spec": {**base()["spec"], "slices": 0}})
    second = to_yaml({**base(), "kind": "DisaggregatedSett"})
    errors = errors_of(first + "---\n" + second)
    assert len(errors) == 2
    # Lines count through the whole stream: the second document starts after `---`.
    assert errors[1].startswith(f"ds.yaml:{first.count(chr(10)) + 3}: kind:")


def test_non_objects_and_objects_without_kind():
    errors = errors_of("- a\n- b\n---\nmetadata: {name: x}\n")
    assert "not a Kubernetes object" in errors[0]
    assert any("apiVersion: Required value" in e for e in errors)
    assert any("kind: Required value" in e for e in errors)


def test_null_means_unset_as_the_api_server_reads_it():
    doc = base()
    doc["spec"]["slices"] = None
    role_spec(doc, 0)["replicas"] = None
    role_spec(doc, 1)["rolloutStrategy"] = {"type": None}
    assert errors_of(doc) == []


@pytest.mark.parametrize("where", ["containers", "ports"])
def test_null_items_in_lists_of_objects_are_refused(where):
    doc = base()
    container = role_spec(doc, 0)["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]
    if where == "containers":
        container.append(None)
        path = "workerTemplate.spec.containers[1]"
    else:
        container[0]["ports"] = [None]
        path = "workerTemplate.spec.containers[0].ports[0]"
    assert f"{path}: Invalid value: null: must be an object" in only_error(doc)


def test_affinity_that_placement_extends_must_have_its_shape():
    doc = base()
    doc["spec"]["placementPolicy"] = {"type": "ExclusiveSlice", "topology": "zone"}
    role_spec(doc, 0)["leaderWorkerTemplate"]["workerTemplate"]["spec"]["affinity"] = {"podAffinity": [1]}
    assert "spec.affinity.podAffinity: Invalid value: array: must be an object" in only_error(doc)


def test_a_pod_needs_containers_with_names():
    doc = base()
    role_spec(doc, 0)["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"] = []
    role_spec(doc, 1)["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0].pop("name")
    errors = errors_of(doc)
    assert "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.containers: Required value" in errors[0]
    assert "spec.roles[1].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].name: Required value" in errors[1]


@pytest.mark.parametrize("case", REFUSED_BY_THE_CLUSTER, ids=lambda case: case[0])
def test_what_the_cluster_refuses_is_refused_offline_with_its_line(case):
    _, doc, expected, _ = case
    assert errors_of(doc) == [expected]


def test_an_object_the_cluster_could_not_store_is_refused_before_rendering():
    # render.MAX_OBJECT_BYTES: etcd refuses a write over 1.5 MiB; objects are held to 1 MiB.
    doc = with_env_value(1 << 20)
    errors = errors_of(doc)
    assert len(errors) == 2, errors
    assert errors[0].startswith("ds.yaml:1: Too long: the DisaggregatedSet my-llm would be 1,049,")
    assert errors[1].startswith("ds.yaml:7: spec.roles[0]: Too long: the rendered LeaderWorkerSet my-llm-0-")
    assert errors[1].endswith("bytes as JSON; the cluster stores at most 1,048,576 "
                              "(etcd's request limit, less what the API server adds)")


def test_an_object_under_the_limit_is_accepted():
    assert errors_of(with_env_value(900_000)) == []


@pytest.mark.parametrize("case", SCHEMA_VERDICTS, ids=lambda case: case[0])
def test_the_crds_verdicts_offline(case):
    """networkConfig {}, subGroupSize 0 and "05%" were accepted; maxSurge null was refused ("got NoneType")."""
    _, doc, expected = case
    assert errors_of(doc) == ([expected] if expected else [])


@pytest.mark.parametrize("mutate", [
    _container_update(resources={"limits": {GPU: "2", "cpu": "1.5", "memory": "1.5Gi"}, "requests": {GPU: "2"}}),
    _container_update(resources={"limits": {"kubernetes.io/anything": "1m"}}),
    _container_update(env=[{"name": "my.var-1 x", "value": "1"}]),  # relaxed names: printable ASCII
    _container_update(livenessProbe={"httpGet": {"port": 80}}, lifecycle={"preStop": {"sleep": {"seconds": 1}}}),
    _pod_spec_update(restartPolicy="Always"),
    _placement("topology.kubernetes.io/zone"),
    # "" was refused as an unsupported value; the API server's defaulting replaces it first.
    _container_update(terminationMessagePolicy="", imagePullPolicy=""), _pod_spec_update(restartPolicy="", dnsPolicy=""),
], ids=["integer-extended", "native-prefixed", "relaxed-env", "one-handler", "restart-always", "label-key",
        "empty-container-policies", "empty-pod-policies"])
def test_what_a_statefulset_accepts_stays_accepted(mutate):
    assert errors_of(_mutated(mutate)) == []


@pytest.mark.parametrize("case", POD_TEMPLATE_REFUSALS + MORE_POD_TEMPLATE_REFUSALS, ids=lambda case: case[0])
def test_a_template_no_statefulset_can_be_made_of_is_refused(case):
    """Each was accepted, rendered, and never got a pod."""
    _, mutate, path = case
    (error,) = errors_of(_mutated(mutate))
    assert error.split(": ")[1] == path, error


def test_every_case_refused_by_the_cluster_has_the_servers_words():
    """Each refusal the API server makes is paired with its words (the integration tier asks
    the server for them); this pairing needs no server."""
    assert set(SERVER_SAYS) == {case[0] for case in REFUSED_BY_THE_CLUSTER}
def test_group_identity_is_ordinal_or_hash():
    doc = base()
    role_spec(doc, 0)["groupIdentity"] = "Hash"
    role_spec(doc, 1)["groupIdentity"] = "Ordinal"
    assert errors_of(doc) == []
    role_spec(doc, 1)["groupIdentity"] = "Random"
    assert "spec.roles[1].spec.groupIdentity" in only_error(doc)


def test_group_identity_hash_refuses_what_needs_ordinal_leaders():
    doc = base()
    spec = role_spec(doc, 0)
    spec.update(groupIdentity="Hash", networkConfig={"subdomainPolicy": "UniquePerReplica"})
    spec["leaderWorkerTemplate"].update(size=2, subGroupPolicy={"subGroupSize": 2})
    errors = errors_of(doc)
    assert len(errors) == 2, errors
    assert all(e.startswith("ds.yaml:") and "spec.roles[0].spec.groupIdentity" in e for e in errors)
    assert "subGroupPolicy" in errors[0] + errors[1] and "UniquePerReplica" in errors[0] + errors[1]
