"""`find_set`: NAME as stored, as deployed with -f (its LWS labels), or absent (issue 39)."""

from __future__ import annotations

from types import SimpleNamespace

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.snapshot import lws_from_object
from kubectl_disagg.kube.named_set import Absent, DeployedWithFiles, Stored, find_set
from kubectl_disagg.views.named_set import not_stored_lines


def lws(name, slice_, revision, role, replicas, ready, created="2026-01-01T00:00:00Z"):
    labels = {naming.NAME_LABEL: "llama", naming.SLICE_LABEL: str(slice_), naming.REVISION_LABEL: revision,
              naming.ROLE_LABEL: role}
    return lws_from_object({"kind": "LeaderWorkerSet", "metadata": {"name": name, "labels": labels,
                                                                       "creationTimestamp": created},
                            "spec": {"replicas": replicas}, "status": {"readyReplicas": ready}})


class Cluster:
    def __init__(self, stored=None, lws=(), names=()):
        self.stored, self.lws, self.names, self.asked = stored, tuple(lws), list(names), []

    def stored_set(self, name, namespace):
        self.asked.append("get")
        return self.stored

    def snapshot(self, name, namespace, services=True):
        self.asked.append("list lws")
        return SimpleNamespace(lws=self.lws)

    def set_names(self, namespace):
        self.asked.append("list sets")
        return self.names


def test_a_stored_set_is_one_get():
    cluster = Cluster(stored={"kind": "DisaggregatedSet"})
    assert find_set(cluster, "llama", "serving") == Stored({"kind": "DisaggregatedSet"})
    assert cluster.asked == ["get"]


def test_a_set_deployed_with_files_is_found_by_its_lws_labels():
    found = find_set(Cluster(lws=[
        lws("a", 0, "old00000", "prefill", 2, 2, "2026-01-01T00:00:00Z"),
        lws("b", 0, "new11111", "prefill", 1, 0, "2026-01-02T00:00:00Z"),
        lws("c", 1, "old00000", "prefill", 2, 2), lws("d", 1, "old00000", "decode", 1, 1)]), "llama", "serving")
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
    found = find_set(Cluster(names=["mixtral", "qwen"]), "llama", "serving")
    assert found == Absent("llama", "serving", ("mixtral", "qwen"))
    assert not_stored_lines(found, "status", None) == [
        "disaggregatedset/llama not found in namespace serving; the sets there: mixtral, qwen"]
