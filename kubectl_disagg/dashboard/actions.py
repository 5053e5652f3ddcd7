"""The page's actions: `rollout promote|pause|resume|abort|retry` through the CLI's own library
(rollout/verbs.py `run_verb`) over the store the command hands in (the cluster's), so that who
acted, when and why are recorded exactly as the verb records them: in the RolloutState's
position and an Event. Each needs a reason, and is guarded by the resourceVersion of the
RolloutState the page showed: a position that has moved since is refused (409), not acted on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.change import PositionChange
from kubectl_disagg.dashboard.hub import Hub
from kubectl_disagg.dashboard.looks import stored_sets
from kubectl_disagg.dashboard.server import Act, Answer
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.rollout.store import PositionStore
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.views.dashboard import VERBS, ActionWords, changed_since

StoreFor = Callable[[DisaggregatedSet, str], PositionStore]  # the set and its namespace → its store


class Guarded:
    """A store whose decisions must start from the RolloutState the page showed (`shown`, its
    resourceVersion; "" for none): a position read at another is a `Conflict`. The write is
    pinned to the version read, so nothing between the read and the write is lost either."""

    def __init__(self, store: PositionStore, shown: str):
        self.store, self.shown = store, shown
        self.together = store.together

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def change(self, ds: DisaggregatedSet, namespace: str, change: Any, now: Any) -> PositionChange:
        decided = self.store.change(ds, namespace, change, now)
        read = str(((decided.written or {}).get("metadata") or {}).get("resourceVersion") or "")
        if read != self.shown:
            raise Conflict(changed_since(decided.where, self.shown, read))
        return decided

    def write(self, changes: Sequence[PositionChange]) -> list[PositionChange]:
        written = self.store.write(changes)
        self.shown = str(((written[-1].written or {}).get("metadata") or {}).get("resourceVersion") or "") \
            if written else self.shown
        return written


def actions(hub: Hub, store_for: StoreFor, clock: Clock = SYSTEM_CLOCK) -> Act:
    def act(namespace: str, name: str, verb: str, reason: str, state_version: str) -> Answer:
        if verb not in VERBS:
            return Answer(400, f"unknown action {verb!r}")
        if not reason.strip():
            return Answer(400, f"{verb} needs a reason: it is recorded with who acted")
        found = next((ds for ds, ns, n, _ in stored_sets(hub) if (ns, n) == (namespace, name) and ds), None)
        if found is None:
            return Answer(404, f"disaggregatedset/{name} not found in namespace {namespace}")
        words = ActionWords()
        try:
            run_verb(Guarded(store_for(found, namespace), state_version), verb, words,
                     reason=reason.strip(), clock=clock)
        except UserError as err:
            return Answer(400, str(err))
        status = 409 if words.conflict else 422 if words.refusal else 400 if words.failed else 200
        return Answer(status, "\n".join(words.lines))
    return act
