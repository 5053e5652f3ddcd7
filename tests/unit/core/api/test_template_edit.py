"""The template edits of `set image` and `rollout restart` (design §2.1): which fields change."""

from __future__ import annotations

import copy

from kubectl_disagg.core.api import template_edit as te
from kubectl_disagg.core.delivery.sets import load_sets
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from tests.support.paths import EXAMPLES

EXAMPLE = parse_stream((EXAMPLES / "encode-prefill-decode.yaml").read_text(), "ds.yaml")[0].data
PREFILL = ("spec", "roles", 1, "spec", "leaderWorkerTemplate")


def images(data: dict) -> dict[str, list[str]]:
    out = {}
    for role in data["spec"]["roles"]:
        lwt = role["spec"]["leaderWorkerTemplate"]
        out[role["name"]] = [c["image"] for key in te.POD_TEMPLATES if key in lwt
                             for c in lwt[key]["spec"].get("initContainers", []) + lwt[key]["spec"]["containers"]]
    return out


def with_init_container(data: dict) -> dict:
    data = copy.deepcopy(data)
    data["spec"]["roles"][1]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["initContainers"] = [
        {"name": "fetch", "image": "fetcher:1"}]
    return data


def test_role_equals_image_sets_leader_and_worker_containers_but_no_init_container():
    data = with_init_container(EXAMPLE)
    (assignment,), problems = te.parse_assignments(["prefill=llm:2"])
    edits, refusals = te.image_edits(data, [assignment])
    assert problems == [] and refusals == []
    after = images(te.applied(data, edits))
    assert after["prefill"] == ["llm:2", "fetcher:1", "llm:2"]
    assert after["encode"] == images(data)["encode"] and after["decode"] == images(data)["decode"]


def test_role_slash_container_names_one_container_init_containers_included():
    data = with_init_container(EXAMPLE)
    assignments, _ = te.parse_assignments(["prefill/leader=lead:2", "prefill/fetch=fetcher:2"])
    edits, refusals = te.image_edits(data, assignments)
    assert refusals == []
    assert images(te.applied(data, edits))["prefill"] == ["lead:2", "fetcher:2", "registry.example.com/qwen-vl-server:1.4.2"]


def test_star_is_every_role_and_the_revision_changes():
    assignments, _ = te.parse_assignments(["*=llm:9"])
    edits, _ = te.image_edits(EXAMPLE, assignments)
    after = te.applied(EXAMPLE, edits)
    assert {image for role in images(after).values() for image in role} == {"llm:9"}
    (before_set,) = load_sets(parse_stream(to_yaml(EXAMPLE), "x"))
    (after_set,) = load_sets(parse_stream(to_yaml(after), "x"))
    assert before_set.revision != after_set.revision


def test_every_problem_at_once():
    assignments, problems = te.parse_assignments(["nope=x:1", "decode/missing=y:1", "bad", "a/=x", "r=a b"])
    assert len(problems) == 3
    edits, refusals = te.image_edits(EXAMPLE, assignments)
    assert edits == []
    assert refusals == [(("spec", "roles"), "no role named 'nope' (roles: encode, prefill, decode)"),
                        (("spec", "roles", 2), "role 'decode' has no container 'missing'")]


def test_restart_annotates_the_roles_pod_templates_only():
    edits, refusals = te.restart_edits(EXAMPLE, ["prefill"], "2026-01-02T03:04:05Z")
    assert refusals == []
    assert [path for path, _ in edits] == [PREFILL + (key, "metadata", "annotations", te.RESTARTED_AT)
                                           for key in ("leaderTemplate", "workerTemplate")]
    after = te.applied(EXAMPLE, edits)
    assert after["spec"]["roles"][1]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"] == {
        "annotations": {te.RESTARTED_AT: "2026-01-02T03:04:05Z"}}
    # issue 47: an unknown role is refused naming the set's roles
    assert te.restart_edits(EXAMPLE, ["nope"], "t")[1] == [(("spec", "roles"),
                                                            "no role named 'nope' (roles: encode, prefill, decode)")]
    assert len(te.restart_edits(EXAMPLE, [], "t")[0]) == 4  # every role: encode 1, prefill 2, decode 1


def test_json_patch_is_guarded_and_makes_the_same_object():
    stored = copy.deepcopy(EXAMPLE) | {"metadata": {"name": "qwen-vl", "resourceVersion": "42"}}
    edits = te.restart_edits(stored, ["prefill"], "t")[0] + te.image_edits(stored, te.parse_assignments(["encode=e:2"])[0])[0]
    ops = te.json_patch(stored, edits)
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}
    assert {"op": "add", "path": "/spec/roles/1/spec/leaderWorkerTemplate/leaderTemplate/metadata",
            "value": {"annotations": {te.RESTARTED_AT: "t"}}} in ops
    assert replay(stored, ops[1:]) == te.applied(stored, edits)


def replay(document: dict, ops: list[dict]) -> dict:
    """RFC 6902 add/replace, enough to check the patch."""
    document = copy.deepcopy(document)
    for op in ops:
        keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].split("/")[1:]]
        node = document
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[keys[-1]] = op["value"]
    return document
