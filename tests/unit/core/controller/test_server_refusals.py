"""Refusals of the API server traced back to the DisaggregatedSet document (pure part)."""

from __future__ import annotations

from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.core.controller.server_refusals import field_path, refusal_problems
from tests.support.paths import EXAMPLES
from tests.support.paths import load_sets

EXAMPLE = EXAMPLES / "prefill-decode.yaml"


def test_field_paths():
    assert field_path("spec.containers[0].resources.limits[nvidia.com/gpu]") == (
        "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu")
    assert field_path(".spec.replcas") == ("spec", "replcas")
    assert field_path("") == ()
    assert field_path("spec.ports[²]") == ("spec", "ports", "²")  # a digit to isdigit(), not to int()


def objects():
    (ds,) = load_sets([str(EXAMPLE)]).sets
    return ds, list(render_set(ds))


def test_causes_map_through_the_role_to_their_lines():
    ds, rendered = objects()
    decode = rendered[2]
    status = {"message": "x is invalid", "details": {"causes": [
        {"field": "spec.leaderWorkerTemplate.size", "message": "Invalid value: 0"},
        {"field": "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.limits.nvidia.com/gpu",
         "message": "bad"},
        {"field": "metadata.labels.team", "message": "not there in the document"},
    ]}}
    problems = refusal_problems(ds, decode, status)
    assert [(p.line, p.path) for p in problems] == [
        (31, "spec.roles[1].spec.leaderWorkerTemplate.size"),
        (43, "spec.roles[1].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.limits.nvidia.com/gpu"),
        (27, "spec.roles[1].metadata.labels.team"),
    ]
    assert problems[0].message.startswith(f"refused by the API server (leaderworkerset/{decode['metadata']['name']}): ")


def test_a_refusal_without_causes_names_the_field_in_its_message_or_the_role():
    ds, rendered = objects()
    (problem,) = refusal_problems(ds, rendered[0], {"message": "failed to create typed patch object: "
                                                               ".spec.replcas: field not declared in schema"})
    assert (problem.line, problem.path) == (11, "spec.roles[0].spec.replcas")
    (problem,) = refusal_problems(ds, rendered[1], {"message": "services is forbidden: no"})
    assert (problem.line, problem.path) == (10, "spec.roles[0]")


def test_apply_bodies_read_back_as_the_object_and_hold_nothing_yaml_refuses():
    import json

    import yaml

    from kubectl_disagg.kube.client.rest import apply_body
    obj = {"metadata": {"annotations": {"a": "\U0001F680 \u008b \x7f \ufeff é \u2028"}}}
    body = apply_body(obj)
    assert b"\\ud83d" not in body and "\U0001F680".encode() in body
    assert json.loads(body) == obj and yaml.safe_load(body.decode()) == obj
    assert not any(0x7f <= ord(c) <= 0x9f for c in body.decode())


def test_a_statefulset_refusal_lands_on_the_template_it_was_made_of():
    from kubectl_disagg.core.controller.statefulsets import statefulsets
    ds, rendered = objects()
    leader, workers = statefulsets(rendered[0])  # size 2: a leader StatefulSet and the first group's workers
    assert (leader["metadata"]["name"], workers["metadata"]["name"]) == (rendered[0]["metadata"]["name"],
                                                                         rendered[0]["metadata"]["name"] + "-0")
    assert leader["spec"]["template"]["spec"] == rendered[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    status = {"message": "x", "details": {"causes": [
        {"field": "spec.template.spec.containers[0].image", "message": "Required value"}]}}
    (problem,) = refusal_problems(ds, workers, status)
    assert (problem.line, problem.path) == (
        19, "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].image")
    assert "refused by the API server (statefulset/llama-0-" in problem.message


def test_a_leader_template_and_the_placement_topology_are_traced_too():
    from kubectl_disagg.core.controller.statefulsets import statefulsets
    from kubectl_disagg.core.delivery.sets import load_sets
    from kubectl_disagg.manifests.reader import parse_stream
    text = EXAMPLE.read_text().replace("        workerTemplate:\n", "        leaderTemplate:\n          spec:\n"
                                       "            containers: [{name: l, image: l:1}]\n        workerTemplate:\n", 1)
    text = text.replace("spec:\n  roles:", "spec:\n  placementPolicy: {type: ExclusiveSlice, topology: zone}\n  roles:", 1)
    (ds,) = load_sets(parse_stream(text, "ds.yaml"))
    lws = next(render_set(ds))
    leader, _ = statefulsets(lws)
    assert leader["spec"]["template"]["spec"]["containers"][0]["name"] == "l"
    status = {"message": "x", "details": {"causes": [
        {"field": "spec.template.spec.restartPolicy", "message": "Unsupported value"},
        {"field": "spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
                  ".topologyKey", "message": "Invalid value"}]}}
    assert [p.path for p in refusal_problems(ds, leader, status)] == [
        "spec.roles[0].spec.leaderWorkerTemplate.leaderTemplate.spec.restartPolicy", "spec.placementPolicy.topology"]
