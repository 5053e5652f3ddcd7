"""The StatefulSets the LWS controller makes of a rendered LeaderWorkerSet, for the API server
to judge.

An LWS is accepted on its CRD's schema alone; the pod validation its templates must pass runs
only when the LWS controller creates a StatefulSet of each (the leader's of `leaderTemplate`,
else of `workerTemplate`; each group's workers of `workerTemplate`). `validate --server` sends
these as dry runs, so the server's own pod and StatefulSet validation judges every template a
set renders. Shaped as the controller shapes them (names, selector labels, parallel pod
management, the LWS's claim templates); the labels and environment it adds per pod change no
verdict and are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.render import deep_copy, deep_copy_object
from kubectl_disagg.manifests.source import JsonObject

LEADER, WORKERS = "leader", "workers"


def statefulsets(lws: Mapping[str, Any]) -> list[JsonObject]:
    """The leader StatefulSet of `lws` and, when its groups have workers, the first group's."""
    lws_template = lws["spec"].get("leaderWorkerTemplate") or {}
    leader_template = lws_template.get("leaderTemplate")
    made = [_statefulset(lws, lws["metadata"]["name"],
                         leader_template if leader_template is not None else lws_template.get("workerTemplate"),
                         {naming.WORKER_INDEX_LABEL: "0"})]
    if (lws_template.get("size") or 1) > 1:
        made.append(_statefulset(lws, f"{lws['metadata']['name']}-0", lws_template.get("workerTemplate"),
                                 {naming.GROUP_INDEX_LABEL: "0"}))
    return made


def template_of(statefulset: Mapping[str, Any], role_template: Mapping[str, Any]) -> str:
    """Which of the role's templates (`leaderTemplate`, `workerTemplate`) a StatefulSet of
    `statefulsets` was made of: the leader's is selected by worker index 0."""
    selector = ((statefulset.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if naming.WORKER_INDEX_LABEL in selector and role_template.get("leaderTemplate") is not None:
        return "leaderTemplate"
    return "workerTemplate"


def _statefulset(lws: Mapping[str, Any], name: str, pod_template: Mapping[str, Any] | None,
                 selector: JsonObject) -> JsonObject:
    template = deep_copy_object(pod_template) if pod_template is not None else {}
    selector = {naming.LWS_NAME_LABEL: lws["metadata"]["name"], **selector}
    metadata = template.get("metadata") or {}
    metadata["labels"] = {**(metadata.get("labels") or {}), **selector}
    template["metadata"] = metadata
    spec: JsonObject = {"replicas": 1, "serviceName": lws["metadata"]["name"], "podManagementPolicy": "Parallel",
                  "selector": {"matchLabels": selector}, "template": template}
    claims = (lws["spec"].get("leaderWorkerTemplate") or {}).get("volumeClaimTemplates")
    if claims:
        spec["volumeClaimTemplates"] = deep_copy(claims)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": lws["metadata"]["namespace"],
                         "labels": dict(lws["metadata"].get("labels") or {})},
            "spec": spec}
