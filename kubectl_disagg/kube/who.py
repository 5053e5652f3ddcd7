"""Who acts, as a position or a history entry records it (`by`): the user the API server sees,
or git's author; else the local user name."""

from __future__ import annotations

import getpass
import json
import weakref
from collections.abc import Callable

from kubectl_disagg.kube.seam import ClusterSession

SELF_SUBJECT_REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"

_ASKED: weakref.WeakKeyDictionary[ClusterSession, str] = weakref.WeakKeyDictionary()  # session → who it acts as


def acting_user(asked: Callable[[], str | None]) -> str:
    """Who acts: what the store's authority says (`asked`: the API server, git), else the local
    user name, else "unknown". Asking is a courtesy: the verb goes on without an answer."""
    try:
        name = asked()
    except Exception:  # noqa: BLE001 (who did it is a courtesy; the verb goes on without it)
        name = None
    if name:
        return name
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def self_subject(cluster: ClusterSession) -> str | None:
    """The user the API server sees (a SelfSubjectReview: --as, the kubeconfig's user)."""
    answer = cluster.client.send("POST", SELF_SUBJECT_REVIEW, body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, repeatable=True)
    name = json.loads(answer.data)["status"]["userInfo"]["username"]
    return name if isinstance(name, str) else None


def cluster_user(cluster: ClusterSession) -> str:
    """Who acts through this session with the API server (`acting_user` of `self_subject`),
    asked once a session however many stores and steps ask."""
    name = _ASKED.get(cluster)
    if name is None:
        name = _ASKED[cluster] = acting_user(lambda: self_subject(cluster))
    return name
