"""Rendering: golden outputs, determinism, identity and placement."""

from __future__ import annotations

import copy
import os
import random
import subprocess
import sys

import pytest

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.core.delivery.sets import load_documents, load_sets
from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml, to_yaml_stream
from tests.support.paths import EXAMPLES, GOLDEN, REPO
from tests.support.paths import load_sets as sets_in_files

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


def render_text(text: str, namespace: str | None = None) -> str:
    items, _ = load_documents(parse_stream(text, "in.yaml"))
    objects = []
    for item in items:
        objects.extend(render_set(item, namespace) if hasattr(item, "roles") else [item.data])
    return to_yaml_stream(objects)


def one_set(text: str):
    (ds,) = load_sets(parse_stream(text, "in.yaml"))
    return ds


def example_data(name: str = "prefill-decode.yaml") -> dict:
    return parse_stream((EXAMPLES / name).read_text(), name)[0].data


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.name)
def test_golden(example, request):
    rendered = render_text(example.read_text())
    golden = GOLDEN / example.name
    if request.config.getoption("--update-golden"):
        golden.write_text(rendered)
    assert golden.is_file(), f"no golden file {golden.name}: run pytest --update-golden"
    assert rendered == golden.read_text()


def test_expected_objects_in_order():
    ds = one_set((EXAMPLES / "four-slices-exclusive.yaml").read_text())
    names = [(o["kind"], o["metadata"]["name"]) for o in render_set(ds)]
    expected = []
    for s in range(4):
        for role in ("prefill", "decode"):
            expected.append(("LeaderWorkerSet", f"deepseek-{s}-{ds.revision}-{role}"))
            expected.append(("Service", f"deepseek-{s}-{ds.revision}-{role}-prv"))
    assert names == expected


def _shuffled(value, rng):
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


def _as_flow_yaml(value) -> str:
    import json
    return json.dumps(value)  # keeps the shuffled key order, unlike our sorted writer


@pytest.mark.parametrize("seed", range(5))
def test_output_independent_of_key_order(seed):
    data = example_data("encode-prefill-decode.yaml")
    reference = render_text(_as_flow_yaml(data))
    assert render_text(_as_flow_yaml(_shuffled(data, random.Random(seed)))) == reference


def test_output_independent_of_hash_seed_and_environment():
    script = "from kubectl_disagg.cli import main; main()"
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "LC_ALL": "C", "TZ": "Pacific/Auckland"}
        result = subprocess.run([sys.executable, "-c", script, "render", "-f", str(EXAMPLES)],
                                capture_output=True, env=env, cwd=REPO, check=True)
        outputs.add(result.stdout)
    assert len(outputs) == 1


def test_labels_annotations_and_system_labels_win():
    data = example_data()
    role = data["spec"]["roles"][0]
    role["metadata"] = {"labels": {"team": "a", naming.NAME_LABEL: "spoof"}, "annotations": {"note": "x"}}
    role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] = {
        "labels": {"app": "mine", "tier": "gpu"}, "annotations": {"prometheus.io/scrape": "true"}}
    ds = one_set(to_yaml(data))
    lws = next(render_set(ds))
    labels = lws["metadata"]["labels"]
    assert labels[naming.NAME_LABEL] == "llama" and labels["team"] == "a"
    assert labels[naming.MANAGED_BY_LABEL] == "kubectl-disagg"
    assert labels["app"] == "llama-0-prefill"
    assert lws["metadata"]["annotations"] == {"note": "x"}
    pod = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]
    assert pod["labels"] == {"app": "llama-0-prefill", "tier": "gpu", **naming.selector_labels("llama", 0, ds.revision, "prefill")}
    assert naming.MANAGED_BY_LABEL not in pod["labels"]
    assert pod["annotations"] == {"prometheus.io/scrape": "true"}


def test_leader_template_is_labelled_too():
    ds = one_set((EXAMPLES / "encode-prefill-decode.yaml").read_text())
    lws = list(render_set(ds))[2]
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    assert leader["metadata"]["labels"][naming.ROLE_LABEL] == "prefill"


def test_service_is_headless_and_selects_its_lws():
    ds = one_set((EXAMPLES / "prefill-decode.yaml").read_text())
    lws, svc = list(render_set(ds))[:2]
    assert svc["spec"]["clusterIP"] == "None"
    pod_labels = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    assert set(svc["spec"]["selector"]) == {naming.NAME_LABEL, naming.ROLE_LABEL, naming.SLICE_LABEL, naming.REVISION_LABEL}


def test_defaults_are_applied():
    ds = one_set((EXAMPLES / "prefill-decode.yaml").read_text())
    spec = next(render_set(ds))["spec"]
    assert spec["rolloutStrategy"] == {"type": "RollingUpdate"}
    assert spec["startupPolicy"] == "LeaderCreated"
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert spec["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP"


def test_present_rolling_update_configuration_gets_its_defaults():
    data = example_data()
    data["spec"]["roles"][0]["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": 2}}
    ds = one_set(to_yaml(data))
    assert ds.roles[0].rolling_update == {"maxSurge": 2, "maxUnavailable": 1, "partition": 0}
    assert ds.roles[1].rolling_update is None


def test_namespace_precedence():
    text = (EXAMPLES / "prefill-decode.yaml").read_text()  # namespace: serving
    assert {o["metadata"]["namespace"] for o in render_set(one_set(text))} == {"serving"}
    assert {o["metadata"]["namespace"] for o in render_set(one_set(text), "serving")} == {"serving"}
    with pytest.raises(UserError, match='does not match the namespace asked for, "other"'):
        list(render_set(one_set(text), "other"))  # -n never overrides the document (kubectl's rule)
    no_ns = text.replace("  namespace: serving\n", "")
    assert {o["metadata"]["namespace"] for o in render_set(one_set(no_ns), "other")} == {"other"}
    assert {o["metadata"]["namespace"] for o in render_set(one_set(no_ns))} == {"default"}


def test_other_documents_pass_through_in_place():
    config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {b: '1', a: x}\n"
    text = config_map + "---\n" + (EXAMPLES / "prefill-decode.yaml").read_text() + "---\n" + config_map
    objects = list(parse_stream(render_text(text), "out"))
    assert objects[0].data == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "x", "b": "1"}}
    assert [o.data["kind"] for o in objects] == ["ConfigMap", "LeaderWorkerSet", "Service", "LeaderWorkerSet", "Service", "ConfigMap"]


def test_placement_exclusive_slice_affinity():
    ds = one_set((EXAMPLES / "four-slices-exclusive.yaml").read_text())
    by_slice = {o["metadata"]["labels"][naming.SLICE_LABEL]: o for o in render_set(ds) if o["kind"] == "LeaderWorkerSet"}
    affinity0 = by_slice["0"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["affinity"]
    zone = "topology.kubernetes.io/zone"
    assert affinity0["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [{
        "labelSelector": {"matchExpressions": [
            {"key": naming.NAME_LABEL, "operator": "In", "values": ["deepseek"]},
            {"key": naming.SLICE_LABEL, "operator": "In", "values": ["0"]}]},
        "topologyKey": zone}]
    assert affinity0["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [{
        "labelSelector": {"matchExpressions": [
            {"key": naming.NAME_LABEL, "operator": "In", "values": ["deepseek"]},
            {"key": naming.SLICE_LABEL, "operator": "Exists"},
            {"key": naming.SLICE_LABEL, "operator": "NotIn", "values": ["0"]}]},
        "topologyKey": zone}]
    anti3 = by_slice["3"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["affinity"]["podAntiAffinity"]
    expressions = anti3["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]["matchExpressions"]
    assert [e["operator"] for e in expressions] == ["In", "NotIn"]  # Exists only for slice 0


def test_placement_exclusive_topology_keeps_existing_affinity():
    data = example_data("four-slices-exclusive.yaml")
    data["spec"]["placementPolicy"]["type"] = "ExclusiveTopology"
    existing = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"x": "y"}}, "topologyKey": "kubernetes.io/hostname"}]},
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    data["spec"]["roles"][0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["affinity"] = copy.deepcopy(existing)
    ds = one_set(to_yaml(data))
    lws = next(render_set(ds))
    affinity = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["affinity"]
    terms = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms[0] == existing["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert len(terms) == 3
    assert terms[2]["labelSelector"]["matchExpressions"] == [
        {"key": naming.NAME_LABEL, "operator": "Exists"},
        {"key": naming.NAME_LABEL, "operator": "NotIn", "values": ["deepseek"]},
        {"key": naming.SLICE_LABEL, "operator": "Exists"}]
    assert "nodeAffinity" in affinity
    # The model itself is untouched: rendering twice gives the same result.
    assert next(render_set(ds)) == lws


def test_render_does_not_mutate_the_model():
    ds = one_set((EXAMPLES / "four-slices-exclusive.yaml").read_text())
    before = copy.deepcopy(ds.roles[0].spec)
    list(render_set(ds))
    assert ds.roles[0].spec == before


def test_load_sets_reads_directories():
    assert sorted(ds.name for ds in sets_in_files([str(EXAMPLES)]).sets) == ["deepseek", "llama", "mixtral", "qwen-vl"]


# -- one set, one name ------------------------------------------------------------------------

def test_a_set_defined_twice_is_refused_at_the_second_document():
    text = (EXAMPLES / "prefill-decode.yaml").read_text()
    other = text.replace("image: ", "image: x", 1) if "image: " in text else text
    with pytest.raises(UserError) as caught:
        load_documents(parse_stream(text + "---\n" + other, "in.yaml"))
    (problem,) = caught.value.problems
    first_line = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("  name: "))
    assert problem.line == len(text.splitlines()) + 1 + first_line
    assert problem.path == "metadata.name"
    assert "is defined twice (first at in.yaml:%d)" % first_line in problem.message


def test_the_same_name_in_two_namespaces_is_two_sets():
    data = example_data()
    other = copy.deepcopy(data)
    other["metadata"]["namespace"] = "elsewhere"
    assert len(load_sets(parse_stream(to_yaml_stream([data, other]), "in.yaml"))) == 2


def _render_cli(path, capsys) -> tuple[int, str, str]:
    from kubectl_disagg.cli import main

    try:
        main(["render", "-f", str(path)])
        code = 0
    except SystemExit as exit_:
        code = exit_.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def test_a_passed_through_object_may_not_take_a_rendered_name(tmp_path, capsys):
    ds = one_set((EXAMPLES / "prefill-decode.yaml").read_text())
    lws = next(render_set(ds))
    clash = {"apiVersion": lws["apiVersion"], "kind": lws["kind"],
             "metadata": {"name": lws["metadata"]["name"], "namespace": lws["metadata"]["namespace"]}}
    path = tmp_path / "all.yaml"
    path.write_text((EXAMPLES / "prefill-decode.yaml").read_text() + "---\n" + to_yaml(clash))
    code, out, err = _render_cli(path, capsys)
    assert code == 1 and out == ""
    assert f"metadata.name: LeaderWorkerSet {lws['metadata']['namespace']}/{lws['metadata']['name']} " \
           f"is also rendered by disaggregatedset/{ds.name}" in err
    # Another kind with that name is another object.
    clash["kind"] = "ConfigMap"
    path.write_text((EXAMPLES / "prefill-decode.yaml").read_text() + "---\n" + to_yaml(clash))
    assert _render_cli(path, capsys)[0] == 0
