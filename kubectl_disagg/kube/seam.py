"""The session seam: what the code above `kube/` calls on a command's session with the API server.

`Session` (and `executor.ClusterExecutor`, a session that also writes) is what a command opens;
`rollout/`, the git store and `kube/named_set` take it as one of these Protocols, each the
reads or writes one caller makes, so a test double (tests/fakes/cluster.py) stands in for it
and the type checker, not a name list, holds it to the same signatures (tests/unit/
test_seams.py). Protocols only: no behaviour lives here.
"""

from __future__ import annotations

from typing import Protocol

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.kube.client import RestClient
from kubectl_disagg.manifests.source import JsonObject


class ClusterReads(Protocol):
    """A set's live objects and its RolloutState, and the wait for their next change: what a
    rollout step, status and plan read, and what the git store observes of the cluster."""

    @property
    def default_namespace(self) -> str:
        """The kubeconfig context's namespace: where a set that names none is looked for."""

    def snapshot(self, set_name: str, namespace: str, services: bool = True, scalers: bool = False) -> Snapshot: ...

    def rollout_state(self, set_name: str, namespace: str) -> JsonObject | None: ...

    def wait_for_change(self, set_name: str, namespace: str, resource_version: str, timeout: float,
                        kind: str = naming.LWS_KIND, state_version: str | None = None) -> bool: ...


class ClusterSession(ClusterReads, Protocol):
    """Those reads, and the API client under them for the requests they do not make (the
    RolloutPolicy and RolloutState writes, a SelfSubjectReview, Prometheus through a proxy)."""

    @property
    def client(self) -> RestClient: ...


class StoredSets(Protocol):

    """The DisaggregatedSet objects stored in the cluster, and the LWS a set deployed with -f
    runs: what finds a set by name (`named_set.find_set`) and what a hand-over starts from."""

    def get_set(self, name: str, namespace: str) -> JsonObject: ...

    def stored_set(self, name: str, namespace: str) -> JsonObject | None: ...

    def set_names(self, namespace: str) -> list[str]: ...

    def snapshot(self, set_name: str, namespace: str, services: bool = True, scalers: bool = False) -> Snapshot: ...


class SetPatches(Protocol):
    """The stored set read and patched, one JSON patch guarded by its resourceVersion: what
    `set image`, `rollout restart` and `rollout undo` do to NAME (`commands/_template_edit`)."""

    @property
    def default_namespace(self) -> str:
        """The kubeconfig context's namespace: where a set that names none is looked for."""

    def get_set(self, name: str, namespace: str) -> JsonObject: ...

    def patch_set(self, name: str, namespace: str, operations: list[JsonObject], *, dry_run: bool = False) -> None: ...


class EventRecorder(Protocol):
    """Where a rollout's Events are created (`rollout/events.record_events`)."""

    def record_event(self, event: JsonObject) -> None: ...


class PacingSession(ClusterSession, EventRecorder, Protocol):
    """A paced pass's session (`rollout/progressive.Progressive`): the reads, the RolloutState
    written through the client, and the decision's Events."""


class HandoverWrites(Protocol):
    """The writes of a hand-over (`rollout/handover.carry_out`): pinned patches of the set's
    objects, and the stored set deleted with its objects orphaned."""

    def patch_object(self, kind: str, namespace: str, name: str, operations: list[JsonObject]) -> None: ...

    def orphan_set(self, stored: JsonObject, timeout: float | None) -> None: ...
