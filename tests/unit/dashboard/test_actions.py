"""The page's actions (dashboard/actions.py) are the CLI's verbs: the same position written,
recorded with the same who and the reason, the same Event; each needs a reason and is refused
(409, nothing written) when the RolloutState has moved since the page showed it. Over the
in-memory cluster with a RolloutState (tests/fakes/paced.py)."""

from __future__ import annotations

import copy
from dataclasses import replace

from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.dashboard.actions import actions
from kubectl_disagg.exits import StepExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.wait import Deadline
from tests.fakes.paced import NS, PacedCluster, Printer
from tests.support.sets import fleet, make_set

SET = {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
       "metadata": {"name": "llm", "namespace": NS, "resourceVersion": "5"},
       "spec": {"slices": 4, "roles": [
           {"name": role, "spec": {"replicas": 1, "leaderWorkerTemplate": {
               "workerTemplate": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}}}}}
           for role in ("prefill", "decode")]}}
POLICY = {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
          "metadata": {"name": "llm", "namespace": NS},
          "spec": {"targetRef": {"name": "llm"}, "waves": [{"slices": 1, "pause": {}}], "maxSlicesInFlight": 2}}


class Hub:
    """What the hub holds: the stored set (at `image`), its policy and the cluster's RolloutState."""

    def __init__(self, cluster, image="img:2"):
        self.cluster, self.image = cluster, image

    def objects(self, kind):
        state = self.cluster.rollout_state("llm", NS)
        stored = copy.deepcopy(SET)
        for role in stored["spec"]["roles"]:
            role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["image"] = self.image
        return {"DisaggregatedSet": [stored], "RolloutPolicy": [copy.deepcopy(POLICY)],
                "RolloutState": [state] if state else []}.get(kind, [])


def held():
    memory, ds = fleet(4, RolloutPolicy("llm", NS, "llm", (Wave(1, pause=True),), 2))
    cluster = PacedCluster(memory)
    code = run.step(ClusterStore(cluster, [ds]), Printer(),
                    run.StepOptions(until_complete=True, deadline=Deadline.after(30)))
    assert code == StepExit.HELD
    return cluster, ds


def page_actions(cluster, patches=None, image="img:2"):
    return actions(Hub(cluster, image), lambda ds, namespace: ClusterStore(cluster, [ds], namespace),
                   lambda name, namespace, patch: (patches if patches is not None else []).append(patch))


def without_times(position):
    """The position without its times (`at`, and when each wave completed): two clusters stepped
    one after the other cross a second now and then."""
    def strip(value):
        if isinstance(value, dict):
            return {k: sorted(v) if k == "completed" else strip(v) for k, v in value.items() if k != "at"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return strip(position)


def test_each_action_writes_the_position_and_the_event_the_cli_verb_writes():
    for verb in ("promote", "pause", "abort"):
        page_cluster, _ = held()
        cli_cluster, ds = held()
        version = page_cluster.state["metadata"]["resourceVersion"]
        answer = page_actions(page_cluster)(NS, "llm", verb, "because", version)
        assert answer.status == 200, answer.message
        assert run_verb(ClusterStore(cli_cluster, [ds], NS), verb, Printer(), reason="because") == 0
        assert without_times(page_cluster.state["position"]) == without_times(cli_cluster.state["position"])
        assert [e["note"] for e in page_cluster.events] == [e["note"] for e in cli_cluster.events]
        assert "'reason': 'because'" in str(page_cluster.state["position"])


def test_an_action_needs_a_reason_and_the_version_the_page_showed():
    cluster, _ = held()
    act = page_actions(cluster)
    version = cluster.state["metadata"]["resourceVersion"]
    writes = len(cluster.writes)
    assert act(NS, "llm", "promote", "  ", version).status == 400
    stale = act(NS, "llm", "promote", "go", str(int(version) - 1))
    assert stale.status == 409 and "changed since the page showed it" in stale.message
    assert act(NS, "llm", "explode", "go", version).status == 400
    assert act(NS, "other", "promote", "go", version).status == 404
    assert len(cluster.writes) == writes  # nothing written
    refused = act(NS, "llm", "retry", "go", version)
    assert refused.status == 422 and "refusing to retry" in refused.message


def test_undo_writes_the_revision_before_back_as_one_guarded_patch():
    cluster, ds = held()
    patches: list = []
    version = cluster.state["metadata"]["resourceVersion"]
    assert page_actions(cluster, patches)(NS, "llm", "undo", "", version).status == 400  # no reason
    alone = page_actions(cluster, patches)(NS, "llm", "undo", "bad", version)
    assert alone.status == 400 and "no earlier revision" in alone.message and patches == []
    assert run_verb(ClusterStore(cluster, [ds], NS), "promote", Printer(), reason="ok") == 0
    assert run.step(ClusterStore(cluster, [ds]), Printer(),
                    run.StepOptions(until_complete=True, deadline=Deadline.after(30))) == StepExit.OK
    third = replace(make_set({"prefill": 1, "decode": 1}, image="img:3", slices=4), policy=ds.policy)
    assert run.step(ClusterStore(cluster, [third]), Printer(),
                    run.StepOptions(until_complete=True, deadline=Deadline.after(30))) == StepExit.HELD
    version = cluster.state["metadata"]["resourceVersion"]
    answer = page_actions(cluster, patches, "img:3")(NS, "llm", "undo", "canary is bad", version)
    assert answer.status == 200, answer.message
    assert f"rolled back to revision {ds.revision}" in answer.message
    (patch,) = patches
    assert any(op["op"] == "test" for op in patch)  # guarded: a set changed since is refused
    written = str([op["value"] for op in patch if op["op"] != "test"])
    assert "img:2" in written and "img:3" not in written
