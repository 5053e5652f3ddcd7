"""What an autoscaler in the directory may target when its set is driven through git. Pure.

A RoleScaler (`DisaggregatedSetRoleScaler <set>-<role>`, docs/autoscaling.md) is created by the
upstream controller or by `rollout step` against the cluster. When a set is driven through git
neither runs, so nothing creates it: an autoscaler whose `scaleTargetRef` names one (a
HorizontalPodAutoscaler, a KEDA ScaledObject, anything with `spec.scaleTargetRef`) would find
nothing to scale and say so only in its own events. `render` and `cmp generate` refuse such a
document, naming what to target instead: the role's LeaderWorkerSet that the autoscaler owns
(docs/autoscaling.md, "Driven through git").
"""

from __future__ import annotations

from collections.abc import Iterable

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DEFAULT_NAMESPACE, DisaggregatedSet
from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests.source import Document, JsonObject

TARGET_PATH = ("spec", "scaleTargetRef")
LwsKey = tuple[str | None, str | None, str | None]  # an LWS's namespace, set label, role label (None: not set)


def scaler_targets(git_sets: Iterable[tuple[DisaggregatedSet, str]], passed: Iterable[Document],
                   rendered: Iterable[JsonObject], namespace: str | None = None) -> list[Problem]:
    """Documents passed through whose `spec.scaleTargetRef` names the RoleScaler of a set driven
    through git. `git_sets`: (set, its namespace) of every set rendered from a rollout state;
    `rendered`: the objects rendered (where the LWS to target instead is found); `namespace`:
    where a document without one lands (-n, or the Application's destination)."""
    scalers = {(ns, naming.scaler_name(ds.name, role.name)): (ds, role.name)
               for ds, ns in git_sets for role in ds.roles}
    if not scalers:
        return []
    owned = _autoscaled_lws(rendered)
    problems = []
    for document in passed:
        data = document.data
        spec = data.get("spec") if isinstance(data, dict) else None
        ref = spec.get("scaleTargetRef") if isinstance(spec, dict) else None
        if not isinstance(ref, dict) or ref.get("kind") != naming.SCALER_KIND:
            continue
        metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        where = metadata.get("namespace") or namespace or DEFAULT_NAMESPACE
        name = ref.get("name")
        found = scalers.get((where, name)) if isinstance(name, str) else None  # (no other name is a scaler's)
        if found is None:
            continue
        ds, role = found
        instead = owned.get((where, ds.name, role))
        what = (f"target the LeaderWorkerSet {instead} (the one whose size the autoscaler owns now)" if instead
                else "target the role's LeaderWorkerSet once the rollout has handed the role back")
        problems.append(Problem(
            document.file, document.line(TARGET_PATH), "spec.scaleTargetRef",
            f"{data.get('kind')} {where}/{metadata.get('name')} targets {naming.SCALER_KIND} {ref.get('name')}, "
            f"which nothing creates while disaggregatedset/{ds.name} is driven through git (no controller, no "
            f"`rollout step` against the cluster): {what}; see docs/autoscaling.md"))
    return problems


def _autoscaled_lws(rendered: Iterable[JsonObject]) -> dict[LwsKey, str | None]:
    """(namespace, set, role) → the name of the LWS rendered for the autoscaler to own."""
    owned: dict[LwsKey, str | None] = {}
    for obj in rendered:
        metadata = obj.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        if obj.get("kind") != naming.LWS_KIND or \
                annotations.get(naming.REPLICAS_OWNER_ANNOTATION) != naming.REPLICAS_OWNER_AUTOSCALER:
            continue
        labels = metadata.get("labels") or {}
        owned.setdefault((metadata.get("namespace"), labels.get(naming.NAME_LABEL), labels.get(naming.ROLE_LABEL)),
                         metadata.get("name"))
    return owned
