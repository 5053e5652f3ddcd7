"""`find_set`: NAME as stored, as deployed with -f (its LWS labels), or absent (issue 39)."""

from __future__ import annotations

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.snapshot import lws_from_object
from kubectl_disagg.kube.named_set import Absent, DeployedWithFiles, Stored, find_set
from kubectl_disagg.views.named_set import not_stored_lines
from tests.fakes.cluster import MemorySession


def lws_object(name, slice_, revision, role, replicas, ready, created="2026-01-01T00:00:00Z", set_name="llama"):
    labels = {naming.NAME_LABEL: set_name, naming.SLICE_LABEL: str(slice_), naming.REVISION_LABEL: revision,
              naming.ROLE_LABEL: role}
    return {"kind": "LeaderWorkerSet", "metadata": {"name": name, "labels": labels, "creationTimestamp": created},
            "spec": {"replicas": replicas}, "status": {"readyReplicas": ready}}


def lws(*args):
    return lws_from_object(lws_object(*args))


def cluster_of(*objects) -> MemorySession:
    cluster = MemorySession()
    for obj in objects:
        cluster.cluster.add(obj)
    return cluster


def test_a_stored_set_is_one_get():
    cluster = cluster_of({"kind": "DisaggregatedSet", "metadata": {"name": "llama"}},
                         lws_object("a", 0, "old00000", "prefill", 2, 2))
    found = find_set(cluster, "llama", "serving")
    assert found == Stored(cluster.cluster.objects[("DisaggregatedSet", "llama")])
    assert cluster.requests == ["get disaggregatedset"]


def test_a_set_deployed_with_files_is_found_by_its_lws_labels():
    cluster = cluster_of(
        lws_object("a", 0, "old00000", "prefill", 2, 2, "2026-01-01T00:00:00Z"),
        lws_object("b", 0, "new11111", "prefill", 1, 0, "2026-01-02T00:00:00Z"),
        lws_object("c", 1, "old00000", "prefill", 2, 2), lws_object("d", 1, "old00000", "decode", 1, 1))
    found = find_set(cluster, "llama", "serving")
    assert cluster.requests == ["get disaggregatedset", "list leaderworkersets"]
    assert isinstance(found, DeployedWithFiles)
    assert (found.revisions, found.slices) == (["old00000", "new11111"], 2)
    assert found.replicas("old00000") == {"decode": (1, 1), "prefill": (4, 4)}


def test_the_message_says_deployed_with_f_and_the_command_that_works():
    found = DeployedWithFiles("llama", "serving", (lws("a", 0, "b3e5d6a1", "prefill", 2, 1),
                                                   lws("b", 0, "b3e5d6a1", "decode", 1, 1)))
    assert not_stored_lines(found, "step", "serving") == [
        "disaggregatedset/llama is not stored in namespace serving: it was deployed with -f (its 2 "
        "LeaderWorkerSets carry its name), so its template, replicas and RolloutPolicy are not in the cluster",
        "  running: revision b3e5d6a1: decode 1/1 ready, prefill 1/2 ready",
        "  1 slice; rollout step needs the set's template: kubectl disagg rollout step -f FILE -n serving"]


def test_an_absent_set_names_the_sets_there():
    cluster = cluster_of({"kind": "DisaggregatedSet", "metadata": {"name": "mixtral"}},
                         lws_object("q", 0, "abc00000", "prefill", 1, 1, set_name="qwen"))
    found = find_set(cluster, "llama", "serving")
    assert found == Absent("llama", "serving", ("mixtral", "qwen"))
    assert cluster.requests == ["get disaggregatedset", "list leaderworkersets", "list disaggregatedsets",
                                "list leaderworkersets"]
    assert not_stored_lines(found, "status", None) == [
        "disaggregatedset/llama not found in namespace serving; the sets there: mixtral, qwen"]
