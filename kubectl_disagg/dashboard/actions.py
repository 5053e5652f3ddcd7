"""The page's actions: `rollout promote|pause|resume|abort|retry` through the CLI's own library
(rollout/verbs.py `run_verb`) over the store the command hands in (the cluster's), so that who
acted, when and why are recorded exactly as the verb records them: in the RolloutState's
position and an Event. Each needs a reason, and is guarded by the resourceVersion of the
RolloutState the page showed: a position that has moved since is refused (409), not acted on.

`undo` writes the revision before the current one (not aborted; core/delivery/undo.py's default,
as `rollout undo NAME` picks it) back into the stored set's templates: one JSON patch guarded by
the set's own `test` operations, so a set changed since it was read is refused, never
overwritten. The rollout back is then paced by `rollout step` like any other, and its history
entry names who started it (the user the step's API server sees), as after `rollout undo`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.api.template_edit import json_patch
from kubectl_disagg.core.delivery.change import PositionChange
from kubectl_disagg.core.delivery.sets import set_from_object
from kubectl_disagg.core.delivery.undo import undo_edits
from kubectl_disagg.dashboard.hub import Hub
from kubectl_disagg.dashboard.looks import stored_sets
from kubectl_disagg.dashboard.server import Act, Answer
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.kube.client import DISAGGREGATED_SET, ROLLOUT_STATE
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.rollout.history import undo_targets
from kubectl_disagg.rollout.store import PositionStore
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.views.dashboard import UNDO, VERBS, ActionWords, changed_since, undo_words
from kubectl_disagg.views.history import undo_refusal

StoreFor = Callable[[DisaggregatedSet, str], PositionStore]  # the set and its namespace → its store
PatchSet = Callable[[str, str, list[JsonObject]], None]  # name, namespace, a guarded JSON patch of the stored set


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


def actions(hub: Hub, store_for: StoreFor, patch_set: PatchSet, clock: Clock = SYSTEM_CLOCK) -> Act:
    def act(namespace: str, name: str, verb: str, reason: str, state_version: str) -> Answer:
        if verb == UNDO and reason.strip():
            return _undo(hub, store_for, patch_set, namespace, name, state_version)
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


def _undo(hub: Hub, store_for: StoreFor, patch_set: PatchSet, namespace: str, name: str,
          state_version: str) -> Answer:
    """`rollout undo NAME`: the revision before written back, from the stored set as the hub holds it."""
    stored = next((obj for obj in hub.objects(DISAGGREGATED_SET.kind)
                   if (obj["metadata"].get("namespace"), obj["metadata"].get("name")) == (namespace, name)), None)
    if stored is None:
        return Answer(404, f"disaggregatedset/{name} not found in namespace {namespace}")
    shown = str(((hub_state(hub, namespace, name) or {}).get("metadata") or {}).get("resourceVersion") or "")
    if shown != state_version:
        return Answer(409, changed_since(f"rolloutstate/{name}", state_version, shown))
    try:
        target = undo_targets(store_for(set_from_object(stored), namespace), None)[name]
        if target.templates is None:
            return Answer(422, f"revision {target.revision} has no templates recorded to write back")
        edits, refusals = undo_edits(stored, target.templates, whole=True)
        if refusals:
            return Answer(422, "\n".join(undo_refusal(why) for _, why in refusals))
        patch_set(name, namespace, json_patch(stored, edits))
    except Conflict as err:
        return Answer(409, str(err))
    except UserError as err:
        return Answer(409 if "409" in str(err) else 400, str(err))
    return Answer(200, undo_words(name, namespace, target.revision))


def hub_state(hub: Hub, namespace: str, name: str) -> JsonObject | None:
    return next((obj for obj in hub.objects(ROLLOUT_STATE.kind)
                 if (obj["metadata"].get("namespace"), obj["metadata"].get("name")) == (namespace, name)), None)
