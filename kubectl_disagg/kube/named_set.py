"""A set named on the command line (`rollout status|plan|step NAME`), found as kubectl users
expect: the DisaggregatedSet object stored in the cluster, else the LeaderWorkerSets labelled
with the name (a set deployed with `-f`, which stores no object), else nothing. One lookup for
every command that takes NAME; the command's view says what each answer means for it."""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_disagg.core.controller.snapshot import LiveLWS
from kubectl_disagg.kube.seam import StoredSets
from kubectl_disagg.manifests.source import JsonObject


@dataclass(frozen=True)
class Stored:
    """The DisaggregatedSet object stored under the name."""

    obj: JsonObject


@dataclass(frozen=True)
class DeployedWithFiles:
    """No object stored, but LeaderWorkerSets carry the name: the set was deployed with -f
    (`render | kubectl apply`, or `rollout step -f`). What runs can be read from them; the
    template, the replicas wanted and the RolloutPolicy were never stored."""

    name: str
    namespace: str
    lws: tuple[LiveLWS, ...]

    @property
    def revisions(self) -> list[str]:
        """The revisions running, the newest (last created) last."""
        newest: dict[str, str] = {}
        for lws in self.lws:
            if lws.identity.revision:
                newest[lws.identity.revision] = max(newest.get(lws.identity.revision, ""), lws.created)
        return sorted(newest, key=lambda revision: (newest[revision], revision))

    @property
    def slices(self) -> int:
        return len({lws.identity.slice for lws in self.lws if lws.identity.slice is not None})

    def replicas(self, revision: str) -> dict[str, tuple[int, int]]:
        """Role → (ready, replicas) of `revision`, summed over the slices, in name order."""
        counts: dict[str, tuple[int, int]] = {}
        for lws in self.lws:
            if lws.identity.revision == revision and lws.identity.role:
                ready, wanted = counts.get(lws.identity.role, (0, 0))
                counts[lws.identity.role] = (ready + lws.ready, wanted + lws.replicas)
        return dict(sorted(counts.items()))


@dataclass(frozen=True)
class Absent:
    """Neither an object nor a LeaderWorkerSet with the name; `others`, the sets the namespace
    does hold (stored or deployed with -f), for the message."""

    name: str
    namespace: str
    others: tuple[str, ...]


NamedSet = Stored | DeployedWithFiles | Absent


def find_set(cluster: StoredSets, name: str, namespace: str) -> NamedSet:
    """The set `name` in `namespace`: one GET when it is stored; else one LIST of its
    LeaderWorkerSets by label; else the namespace's sets (two LISTs) to name them."""
    stored = cluster.stored_set(name, namespace)
    if stored is not None:
        return Stored(stored)
    lws = cluster.snapshot(name, namespace, services=False).lws
    if lws:
        return DeployedWithFiles(name, namespace, tuple(lws))
    return Absent(name, namespace, tuple(cluster.set_names(namespace)))
