"""The rollout state as an object Argo CD shows (issue: where a git rollout stands). Pure.

Where the destination cluster serves the kind (`KUBE_API_VERSIONS` names `SERVED_RESOURCE`),
`cmp generate` emits each set's state beside its LeaderWorkerSets: the state document as it is
in git, plus a `rollout` summary written from the same data, which the Lua health check
(argocd/resource_customizations/kubectl-disagg.x-k8s.io/RolloutState) turns into Healthy at
rest and Suspended mid-rollout, and the kind's printer columns (config/crd/rolloutstates.yaml,
generated from hack/crd/api/rolloutstate) show:

    rollout:
      set: llama                  # the set (the object is named after it too)
      revision: 7b04d5c1          # the set's revision (the rollout's target)
      step: 2/4                   # the committed step i/N of the rolling slices (the distinct ones,
                                  # comma-separated, in slice order); absent at rest
      phase: Rolling              # AtRest | Rolling
      message: "llama: slice 0 step 2 of 4 (old/new: prefill 1/2, decode 1/1); next: rollout step --gitops"

Where Argo CD applied the object, `rollout step --gitops` and `rollout status --gitops` read it
back (`served_differences`): the cluster shows the commit only when the object is the
committed document, besides the LWS being what it renders to.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.api import naming
from kubectl_disagg.gitops.state import RolloutState, state_document
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.gitops.position import committed_position
from kubectl_disagg.gitops.waves import paced_summary

SERVED_RESOURCE = f"{naming.PLUGIN_API_VERSION}/{naming.STATE_KIND}"
AT_REST, ROLLING = "AtRest", "Rolling"
NEXT = "rollout step --gitops"
# What the API server and Argo CD add to the object, the summary written from the rest, and the
# history a cluster `rollout step` kept there before the set moved to git (never in the file).
_NOT_THE_DOCUMENT = frozenset({"apiVersion", "kind", "metadata", "status", "rollout", "history",
                               "revisionHistoryLimit"})


def served(kube_api_versions: str | None) -> bool:
    return kube_api_versions is not None and SERVED_RESOURCE in {p.strip() for p in kube_api_versions.split(",")}


def served_object(ds: DisaggregatedSet, state: RolloutState) -> JsonObject:
    document = state_document(state)
    document["rollout"] = summary(ds, state)
    return document


def summary(ds: DisaggregatedSet, state: RolloutState) -> JsonObject:
    """Phase and a one-line message: per run of slices alike, the step and the old/new counts
    per role (`old/new: prefill 1/2`, as the step report writes them; `→` always reads before → after)."""
    runs: list[list[int | str]] = []  # [first, last, text]
    steps: list[str] = []  # the distinct "i/N" of the rolling slices, in slice order
    for slice_index in range(ds.slices):
        deployed = state.deployed(slice_index)
        if set(deployed) <= {ds.revision}:
            continue
        position = committed_position(ds, state, slice_index)
        counts = []
        for role in ds.role_names:
            old = sum(c.get(role, 0) for rev, c in deployed.items() if rev != ds.revision)
            new = deployed.get(ds.revision, {}).get(role, 0)
            counts.append(f"{role} {old}/{new}")
        where = f"step {position[0]} of {position[1]}" if position else "off the plan"
        step = f"{position[0]}/{position[1]}" if position else "?"
        if step not in steps:
            steps.append(step)
        text = f"{where} (old/new: {', '.join(counts)})"
        if runs and runs[-1][2] == text and runs[-1][1] == slice_index - 1:
            runs[-1][1] = slice_index
        else:
            runs.append([slice_index, slice_index, text])
    if not runs:
        return paced_summary(ds, state, {"set": ds.name, "revision": ds.revision, "phase": AT_REST,
                                         "message": f"{ds.name}: at rest at revision {ds.revision}"})
    parts = [f"{'slice ' + str(first) if first == last else f'slices {first}-{last}'} {text}"
             for first, last, text in runs]
    return paced_summary(ds, state, {"set": ds.name, "revision": ds.revision, "step": ",".join(steps),
                                     "phase": ROLLING, "message": f"{ds.name}: {'; '.join(parts)}; next: {NEXT}"})


def served_differences(state: RolloutState, live: Mapping[str, object] | None) -> list[str]:
    """Where the live RolloutState object differs from the committed state: `rollout step
    --gitops` tells "synced" exactly by it (the same document as in git), besides the LWS.

    `live` is None where the cluster does not serve the kind or holds no object for the set (it
    is not deployed by Argo CD, or not yet): the LWS checks alone then tell, as before.
    """
    if live is None:
        return []
    committed = state_document(state)
    fields = sorted(key for key in set(committed) | set(live)
                    if key not in _NOT_THE_DOCUMENT and live.get(key) != committed.get(key))
    if not fields:
        return []
    return [f"rolloutstate/{state.name}: live {', '.join(fields)} differ from the committed state (not synced)"]
