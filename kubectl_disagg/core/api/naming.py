"""Identity of rendered objects (design §2): kinds, API versions, names, labels and annotations,
each spelled here once (the revision: revision.py); and a set of slices as every message names it.
"""

from __future__ import annotations

from collections.abc import Sequence

LABEL_PREFIX = "disaggregatedset.x-k8s.io/"
NAME_LABEL = LABEL_PREFIX + "name"
ROLE_LABEL = LABEL_PREFIX + "role"
SLICE_LABEL = LABEL_PREFIX + "slice"
REVISION_LABEL = LABEL_PREFIX + "revision"
INITIAL_REPLICAS_ANNOTATION = LABEL_PREFIX + "initial-replicas"
APP_LABEL = "app"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
# The LWS controller's own labels and annotations.
LWS_PREFIX = "leaderworkerset.sigs.k8s.io/"
WORKER_INDEX_LABEL = LWS_PREFIX + "worker-index"  # set by the LWS controller; 0 on leaders
LWS_NAME_LABEL = LWS_PREFIX + "name"
GROUP_INDEX_LABEL = LWS_PREFIX + "group-index"
EXCLUSIVE_TOPOLOGY_ANNOTATIONS = (LWS_PREFIX + "exclusive-topology", LWS_PREFIX + "subgroup-exclusive-topology")
MANAGER = "kubectl-disagg"
# Stamped by the Argo CD plugin on what it renders (argocd/contract.py): the commit, not the object.
SOURCE_REVISION_ANNOTATION = "kubectl-disagg/source-revision"
# On an External role's LWS in a git-driven render: its spec.replicas is the autoscaler's, not the
# state's (docs/autoscaling.md: Argo CD's ignoreDifferences selects on it).
REPLICAS_OWNER_ANNOTATION = "kubectl-disagg/replicas-owner"
# On a DisaggregatedSet: "false" leaves its per-revision `-prv` Services out of every render, pass
# and status (as `render --no-revision-services`), so git, Argo CD and the terminal agree (design §3).
REVISION_SERVICES_ANNOTATION = "kubectl-disagg/revision-services"
REPLICAS_OWNER_AUTOSCALER = "autoscaler"
# The one state between a rollout's end and `autoscaler`: still the state's size in the render, the
# autoscaler's on a live object already carrying it (docs/gitops.md "Handing a size back").
REPLICAS_OWNER_HANDING_BACK = "handing-back"
# What Argo CD itself adds to the objects it syncs (its tracking label and annotations).
ARGOCD_TRACKING_LABEL = "app.kubernetes.io/instance"
ARGOCD_PREFIX = "argocd.argoproj.io/"

SET_GROUP = "disaggregatedset.x-k8s.io"  # whose ownerReferences mark the controller's objects
SET_VERSION = "v1"
SET_API_VERSION = f"{SET_GROUP}/{SET_VERSION}"
SET_KIND = "DisaggregatedSet"
SCALER_KIND = "DisaggregatedSetRoleScaler"

LWS_GROUP = "leaderworkerset.x-k8s.io"
LWS_VERSION = "v1"
LWS_API_VERSION = f"{LWS_GROUP}/{LWS_VERSION}"
LWS_KIND = "LeaderWorkerSet"
SERVICE_KIND = "Service"

# The project's own kinds (config/crd/): a set's RolloutPolicy and a git rollout's RolloutState.
PLUGIN_GROUP = "kubectl-disagg.x-k8s.io"
PLUGIN_VERSION = "v1alpha1"
PLUGIN_API_VERSION = f"{PLUGIN_GROUP}/{PLUGIN_VERSION}"
POLICY_KIND = "RolloutPolicy"
STATE_KIND = "RolloutState"
STATE_FILE = "disagg-rollout-state.yaml"  # beside the sets, one RolloutState document per set

REVISION_LENGTH = 8
SERVICE_SUFFIX = "-prv"
MAX_NAME_LENGTH = 63


def lws_name(set_name: str, slice_index: int, revision_: str, role: str) -> str:
    return f"{set_name}-{slice_index}-{revision_}-{role}"


def service_name(set_name: str, slice_index: int, revision_: str, role: str) -> str:
    return lws_name(set_name, slice_index, revision_, role) + SERVICE_SUFFIX


def longest_name_length(set_name: str, slices: int, role: str) -> int:
    """Length of the longest generated name (the Service of the highest slice)."""
    return len(set_name) + 3 + len(str(max(slices - 1, 0))) + REVISION_LENGTH + len(role) + len(SERVICE_SUFFIX)


def selector_labels(set_name: str, slice_index: int, revision_: str, role: str) -> dict[str, str]:
    """The labels that identify one LWS's pods: also the Service selector."""
    return {
        NAME_LABEL: set_name,
        ROLE_LABEL: role,
        SLICE_LABEL: str(slice_index),
        REVISION_LABEL: revision_,
    }


def pod_labels(set_name: str, slice_index: int, revision_: str, role: str) -> dict[str, str]:
    """System labels injected into every pod template; they win over the template's own."""
    labels = selector_labels(set_name, slice_index, revision_, role)
    labels[APP_LABEL] = f"{set_name}-{slice_index}-{role}"
    return labels


def lws_labels(set_name: str, slice_index: int, revision_: str, role: str) -> dict[str, str]:
    labels = pod_labels(set_name, slice_index, revision_, role)
    labels[MANAGED_BY_LABEL] = MANAGER
    return labels


def service_labels(set_name: str, slice_index: int, revision_: str, role: str) -> dict[str, str]:
    labels = selector_labels(set_name, slice_index, revision_, role)
    labels[MANAGED_BY_LABEL] = MANAGER
    return labels


def scaler_name(set_name: str, role: str) -> str:
    """The RoleScaler of an External role: a stable name for an autoscaler to target."""
    return f"{set_name}-{role}"


def spans(slices: Sequence[int]) -> str:
    """`0`, `0-2`, `0-2, 5, 7-11`: ascending slice numbers, runs joined."""
    runs: list[list[int]] = []
    for s in sorted(slices):
        if runs and s == runs[-1][-1] + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def slices_words(slices: Sequence[int]) -> str:
    """`slice 3`, `slices 0-2, 5`: the one way every message names a set of slices."""
    return f"slice {slices[0]}" if len(slices) == 1 else f"slices {spans(slices)}"

