"""What the dashboard sees of each set, from the hub's objects alone (no request per look).

In the cluster's mode, the sets are the DisaggregatedSet objects the namespace stores (each with
the RolloutPolicy that names it), and each is looked at as `rollout status` looks at it
(rollout/status.py): its status derived from the live LWS, and under a policy the decision a
step would take now (`admit`, read only: the dashboard writes nothing when it looks, not even
the completion a status records). Through git (`--gitops -f DIR`), the sets of the directory,
each judged by the git store's look (rollout/git_status.py `GitLooks`) against the cluster's
objects the hub holds: the committed position beside the cluster's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.delivery.history import entries, history_of
from kubectl_disagg.core.delivery.policy import policy_from_object
from kubectl_disagg.core.delivery.rollout_status import rollout_status
from kubectl_disagg.core.delivery.sets import set_from_object
from kubectl_disagg.core.delivery.status import derive_status
from kubectl_disagg.core.delivery.waves import admit
from kubectl_disagg.dashboard.hub import CachedCluster, Hub
from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client import DISAGGREGATED_SET, EVENT, ROLLOUT_STATE
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.rollout.progressive import ROLLOUT_POLICY, position_lines, recorded_position
from kubectl_disagg.views.dashboard import SetLook

Looks = Callable[[], list[SetLook]]


def stored_sets(hub: Hub) -> list[tuple[DisaggregatedSet | None, str, str, str]]:
    """Each stored set (None where it does not load: the last string says why) with its
    namespace and name, under the RolloutPolicy that names it."""
    policies: dict[tuple[str, str], list[JsonObject]] = {}
    for obj in hub.objects(ROLLOUT_POLICY.kind):
        target = ((obj.get("spec") or {}).get("targetRef") or {}).get("name")
        policies.setdefault((obj["metadata"].get("namespace", ""), str(target)), []).append(obj)
    out: list[tuple[DisaggregatedSet | None, str, str, str]] = []
    for obj in hub.objects(DISAGGREGATED_SET.kind):
        namespace, name = obj["metadata"].get("namespace", ""), obj["metadata"].get("name", "")
        try:
            ds = set_from_object(obj)
            mine = policies.get((namespace, name), [])
            if len(mine) > 1:
                raise UserError(f"more than one RolloutPolicy names it ({len(mine)}); a set has at most one")
            if mine:
                policy, problems = policy_from_object(mine[0])
                if problems:
                    raise UserError(problems)
                ds = replace(ds, policy=policy)
            out.append((ds, namespace, name, ""))
        except UserError as err:
            out.append((None, namespace, name, str(err)))
    return out


def cluster_looks(hub: Hub, cluster: CachedCluster, clock: Clock = SYSTEM_CLOCK) -> Looks:
    def looks() -> list[SetLook]:
        events = _events_by_set(hub)
        return [look_at(cluster, ds, namespace, clock, events.get((namespace, name), ()))
                if ds is not None else SetLook(name, namespace, None, problem=why)
                for ds, namespace, name, why in stored_sets(hub)]
    return looks


def look_at(cluster: CachedCluster, ds: DisaggregatedSet, namespace: str, clock: Clock,
            events: Sequence[JsonObject] = ()) -> SetLook:
    """One set as `rollout status` derives it, read only."""
    try:
        snapshot = cluster.snapshot(ds.name, namespace)
        stored = cluster.rollout_state(ds.name, namespace) if ds.policy is not None else None
        if ds.policy is None:
            status = derive_status(ds, snapshot, reconcile(ds, snapshot))
            budget = None
        else:
            passage = admit(ds, snapshot, recorded_position(stored, ds), clock.now())
            status = derive_status(ds, snapshot, reconcile(passage.reconciled, snapshot, passage.admission))
            status = replace(status, rollout=position_lines(passage.decision),
                             paced=rollout_status(passage.decision))
            budget = passage.decision.budget
        return SetLook(ds.name, namespace, status, snapshot.lws, tuple(role.name for role in ds.roles), budget,
                       tuple(entries(history_of(stored))), tuple(events),
                       str(((stored or {}).get("metadata") or {}).get("resourceVersion") or ""))
    except (UserError, KeyError, TypeError, ValueError) as err:  # an object the look cannot read: said, not fatal
        return SetLook(ds.name, namespace, None, problem=str(err) or type(err).__name__)


def _events_by_set(hub: Hub) -> dict[tuple[str, str], list[JsonObject]]:
    """The Events regarding a set, its RolloutState or one of its LWS (named `<set>-...`)."""
    names = {(obj["metadata"].get("namespace", ""), obj["metadata"].get("name", ""))
             for obj in hub.objects(DISAGGREGATED_SET.kind)}
    out: dict[tuple[str, str], list[JsonObject]] = {}
    for event in hub.objects(EVENT.kind):
        regarding = event.get("regarding") or event.get("involvedObject") or {}
        namespace, name = str(regarding.get("namespace") or ""), str(regarding.get("name") or "")
        if regarding.get("kind") in (DISAGGREGATED_SET.kind, ROLLOUT_STATE.kind) and (namespace, name) in names:
            out.setdefault((namespace, name), []).append(event)
        else:
            owner = next((key for key in names if key[0] == namespace and name.startswith(key[1] + "-")), None)
            if owner is not None:
                out.setdefault(owner, []).append(event)
    return out


def git_looks(hub: Hub, cluster: CachedCluster, load: Callable[[], object], commands: Callable[[str, str], dict[str, str]],
              clock: Clock = SYSTEM_CLOCK) -> Looks:
    """Through git: `load()` the directory (read again at each look: a commit moves the position),
    each set judged against the cluster's objects the hub holds (rollout/git_status.py)."""
    from kubectl_disagg.rollout.git_status import GitLooks

    def looks() -> list[SetLook]:
        try:
            directory = load()
        except UserError as err:  # a file edited into an invalid one meanwhile: the page says so
            return [SetLook("(the directory)", "", None, problem=str(err))]
        seen = GitLooks(cluster, directory, clock).look()  # type: ignore[arg-type]
        out = []
        for entry, one in zip(directory.sets, seen, strict=True):  # type: ignore[attr-defined]
            ds, report = entry.ds, one.report
            snapshot = cluster.snapshot(ds.name, entry.namespace, services=False)
            budget = ds.policy.budget(len(report.slices)) if ds.policy is not None else None
            out.append(SetLook(ds.name, entry.namespace, report, snapshot.lws,
                               tuple(role.name for role in ds.roles), budget,
                               commands=commands(ds.name, entry.namespace)))
        return out
    return looks
