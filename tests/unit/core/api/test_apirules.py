"""Validation to the API server's standard: pod and claim templates checked against the Kubernetes
types (generated type table), labels, annotations, quantities and ports, with FILE:LINE and path."""

from __future__ import annotations

import copy

import pytest

from kubectl_disagg.core.api import apirules, typeschema
from kubectl_disagg.core.controller.render import render_set
from tests.oracles.crd_schema import load_crd
from tests.support.paths import EXAMPLES, LWS_CRD, require_crds
from tests.support.paths import load_sets
from tests.support.validation import base, errors_of, only_error, role_spec

WORKER_PATH = "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate"


def container(doc: dict, role: int = 0) -> dict:
    return role_spec(doc, role)["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]


# The inputs issue 12 found valid to us and rejected by the API server.
def test_resources_must_be_a_map():
    doc = base()
    container(doc)["resources"] = "prefill"
    assert f'{WORKER_PATH}.spec.containers[0].resources: Invalid value: "prefill": must be an object' in only_error(doc)


def test_a_port_needs_container_port():
    doc = base()
    container(doc)["ports"] = [{"name": "http"}]
    assert f"{WORKER_PATH}.spec.containers[0].ports[0].containerPort: Required value" in only_error(doc)


def test_resource_quantities_must_be_quantities():
    doc = base()
    container(doc)["resources"] = {"limits": {"nvidia.com/gpu": "lots"}, "requests": {"cpu": "1.5.0"}}
    errors = errors_of(doc)
    assert len(errors) == 2
    assert f'{WORKER_PATH}.spec.containers[0].resources.limits.nvidia.com/gpu: Invalid value: "lots": must be a quantity' in errors[0]
    assert 'requests.cpu: Invalid value: "1.5.0": must be a quantity' in errors[1]


def test_role_labels_must_be_label_values():
    doc = base()
    doc["spec"]["roles"][1]["metadata"] = {"labels": {"tier": "not a label!"}, "annotations": {"-bad": "x"}}
    errors = errors_of(doc)
    assert any('spec.roles[1].metadata.labels.tier: Invalid value: "not a label!"' in e for e in errors)
    assert any('spec.roles[1].metadata.annotations.-bad: Invalid value: "-bad": name part' in e for e in errors)


@pytest.mark.parametrize("key, ok", [
    ("app", True), ("example.com/app", True), ("a" * 63, True), ("a" * 64, False), ("Example.com/app", False),
    ("/app", False), ("example.com/", False), ("app_", False), ("my.app-1", True), ("a/b/c", False),
])
def test_qualified_names(key, ok):
    assert (apirules.qualified_name_error(key) is None) == ok


@pytest.mark.parametrize("text, ok", [
    ("1", True), ("500m", True), ("1.5Gi", True), ("-1", True), ("+.5", True), ("1e3", True), ("2E-3", True),
    ("8Ki", True), ("10n", True), ("lots", False), ("1.5.0", False), ("1KiB", False), ("", False), ("Gi", False),
    ("1 Gi", False), ("1ki", False),
])
def test_quantity_grammar(text, ok):
    assert apirules.is_quantity(text) == ok


def test_problems_deep_in_pod_templates_all_at_once_with_lines():
    text = (EXAMPLES / "prefill-decode.yaml").read_text()
    text = text.replace("            containers:\n", "            containers:\n            - name: side\n"
                        "              livenessProbe:\n                httpGet: {prot: 80}\n"
                        "              env: [{value: v}]\n", 1)
    errors = errors_of(text)
    assert any("livenessProbe.httpGet.prot: unknown field" in e for e in errors), errors
    assert any("livenessProbe.httpGet.port: Required value" in e for e in errors)
    assert any(".env[0].name: Required value" in e for e in errors)
    assert all(e.startswith("ds.yaml:") and int(e.split(":")[1]) > 1 for e in errors)


def test_pod_template_metadata_containers_ports_volumes():
    doc = base()
    template = role_spec(doc, 0)["leaderWorkerTemplate"]["workerTemplate"]
    template["metadata"] = {"labels": {"app": "x" * 64}, "uid": "u"}
    template["spec"]["containers"].append({"name": "c", "image": "i", "ports": [
        {"containerPort": 70000, "name": "TooLongPortName1"}, {"containerPort": 80, "protocol": "HTTP"}]})
    template["spec"]["volumes"] = [{"name": "Data"}, {"name": "cache", "emptyDir": {"sizeLimit": "big"}}]
    errors = "\n".join(errors_of(doc))
    for expected in [
        f"{WORKER_PATH}.metadata.labels.app: Invalid value",
        f"{WORKER_PATH}.metadata.uid: unknown field",
        f'{WORKER_PATH}.spec.containers[1]: Duplicate value: {{"name":"c"}}',  # the list-map key, as the server says
        f"{WORKER_PATH}.spec.containers[1].ports[0].containerPort: Invalid value: 70000",
        f'{WORKER_PATH}.spec.containers[1].ports[0].name: Invalid value: "TooLongPortName1"',
        f'{WORKER_PATH}.spec.containers[1].ports[1].protocol: Unsupported value: "HTTP"',
        f'{WORKER_PATH}.spec.volumes[0].name: Invalid value: "Data"',
        f'{WORKER_PATH}.spec.volumes[1].emptyDir.sizeLimit: Invalid value: "big": must be a quantity',
    ]:
        assert expected in errors


def test_volume_claim_templates_are_persistent_volume_claims():
    doc = base()
    role_spec(doc, 1)["leaderWorkerTemplate"]["volumeClaimTemplates"] = [{
        "metadata": {"name": "cache", "labels": {"k": "v v"}},
        "spec": {"accessModes": "ReadWriteOnce", "resources": {"requests": {"storage": "ten"}}, "storageClass": "x"},
    }]
    errors = "\n".join(errors_of(doc))
    where = "spec.roles[1].spec.leaderWorkerTemplate.volumeClaimTemplates[0]"
    assert f'{where}.spec.accessModes: Invalid value: "ReadWriteOnce": must be an array' in errors
    assert f'{where}.spec.resources.requests.storage: Invalid value: "ten": must be a quantity' in errors
    assert f"{where}.spec.storageClass: unknown field" in errors
    assert f'{where}.metadata.labels.k: Invalid value: "v v"' in errors


def test_requests_above_limits_and_negative_quantities():
    doc = base()
    container(doc)["resources"] = {"limits": {"cpu": "1"}, "requests": {"cpu": "1500m", "memory": "-1Gi"}}
    errors = "\n".join(errors_of(doc))
    assert "requests.cpu: Invalid value: '1500m': must be less than or equal to cpu limit of 1" in errors
    assert "requests.memory: Invalid value: '-1Gi': must be greater than or equal to 0" in errors


def test_wrong_types_stop_the_semantic_rules_but_not_the_other_type_problems():
    doc = base()
    container(doc, 0)["ports"] = {"containerPort": 80}
    container(doc, 1)["resources"] = {"limits": {"cpu": "many"}}
    errors = errors_of(doc)
    assert len(errors) == 2 and "must be an array" in errors[0] and "must be a quantity" in errors[1]


def test_examples_are_valid():
    assert len(load_sets([str(EXAMPLES)]).sets) >= 1


def test_required_fields_never_stricter_than_the_lws_crd():
    """Every field we require, the API server requires too (the LWS CRD's `required` lists)."""
    crd = load_crd(require_crds() / LWS_CRD.name)
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    root = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["leaderWorkerTemplate"]
    checked = set()

    def walk(node: dict, struct: str, path: str) -> None:
        if (struct, path.count(".")) in checked or path.count(".") > 12:
            return
        checked.add((struct, path.count(".")))
        known = typeschema.fields(struct)
        properties = node.get("properties", {})
        assert set(properties) <= set(known), path  # the CRD knows no field the Go types lack
        ours = {name for name, field in known.items() if field.required}
        assert ours <= set(node.get("required", ())), (path, ours - set(node.get("required", ())))
        for name, field in known.items():
            shape = field.shape.lstrip("*")
            sub = properties.get(name)
            while sub is not None and shape.startswith(("[]", "map[]")):
                sub = sub.get("items") if shape.startswith("[]") else sub.get("additionalProperties")
                shape = shape.split("]", 1)[1].lstrip("*")
            if sub and shape.startswith("@"):
                walk(sub, shape[1:], f"{path}.{name}")

    walk(root, typeschema.LEADER_WORKER_TEMPLATE, "leaderWorkerTemplate")
    assert len(checked) > 100


@pytest.mark.parametrize("mutate", [
    lambda c: c.__setitem__("resources", "prefill"),
    lambda c: c.__setitem__("ports", [{"name": "http"}]),
    lambda c: c.__setitem__("resources", {"limits": {"nvidia.com/gpu": "lots"}}),
])
def test_what_we_refuse_the_lws_crd_refuses(mutate):
    """The same inputs, rendered without our check, fail the LWS CRD's own schema."""
    from tests.oracles.crd_schema import schema_errors
    require_crds()
    (ds,) = load_sets([str(EXAMPLES / "prefill-decode.yaml")]).sets
    lws = copy.deepcopy(next(o for o in render_set(ds) if o["kind"] == "LeaderWorkerSet"))
    mutate(lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0])
    assert schema_errors(LWS_CRD, lws)


# Found by the fuzz campaign (docs/reliability.md).
def test_null_items_of_string_lists_are_refused():
    doc = base()
    container(doc)["args"] = [None, "x"]
    assert f"{WORKER_PATH}.spec.containers[0].args[0]: Invalid value: null: must be a string" in only_error(doc)


def test_a_wrong_type_inside_a_struct_with_rules_is_reported_not_raised():
    doc = base()
    container(doc)["resources"] = {"limits": 1, "requests": {"cpu": "1"}}
    container(doc)["ports"] = [{"containerPort": "80", "name": 7}]
    errors = errors_of(doc)
    assert len(errors) == 3 and all("must be" in e for e in errors)


def test_control_characters_in_values_keep_one_problem_per_line():
    doc = base()
    container(doc)["image"] = ["line\rbreak"]
    doc["metadata"]["labels"] = {"a\u2028b": "x"}
    errors = errors_of(doc)
    assert len(errors) == 1 and len(errors[0].splitlines()) == 1
