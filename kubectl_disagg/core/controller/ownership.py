"""Working beside the upstream DisaggregatedSet controller: who runs a set. Pure.

The controller acts only on LWS and Services whose ownerReferences name the set as controller
(`controller: true`); kubectl-disagg acts only on those labelled managed-by kubectl-disagg.
Reading works for both (status and plan follow a controller-run set); stepping a set the
controller runs would fight it, so `rollout step` refuses:

- always, when any of the set's objects is owned by the controller (hand it over first);
- for a set stored in the cluster, when the stored object shows a controller reconciles it,
  unless told otherwise (`--ignore-controller`). The heuristic: only a controller writes a
  DisaggregatedSet's `status` (kubectl-disagg derives status and never stores it), so a
  stored set with `status.observedGeneration`, `conditions` or `roleStatuses` is, or was,
  reconciled by one. The LWS controller of LWS >= v0.9 runs the DisaggregatedSet controller
  unconditionally, and it writes status on its first pass over a set, seconds after it is
  stored; a set applied a moment ago may not show it yet (the ownerReferences check then
  catches the next step, once the controller has created anything).
"""

from __future__ import annotations

from typing import Any, Mapping

from kubectl_disagg.core.controller.snapshot import Snapshot


def controller_owned(set_name: str, snapshot: Snapshot) -> list[str]:
    """The set's objects the controller owns, as `kind/name`."""
    return [f"{o.kind.lower()}/{o.name}" for o in (*snapshot.lws, *snapshot.services)
            if o.owned_by_controller(set_name)]


def reconciled_by_controller(stored: Mapping[str, Any]) -> list[str]:
    """Signs in a stored DisaggregatedSet that a controller reconciles it (see the module doc):
    the fields of its status only a controller writes (views/stops.py `reconciled_sentence` words them)."""
    status = stored.get("status") or {}
    return [f"status.{key}" for key in ("observedGeneration", "conditions", "roleStatuses") if status.get(key)]
