"""The upstream stack itself (testenv/upstream.py): the real LWS and DisaggregatedSet controllers
run a stored set to Available with pods bound to kwok's GPU nodes, and pausing the nodes holds
pods unready."""

from __future__ import annotations

import time

from testenv.upstream import NODE_GPUS, ZONE_LABEL
from tests.oracles.upstream_cluster import POD_PATH, Side, set_document, wait_until, with_images


def test_the_controller_runs_a_stored_set_onto_kwok_nodes(upstream_stack, upstream_namespaces, capsys, tmp_path):
    side = Side(upstream_stack, upstream_namespaces(), capsys, tmp_path)
    nodes = upstream_stack.cp.request("GET", "/api/v1/nodes")["items"]
    assert {n["status"]["capacity"]["nvidia.com/gpu"] for n in nodes} == {str(NODE_GPUS)}
    assert len({n["metadata"]["labels"][ZONE_LABEL] for n in nodes}) == upstream_stack.zone_count

    side.apply(set_document("llm", side.namespace, [{"name": "prefill", "replicas": 2, "image": "img:1", "size": 2},
                                                    {"name": "decode", "replicas": 1, "image": "img:1"}]))
    stored = side.controller_at_rest("llm")
    assert [r["name"] for r in stored["status"]["roleStatuses"]] == ["prefill", "decode"]
    pods = upstream_stack.cp.request("GET", POD_PATH.format(side.namespace))["items"]
    assert len(pods) == 2 * 2 + 1  # leaders and workers: StatefulSets of the LWS controller
    assert all(p["spec"].get("nodeName", "").startswith("kwok-node-") for p in pods)
    assert all(p["status"]["phase"] == "Running" for p in pods)
    owners = {o["kind"] for obj in side.objects("llm").values() for o in obj["metadata"].get("ownerReferences", [])}
    assert owners == {"DisaggregatedSet"}


def test_paused_nodes_hold_new_pods_unready(upstream_stack, upstream_namespaces, capsys, tmp_path):
    side = Side(upstream_stack, upstream_namespaces(), capsys, tmp_path)
    document = set_document("held", side.namespace, [{"name": "prefill", "replicas": 1, "image": "img:1"},
                                                     {"name": "decode", "replicas": 1, "image": "img:1"}])
    side.apply(document)
    side.controller_at_rest("held")
    with upstream_stack.nodes_paused():
        side.apply(with_images(document, "img:2"))
        wait_until(lambda: len(side.pods()) > 2, "the new revision's pods")

        def progressing():
            stored = side.stored("held")
            status = stored.get("status") or {}
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
            return status.get("observedGeneration") == stored["metadata"]["generation"] and conditions == {
                "Progressing": "True", "Available": "False"}
        wait_until(progressing, "the controller to report the held rollout as Progressing")
        time.sleep(3)  # held: nothing becomes ready while kwok is paused
        assert progressing()
    side.controller_at_rest("held")
