"""The rollout state as an object Argo CD shows (issue: where a git rollout stands). Pure.

Where the destination cluster serves the kind (`KUBE_API_VERSIONS` names `SERVED_RESOURCE`),
`cmp generate` emits each set's state beside its LeaderWorkerSets: the state document as it is
in git, plus a `rollout` summary written from the same data (rollout/served.py `served_object`
words it), which the Lua health check
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

from kubectl_disagg.core.api import naming
from kubectl_disagg.gitops.state import RolloutState, state_document

SERVED_RESOURCE = f"{naming.PLUGIN_API_VERSION}/{naming.STATE_KIND}"
# What the API server and Argo CD add to the object, the summary written from the rest, and the
# history a cluster `rollout step` kept there before the set moved to git (never in the file).
_NOT_THE_DOCUMENT = frozenset({"apiVersion", "kind", "metadata", "status", "rollout", "history",
                               "revisionHistoryLimit"})


def served(kube_api_versions: str | None) -> bool:
    return kube_api_versions is not None and SERVED_RESOURCE in {p.strip() for p in kube_api_versions.split(",")}


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
