"""The revision is the controller's (issue #13): same bytes hashed, so the same 8 hex digits.

It changes with templates and role names, and with nothing else (design §2).
"""

from __future__ import annotations

import copy
import json

import pytest

from kubectl_disagg.core.api import revision
from kubectl_disagg.core.api.model import default_role_spec
from kubectl_disagg.core.delivery.sets import load_documents, load_sets
from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from tests.oracles.crd_schema import load_crd
from tests.support.paths import DS_CRD, EXAMPLES, require_crds, require_vectors


def revision_of(data: dict) -> str:
    (ds,) = load_sets(parse_stream(to_yaml(data), "ds.yaml"))
    return ds.revision


@pytest.fixture
def data() -> dict:
    return parse_stream((EXAMPLES / "encode-prefill-decode.yaml").read_text(), "x")[0].data


def edited(data: dict, edit) -> dict:
    data = copy.deepcopy(data)
    edit(data)
    return data


def role(data: dict, i: int) -> dict:
    return data["spec"]["roles"][i]


def worker_container(data: dict) -> dict:
    return role(data, 0)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]


UNCHANGED = {
    "replicas": lambda d: role(d, 1)["spec"].update(replicas=7),
    "slices": lambda d: d["spec"].update(slices=5),
    "rollout strategy": lambda d: role(d, 1)["spec"].update(rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": "50%"}}),
    "placement": lambda d: d["spec"].update(placementPolicy={"type": "ExclusiveSlice", "topology": "zone"}),
    "role metadata": lambda d: role(d, 0).update(metadata={"labels": {"x": "y"}, "annotations": {"a": "b"}}),
    "set metadata": lambda d: d["metadata"].update(namespace="elsewhere", labels={"team": "z"}),
    "startup policy": lambda d: role(d, 0)["spec"].update(startupPolicy="LeaderCreated"),
    "explicit size default": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"].update(size=1),
    "explicit restart default": lambda d: role(d, 2)["spec"]["leaderWorkerTemplate"].update(restartPolicy="RecreateGroupOnPodRestart"),
    "explicit protocol default": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["ports"][0].update(protocol="TCP"),
    "explicit null": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"].update(leaderTemplate=None),
    "empty list where omitempty": lambda d: worker_container(d).update(command=[]),
    "empty map where omitempty": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"].update(nodeSelector={}),
}

CHANGED = {
    "image": lambda d: role(d, 2)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0].update(image="x:2"),
    "size": lambda d: role(d, 2)["spec"]["leaderWorkerTemplate"].update(size=3),
    "pod label": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"].update(v="2"),
    "leader template": lambda d: role(d, 1)["spec"]["leaderWorkerTemplate"].pop("leaderTemplate"),
    "restart policy": lambda d: role(d, 0)["spec"]["leaderWorkerTemplate"].update(restartPolicy="None"),
    "role rename": lambda d: role(d, 0).update(name="vision"),
    "role order": lambda d: d["spec"]["roles"].reverse(),
    "role added": lambda d: d["spec"]["roles"].append(copy.deepcopy(role(d, 2)) | {"name": "extra"}),
    "subgroup type": lambda d: role(d, 2)["spec"]["leaderWorkerTemplate"].update(subGroupPolicy={"subGroupPolicyType": "LeaderExcluded", "subGroupSize": 2}),
}


@pytest.mark.parametrize("edit", UNCHANGED.values(), ids=UNCHANGED.keys())
def test_revision_unchanged(data, edit):
    assert revision_of(edited(data, edit)) == revision_of(data)


@pytest.mark.parametrize("edit", CHANGED.values(), ids=CHANGED.keys())
def test_revision_changed(data, edit):
    assert revision_of(edited(data, edit)) != revision_of(data)


def with_template_edit(data: dict, edit) -> str:
    return revision_of(edited(data, lambda d: edit(role(d, 2)["spec"]["leaderWorkerTemplate"])))


def test_spelled_out_subgroup_type_default(data):
    def subgroup(policy):
        return lambda template: template.update(size=4, subGroupPolicy=policy)
    implicit = with_template_edit(data, subgroup({"subGroupSize": 2}))
    assert implicit == with_template_edit(data, subgroup({"subGroupPolicyType": "LeaderWorker", "subGroupSize": 2}))
    assert implicit != with_template_edit(data, subgroup({"subGroupPolicyType": "LeaderExcluded", "subGroupSize": 2}))


def test_quantities_hash_by_value_as_the_controller_writes_them(data):
    def gpus(value):
        return lambda template: template["workerTemplate"]["spec"]["containers"][0].update(
            resources={"limits": {"nvidia.com/gpu": value}})
    one = with_template_edit(data, gpus("1"))
    assert one == with_template_edit(data, gpus("1000m")) == with_template_edit(data, gpus(1))
    assert one != with_template_edit(data, gpus("2"))


def test_revision_is_eight_hex_digits(data):
    revision = revision_of(data)
    assert len(revision) == 8 and int(revision, 16) >= 0


# --- the controller's bytes -----------------------------------------------------------------

def test_the_example_has_the_controllers_revision():
    (ds,) = load_sets(parse_stream((EXAMPLES / "prefill-decode.yaml").read_text(), "x"))
    assert ds.revision == "b3e5d6a1"  # what the upstream controller names it (issue #13)


def test_every_controller_vector_matches():
    vectors = require_vectors()
    assert vectors
    for vector in vectors:
        (ds,) = load_sets(parse_stream(vector["document"], "vector.yaml"))
        assert ds.revision == vector["revision"], ds.name


def encoded(template: dict, name: str = "a") -> str:
    spec = default_role_spec({"leaderWorkerTemplate": template})
    return revision.encode_roles([(name, spec["leaderWorkerTemplate"])]).decode()


def test_go_field_order_defaults_and_empty_structs():
    # Declaration order (not sorted), "metadata":{} and "resources":{} written although empty,
    # image omitted when empty (omitempty), the CRD's size and restartPolicy filled in.
    template = {"workerTemplate": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
    assert encoded(template) == (
        '[{"name":"a","template":{"workerTemplate":{"metadata":{},"spec":{"containers":'
        '[{"name":"c","image":"i","resources":{}}]}},"size":1,"restartPolicy":"RecreateGroupOnPodRestart"}}]')


def test_unknown_fields_are_pruned():
    probe = {"exec": {"command": ["true"]}}
    plain = encoded({"workerTemplate": {"spec": {"containers": [{"name": "c", "startupProbe": probe}]}}})
    extra = encoded({"workerTemplate": {"spec": {"containers": [{"name": "c", "startupProbe": probe | {"bogus": 1}}]}}})
    assert extra == plain


def test_nil_and_empty_lists_without_omitempty():
    # PodSpec.containers has no omitempty: absent is Go's nil slice (null), [] an empty one.
    absent = encoded({"workerTemplate": {"spec": {}}})
    empty = encoded({"workerTemplate": {"spec": {"containers": []}}})
    assert '"spec":{"containers":null}' in absent
    assert '"spec":{"containers":[]}' in empty


def test_html_escaping_sorted_maps_and_int_or_string():
    container = {"name": "c", "args": ["a && b <c>\u2028é"],
                 "readinessProbe": {"httpGet": {"port": 8080}}, "livenessProbe": {"httpGet": {"port": "http"}}}
    text = encoded({"workerTemplate": {"spec": {"containers": [container], "nodeSelector": {"b": "2", "a": "1"}}}})
    assert '"args":["a \\u0026\\u0026 b \\u003cc\\u003e\\u2028é"]' in text
    assert '"nodeSelector":{"a":"1","b":"2"}' in text
    # livenessProbe before readinessProbe: Container's declaration order
    assert '"livenessProbe":{"httpGet":{"port":"http"}},"readinessProbe":{"httpGet":{"port":8080}}' in text


def test_crd_defaults_deep_in_the_template():
    container = {"name": "c", "ports": [{"containerPort": 80}],
                 "startupProbe": {"grpc": {"port": 9}},
                 "env": [{"name": "E", "valueFrom": {"configMapKeyRef": {"key": "k"}}}]}
    text = encoded({"workerTemplate": {"spec": {"containers": [container]}}})
    assert '"ports":[{"containerPort":80,"protocol":"TCP"}]' in text
    assert '"grpc":{"port":9,"service":""}' in text  # service has no omitempty: "" (default), not null
    assert '"configMapKeyRef":{"key":"k"}' in text  # name defaults to "", which omitempty drops


def test_defaulting_is_idempotent():
    data = parse_stream((EXAMPLES / "encode-prefill-decode.yaml").read_text(), "x")[0].data
    for raw in data["spec"]["roles"]:
        once = default_role_spec(raw["spec"])
        twice = default_role_spec(once)
        assert twice == once


def test_a_value_go_cannot_decode_is_an_error_with_its_line():
    data = parse_stream((EXAMPLES / "prefill-decode.yaml").read_text(), "x")[0].data
    worker_container = data["spec"]["roles"][1]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    worker_container["resources"]["limits"]["cpu"] = "lots"
    with pytest.raises(UserError) as raised:
        load_documents(parse_stream(to_yaml(data), "ds.yaml"))
    (line,) = raised.value.lines()
    assert line.startswith("ds.yaml:")
    assert "spec.roles[1].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.limits.cpu" in line
    assert "lots" in line


def _crd_defaults(schema: dict, path: str, out: set) -> None:
    if "default" in schema:
        out.add((path, json.dumps(schema["default"])))
    for key, child in (schema.get("properties") or {}).items():
        _crd_defaults(child, f"{path}.{key}", out)
    if isinstance(schema.get("items"), dict):
        _crd_defaults(schema["items"], path + "[]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        _crd_defaults(schema["additionalProperties"], path + "{}", out)


def _table_defaults(shape: tuple, path: str, out: set, seen: tuple = ()) -> None:
    kind = shape[0]
    if kind in ("ptr", "list", "map"):
        _table_defaults(shape[1], path + {"ptr": "", "list": "[]", "map": "{}"}[kind], out, seen)
    elif kind == "struct" and shape[1] not in seen:
        compiled = revision.table().struct(shape[1])
        for key, value in compiled.defaults.items():
            out.add((f"{path}.{key}", json.dumps(value)))
        for key, field_shape, _, _ in compiled.fields:
            _table_defaults(field_shape, f"{path}.{key}", out, seen + (shape[1],))


def test_generated_defaults_are_exactly_the_crds():
    require_crds()
    crd = load_crd(DS_CRD)
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    roles = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["roles"]
    expected: set = set()
    _crd_defaults(roles["items"]["properties"]["spec"]["properties"]["leaderWorkerTemplate"], "", expected)
    generated: set = set()
    _table_defaults(revision.table().root, "", generated)
    assert generated == expected
    assert (".workerTemplate.spec.containers[].ports[].protocol", '"TCP"') in generated


def test_every_struct_in_the_generated_table_can_be_encoded():
    # A regenerated table with a shape revision.py does not know fails here, not in a render.
    with open(revision.TABLE_PATH, "rb") as file:
        names = list(json.load(file)["structs"])
    assert len(names) > 100
    for name in names:
        assert revision._encode(("struct", name), {}) is not None


# --- groupIdentity (lws#987) ----------------------------------------------------------------

# Computed by lws#987's own ComputeRevision (its head commit cb3b0cd, built against the types of
# that pull request) over two roles of this one worker template, `prefill` naming its
# groupIdentity as the key says (absent: not named).
GROUP_IDENTITY_VECTORS = {None: "1d45fda1", "": "1d45fda1", "Ordinal": "1d45fda1", "Hash": "36e61bf7"}
VECTOR_TEMPLATE = {"workerTemplate": {"spec": {"containers": [{"name": "w", "image": "x:1"}]}}}


@pytest.mark.parametrize("identity, expected", GROUP_IDENTITY_VECTORS.items())
def test_group_identity_hashes_as_lws_987_does(identity, expected):
    roles = [("prefill", copy.deepcopy(VECTOR_TEMPLATE)), ("decode", copy.deepcopy(VECTOR_TEMPLATE))]
    assert revision.compute_revision(roles, {"prefill": identity}) == expected


def test_group_identity_sits_between_name_and_template_only_when_hash():
    template = {"workerTemplate": {}}
    assert revision.encode_roles([("a", template)], {"a": "Hash"}).decode().startswith(
        '[{"name":"a","groupIdentity":"Hash","template":{')
    assert revision.encode_roles([("a", template)], {"a": "Ordinal"}) == revision.encode_roles([("a", template)])


def test_a_set_naming_group_identity_ordinal_has_the_revision_of_one_without_it(data):
    ordinal = edited(data, lambda d: role(d, 1)["spec"].update(groupIdentity="Ordinal"))
    hashed = edited(data, lambda d: role(d, 1)["spec"].update(groupIdentity="Hash"))
    assert revision_of(ordinal) == revision_of(data)
    assert revision_of(hashed) != revision_of(data)
