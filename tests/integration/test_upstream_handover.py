"""`kubectl disagg handover` both ways where the real controller runs (the upstream stack):
ownership moves, every pod keeps its uid, and the receiving side then acts on the set."""

from __future__ import annotations

import copy
import time

from kubectl_disagg.core.api import naming
from kubectl_disagg.exits import HandoverExit, StepExit
from tests.oracles.upstream_cluster import Side, set_document, wait_until, with_images

NAME = "llm"


def two_roles(namespace: str, prefill: int = 2) -> dict:
    return set_document(NAME, namespace, [{"name": "prefill", "replicas": prefill, "image": "img:1", "size": 2},
                                          {"name": "decode", "replicas": 1, "image": "img:1"}])


def stored_exists(side: Side) -> bool:
    return any(o["metadata"]["name"] == NAME
               for o in side.cp.request("GET", f"/apis/disaggregatedset.x-k8s.io/v1/namespaces/{side.namespace}"
                                        "/disaggregatedsets")["items"])


def test_controller_to_plugin_orphans_the_objects_and_restarts_nothing(upstream_stack, upstream_namespaces,
                                                                     capsys, tmp_path):
    side = Side(upstream_stack, upstream_namespaces(), capsys, tmp_path)
    document = two_roles(side.namespace)
    side.apply(document)
    side.controller_at_rest(NAME)
    pods, objects = side.pods(), side.objects(NAME)
    assert len(pods) == 5 and len(objects) == 4
    args = ("handover", "to-plugin", NAME, "-n", side.namespace)

    code, out, err = side.cli(*args, "--dry-run")
    assert code == HandoverExit.OK, err
    assert out.count("would leaderworkerset/") == 2 and out.count("would service/") == 2
    assert "would disaggregatedset/llm: delete it with propagationPolicy=Orphan" in out
    assert stored_exists(side) and side.objects(NAME) == objects  # a dry run changes nothing

    code, out, err = side.cli(*args)
    assert code == HandoverExit.OK, err
    assert "step it with rollout step -f from now on" in out
    assert not stored_exists(side)
    time.sleep(3)  # anything the garbage collector would still take, it takes now
    after = side.objects(NAME)
    assert set(after) == set(objects)
    for key, obj in after.items():
        assert obj["metadata"].get("ownerReferences", []) == [], key
        assert obj["metadata"]["labels"][naming.MANAGED_BY_LABEL] == naming.MANAGER, key
        assert obj["spec"] == objects[key]["spec"], key
    assert side.pods() == pods  # the same pods, by uid: nothing restarted

    # The plugin runs it now, from its file, and the controller stays out of it.
    code, out, err = side.step_until_complete(side.write(two_roles(side.namespace, prefill=3), "scaled"))
    assert code == StepExit.OK, err
    assert set(pods.items()) <= set(side.pods().items()) and len(side.pods()) == 7


def test_to_plugin_refuses_a_set_mid_rollout(upstream_stack, upstream_namespaces, capsys, tmp_path):
    side = Side(upstream_stack, upstream_namespaces(), capsys, tmp_path)
    document = two_roles(side.namespace)
    side.apply(document)
    side.controller_at_rest(NAME)
    with upstream_stack.nodes_paused():
        side.apply(with_images(document, "img:2"))
        wait_until(lambda: len({k[1] for k in side.objects(NAME) if k[0] == "LeaderWorkerSet"}) > 2,
                   "the new revision's LWS")
        code, out, err = side.cli("handover", "to-plugin", NAME, "-n", side.namespace)
    assert code == HandoverExit.REFUSED and out == ""
    assert "disaggregatedset/llm is mid-rollout (slice 0 has revisions" in err
    assert stored_exists(side)


def test_plugin_to_controller_adopts_in_place_and_the_controller_scales_it(upstream_stack, upstream_namespaces,
                                                                         capsys, tmp_path):
    side = Side(upstream_stack, upstream_namespaces(), capsys, tmp_path)
    document = two_roles(side.namespace)
    code, _, err = side.step_until_complete(side.write(document, "v1"))
    assert code == HandoverExit.OK, err
    wait_until(lambda: len(side.pods()) == 5 and all(side.pods()), "the plugin's pods")
    pods = side.pods()
    side.apply(document)  # stored: the controller finds the objects and refuses to adopt them
    code, out, err = side.cli("handover", "to-controller", NAME, "-n", side.namespace)
    assert code == HandoverExit.OK, err
    stored = side.controller_at_rest(NAME)
    owner = {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet", "name": NAME,
             "uid": stored["metadata"]["uid"], "controller": True}
    assert all(o["metadata"]["ownerReferences"] == [owner] for o in side.objects(NAME).values())
    assert side.pods() == pods  # adopted in place, by uid

    scaled = copy.deepcopy(document)
    scaled["spec"]["roles"][0]["spec"]["replicas"] = 3
    side.apply(scaled)
    wait_until(lambda: side.stored(NAME)["status"].get("observedGeneration") == 2, "the scale observed")
    side.controller_at_rest(NAME)
    assert set(pods.items()) <= set(side.pods().items()) and len(side.pods()) == 7
