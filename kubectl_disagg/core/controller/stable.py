"""The stable revision as a set, rebuilt from its live LeaderWorkerSets: what an abort rolls
back to (design §9.5). Pure.

After `rollout abort` the slices that have the new revision roll back "step by step with design §5's
arithmetic": a rollout toward the old revision, whose template is no longer in the set's
document. It is in the stable revision's LWS: each role's spec as stored (without replicas and
without what render injects per slice: the pod labels, which render writes again, and the
placement terms, which it adds again), its own labels and annotations. Targets are the set's
replicas for the roles it still has; a role only the stable revision has goes back to what it
ran before the rollout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet, Role
from kubectl_disagg.core.controller.render import deep_copy
from kubectl_disagg.core.controller.snapshot import LiveLWS, Snapshot
from kubectl_disagg.manifests.source import JsonObject

_OURS = (naming.INITIAL_REPLICAS_ANNOTATION, naming.REPLICAS_OWNER_ANNOTATION, naming.SOURCE_REVISION_ANNOTATION)


def stable_set(ds: DisaggregatedSet, snapshot: Snapshot, revision: str) -> DisaggregatedSet | None:
    """`ds` at `revision`, its roles rebuilt from that revision's live LWS (None when none is left)."""
    found: dict[str, list[LiveLWS]] = {}
    for obj in sorted(snapshot.lws, key=lambda o: o.identity.slice if o.identity.slice is not None else -1):
        placed = obj.identity.placed
        if obj.belongs_to(ds.name) and placed is not None and placed.revision == revision:
            found.setdefault(placed.role, []).append(obj)
    if not found:
        return None
    spec_order = {name: index for index, name in enumerate(ds.role_names)}
    roles = []
    for name in sorted(found, key=lambda r: (spec_order.get(r, len(spec_order)), r)):
        live = snapshot.objects.get((naming.LWS_KIND, found[name][0].name))
        if live is None:
            return None
        current = next((role for role in ds.roles if role.name == name), None)
        before = max(o.initial_replicas if o.initial_replicas is not None else o.replicas for o in found[name])
        roles.append(_role(name, live, current, before))
    return replace(ds, roles=tuple(roles), revision=revision)


def _role(name: str, live: Mapping[str, Any], current: Role | None, before: int) -> Role:
    metadata = live.get("metadata") or {}
    spec: JsonObject = {k: deep_copy(v) for k, v in (live.get("spec") or {}).items() if k != "replicas"}
    template = spec.get("leaderWorkerTemplate") or {}
    for key in ("workerTemplate", "leaderTemplate"):
        if isinstance(template.get(key), dict):
            _strip_placement(template[key])
    injected = set(naming.lws_labels("", 0, "", name))
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k not in injected}
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k not in _OURS}
    if current is not None:
        return replace(current, spec=spec, labels=labels, annotations=annotations)
    return Role(name, before, spec, labels, annotations)


def _strip_placement(template: JsonObject) -> None:
    """Take out the affinity terms render adds for a placement policy (they select on the set's
    name label): render adds them again for the slice it renders."""
    affinity = (template.get("spec") or {}).get("affinity")
    if not isinstance(affinity, dict):
        return
    for kind in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(kind)
        if not isinstance(section, dict):
            continue
        terms = [t for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
                 if not any(e.get("key") == naming.NAME_LABEL
                            for e in (t.get("labelSelector") or {}).get("matchExpressions") or [])]
        if terms:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = terms
        else:
            section.pop("requiredDuringSchedulingIgnoredDuringExecution", None)
        if not section:
            affinity.pop(kind)
    if not affinity:
        template["spec"].pop("affinity")
