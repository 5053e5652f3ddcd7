"""`rollout status` as one library call, over either store (design §9.8): the store's `looks`
says what it observes of each set (the cluster's: the live LWS and the RolloutState; git's: the
same live LWS, and the committed state against them, rollout/git_status.py `GitLooks`), this module hands
each look to the caller's view and, with `watch`, looks again on every change of what the look
names until every set has reached `until` (Available, or its rollout complete; without one,
through git, until some set's next action changes), or is still: held by its RolloutPolicy
where `rollout step` would be, or at an analysis gate that no running `rollout step` measures.
The `Outcome` says how it ended (`outcome.STATUS_EXIT`: the exit code, one table for both
stores). A cluster look that sees a set's rollout complete records it in the set's
RolloutState, as the step that observed it would (design §10.3: `progressive.record_complete`),
the one write a status makes.

How a look is printed is the caller's `format` (views/status.py, views/status_text.py): this
module makes no text.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api.model import DisaggregatedSet, namespace_for
from kubectl_disagg.core.api.naming import LWS_KIND, SERVICE_KIND
from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.delivery.status import NextAction, SetStatus, StatusLook, Until, Watched, derive_status
from kubectl_disagg.kube.seam import ClusterReads, PacingSession
from kubectl_disagg.core.delivery.outcome import Outcome, most_pressing
from kubectl_disagg.wait import NEVER, WATCH_SLICE_SECONDS, Deadline, until_settled

Format = Callable[[list[SetStatus], str], str]  # the reports and the time of the look → the text printed

# Through git, the outcome of a status is its next action's: what `rollout step --gitops` would come to.
NEXT_OUTCOME = {NextAction.STEP: Outcome.ADVANCED, NextAction.SYNC: Outcome.WAITING,
                NextAction.READY: Outcome.WAITING, NextAction.COMPLETE: Outcome.COMPLETE,
                NextAction.REFUSED: Outcome.REFUSED, NextAction.HELD: Outcome.HELD}


class StatusStore(Protocol):
    """What a store observes for `rollout status`. `look`: one look at every set; `most`: how
    long a watch between looks lasts at most; `until`: what -w waits for when --for does not
    say (None: until some set's next action changes)."""

    most: float
    until: Until | None

    def look(self) -> list[StatusLook]: ...


def watch_status(cluster: ClusterReads, store: StatusStore, format: Format, *, watch: bool = False,
                 deadline: Deadline = NEVER, write: Callable[[str], object] | None = None,
                 until: Until | None = None, held: Callable[[list[SetStatus]], object] | None = None) -> Outcome:
    """Report every set (`write(format(reports, now))`) at each look of `store`; with `watch`,
    look again on every change of what the first set still moving names (its LWS, its Services,
    its RolloutState), at most `store.most` seconds apart, until the look is settled or `deadline`
    passes (TIMEOUT). `until` (default `store.until`): what a settled look has reached. A set's
    outcome: its next action's through git (`NEXT_OUTCOME`), else AVAILABLE once it has reached
    `until`, NOT_AVAILABLE when not (without `watch`); after `watch`, a still set's is HELD, `held`
    told the reports of the still sets. The run's: its most pressing set's."""
    write = write or sys.stdout.write
    until = until if until is not None else store.until
    first: list[NextAction | None] = []

    def look() -> list[StatusLook]:
        seen = store.look()
        write(format([one.report for one in seen], deadline.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")))
        first[:] = first or [_next_action(one) for one in seen]
        return seen

    def pending(seen: Sequence[StatusLook]) -> list[StatusLook]:
        return [one for one in seen if until is None or not one.report.reached(until)]

    def settled(seen: Sequence[StatusLook]) -> bool:
        if not watch:
            return True
        if until is None:  # until the next action changes: only a commit changes a complete rollout's
            return (any(one.still for one in seen) or [_next_action(one) for one in seen] != first
                    or all(one.report.complete for one in seen))
        return all(one.still for one in pending(seen))

    def watch_first_moving(seen: Sequence[StatusLook], seconds: float) -> bool:
        waiting = pending(seen) or list(seen)
        name, namespace, resource_version, kind, state_version = next(
            (one for one in waiting if not one.still), waiting[0]).watched
        if state_version is None:
            return bool(cluster.wait_for_change(name, namespace, resource_version, timeout=seconds, kind=kind))
        return bool(cluster.wait_for_change(name, namespace, resource_version, timeout=seconds, kind=kind,
                                            state_version=state_version))

    seen: list[StatusLook] = []
    for seen in until_settled(look, settled, watch_first_moving, deadline, most=store.most):  # noqa: B007
        pass
    if not settled(seen):
        return Outcome.TIMEOUT
    reached = until or Until.AVAILABLE
    still = [one for one in seen if watch and one.still and (one.report.sync is not None
                                                             or not one.report.reached(reached))]
    outcomes = [_outcome(one, reached, one in still) for one in seen]
    if held is not None and still:
        held([one.report for one in still])
    return most_pressing(outcomes)


def _next_action(look: StatusLook) -> NextAction | None:
    sync = look.report.sync
    return None if sync is None else sync.next_action


def _outcome(look: StatusLook, until: Until, still: bool) -> Outcome:
    """One set's: HELD when -w ended at it still; through git its next action's; else whether
    it has reached `until`."""
    if still:
        return Outcome.HELD
    if look.report.sync is not None:
        return NEXT_OUTCOME[look.report.sync.next_action]
    return Outcome.AVAILABLE if look.report.reached(until) else Outcome.NOT_AVAILABLE


class ClusterLooks:
    """The cluster's store for `rollout status`: each set's live LWS (its Services), with a
    RolloutPolicy its RolloutState and the Lease of a running `rollout step`."""

    most = WATCH_SLICE_SECONDS
    until: Until | None = Until.AVAILABLE

    def __init__(self, cluster: PacingSession, sets: Sequence[DisaggregatedSet], namespace: str | None,
                 clock: Clock = SYSTEM_CLOCK):
        self.cluster, self.sets, self.namespace, self.clock = cluster, sets, namespace, clock

    def look(self) -> list[StatusLook]:
        return [_look(self.cluster, ds, namespace_for(ds, self.namespace, self.cluster.default_namespace), self.clock)
                for ds in self.sets]


@dataclass(frozen=True)
class _Paced:
    """A paced set's look: the RolloutState's resourceVersion as read, and whether a `rollout
    step` holds the set's Lease (asked only at an analysis gate without a verdict)."""

    state_version: str | None = None
    stepping: bool = False


def _still(report: SetStatus, stepping: bool) -> bool:
    """Nothing moves it without a person: held by its RolloutPolicy, or at an analysis gate
    that no running `rollout step` measures. An abort rolled back whose groups are not all
    ready yet, and that no step has anything left to do for, still moves: its readiness."""
    if report.aborted and not report.available and not any(s.actions for s in report.slices):
        return False
    return report.paced is not None and report.paced.still(stepping)


def _look(cluster: PacingSession, ds: DisaggregatedSet, namespace: str, clock: Clock) -> StatusLook:
    snapshot = cluster.snapshot(ds.name, namespace, scalers=ds.has_external_roles)
    if ds.policy is None:
        status, paced = derive_status(ds, snapshot, reconcile(ds, snapshot)), _Paced()
    else:
        # A RolloutPolicy's position, read only; its machinery (waves, gates, the RolloutState object)
        # is loaded for a set with a policy only: status of a plain set does not pay for it.
        from kubectl_disagg.core.delivery.rollout_status import rollout_status
        from kubectl_disagg.kube.lease import running_stepper
        from kubectl_disagg.rollout.progressive import paced_view
        passage, lines, version = paced_view(cluster, ds, namespace, snapshot, clock)
        status = derive_status(ds, snapshot, reconcile(passage.reconciled, snapshot, passage.admission))
        status = replace(status, rollout=lines, paced=rollout_status(passage.decision))
        stepping = status.paced is not None and status.paced.unmeasured is not None and running_stepper(
            cluster.client, ds.name, namespace, clock.now()) is not None
        paced = _Paced(version, stepping)
    if status.complete:  # completion is recorded by whichever command observes it (design §10.3)
        from kubectl_disagg.rollout.progressive import record_complete
        record_complete(cluster, ds, namespace, snapshot, _warn)
    watched: Watched
    if status.waits_on_services:  # only the Services are left to change: watch them
        watched = (status.name, status.namespace, snapshot.services_resource_version, SERVICE_KIND,
                   paced.state_version)
    else:
        watched = (status.name, status.namespace, snapshot.lws_resource_version, LWS_KIND, paced.state_version)
    return StatusLook(status, watched, _still(status, paced.stepping))


def _warn(message: str) -> None:
    sys.stderr.write(f"Warning: {message}\n")
