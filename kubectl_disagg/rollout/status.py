"""`rollout status` as one library call: read each set's live LWS, derive its status (with a
RolloutPolicy, from the paced position), hand the reports to the caller's view, and with
`watch` look again on every change of its LWS (with a RolloutPolicy, of its RolloutState too:
a step's or a verb's write) until every set is Available (`until` COMPLETE: until its rollout
is complete, the old revisions' LWS removed) or held by its RolloutPolicy where `rollout step`
would be, or at an analysis gate that no running `rollout step` measures; the `Outcome` says
how it ended
(`outcome.STATUS_EXIT`: the exit code). `looks` is the one shape of the -w loop, `rollout
status --gitops`'s too (gitops/watch.py). A look that sees a set's rollout complete records it
in the set's RolloutState, as the step that observed it would (design §10.3:
`progressive.record_complete`), the one write a status makes.

How a look is printed is the caller's `format` (views/status.py, views/status_text.py): this
module makes no text.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TypeVar

from kubectl_disagg.core.api.model import DisaggregatedSet, namespace_for
from kubectl_disagg.core.api.naming import LWS_KIND, SERVICE_KIND
from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.core.delivery.status import SetStatus, Until, derive_status
from kubectl_disagg.rollout.outcome import Outcome
from kubectl_disagg.wait import NEVER, WATCH_SLICE_SECONDS, Deadline, until_settled

Format = Callable[[list[SetStatus], str], str]  # the reports and the time of the look → the text printed
L = TypeVar("L")  # a look, whatever the mode makes of one
# What a quiet look watches: the set's name and namespace, the resourceVersion its objects were
# listed at, and their kind (its LeaderWorkerSets, or its Services when only they are left to change);
# with a RolloutPolicy, the resourceVersion of its RolloutState as read ("" for none), watched too.
Watched = tuple[str, str, "str | None", str, "str | None"]


def looks(cluster, look: Callable[[], L], settled: Callable[[L], bool], watched: Callable[[L], Watched],
             deadline: Deadline, *, most: float = WATCH_SLICE_SECONDS) -> Iterator[L]:
    """The -w loop of `rollout status`, both modes: each look yielded as it is taken, until one
    is `settled` or `deadline` passes; between looks, a watch of the LeaderWorkerSets of the set
    `watched(look)` names, and of its RolloutState where it names a version of it (any event
    means "look again"), at most `most` seconds."""
    def wait_for_change(seen: L, seconds: float) -> bool:
        name, namespace, resource_version, kind, state_version = watched(seen)
        if state_version is None:
            return cluster.wait_for_change(name, namespace, resource_version, timeout=seconds, kind=kind)
        return cluster.wait_for_change(name, namespace, resource_version, timeout=seconds, kind=kind,
                                       state_version=state_version)

    yield from until_settled(look, settled, wait_for_change, deadline, most=most)


def watch_status(cluster, sets: list[DisaggregatedSet], namespace: str | None, format: Format, *,
                 watch: bool = False, deadline: Deadline = NEVER,
                 write: Callable[[str], object] | None = None, until: Until = Until.AVAILABLE,
                 held: Callable[[list[SetStatus]], object] | None = None) -> Outcome:
    """Report every set (`write(format(reports, now))`); AVAILABLE when all have reached `until`
    (Available, or with COMPLETE their rollout complete), NOT_AVAILABLE when not (without
    `watch`); with `watch`, report again on every change until they have, or TIMEOUT at
    `deadline`, or HELD once every set that has not is held by its RolloutPolicy where `rollout
    step` would be (a gate, a pause, an abort rolled back: only a person passes it), or stands
    at an analysis gate no running `rollout step` measures (`StatusLook.still`), `held` told their
    reports."""
    write = write or sys.stdout.write

    def look() -> list[StatusLook]:
        seen = [_look(cluster, ds, namespace_for(ds, namespace, cluster.default_namespace)) for ds in sets]
        write(format([one.report for one in seen], _now()))
        return [one for one in seen if not one.report.reached(until)]

    def settled(pending: list[StatusLook]) -> bool:
        return not pending or not watch or all(one.still for one in pending)

    def first_moving(pending: list[StatusLook]) -> Watched:  # sleep on a watch of the first set still moving
        one = next((p for p in pending if not p.still), pending[0])
        report, snapshot = one.report, one.snapshot
        if report.waits_on_services:
            return report.name, report.namespace, snapshot.services_resource_version, SERVICE_KIND, one.state_version
        return report.name, report.namespace, snapshot.lws_resource_version, LWS_KIND, one.state_version

    pending = None
    for pending in looks(cluster, look, settled, first_moving, deadline):  # noqa: B007 (read after the loop)
        pass
    if not pending:
        return Outcome.AVAILABLE
    if not watch:
        return Outcome.NOT_AVAILABLE
    if all(one.still for one in pending):
        if held is not None:
            held([one.report for one in pending])
        return Outcome.HELD
    return Outcome.TIMEOUT


@dataclass(frozen=True)
class StatusLook:
    """One set's look: its status, the live objects it was derived from, the resourceVersion
    of the RolloutState read (None without a policy), and whether a `rollout step` holds the
    set's Lease (asked only at an analysis gate without a verdict, which only a step measures)."""

    report: SetStatus
    snapshot: Snapshot
    state_version: str | None = None
    stepping: bool = False

    @property
    def still(self) -> bool:
        """Nothing moves it without a person: held by its RolloutPolicy, or at an analysis gate
        that no running `rollout step` measures. An abort rolled back whose groups are not all
        ready yet, and that no step has anything left to do for, still moves: its readiness."""
        report = self.report
        if report.aborted and not report.available and not any(s.actions for s in report.slices):
            return False
        return report.paced is not None and report.paced.still(self.stepping)


def _look(cluster, ds: DisaggregatedSet, namespace: str) -> StatusLook:
    snapshot = cluster.snapshot(ds.name, namespace, scalers=ds.has_external_roles)
    if ds.policy is None:
        look = StatusLook(derive_status(ds, snapshot, reconcile(ds, snapshot)), snapshot)
    else:
        # A RolloutPolicy's position, read only; its machinery (waves, gates, the RolloutState object)
        # is loaded for a set with a policy only: status of a plain set does not pay for it.
        from kubectl_disagg.core.delivery.rollout_status import rollout_status
        from kubectl_disagg.kube.lease import running_stepper
        from kubectl_disagg.rollout.progressive import paced_view
        passage, lines, version = paced_view(cluster, ds, namespace, snapshot)
        status = derive_status(ds, snapshot, reconcile(passage.reconciled, snapshot, passage.admission))
        status = replace(status, rollout=lines, paced=rollout_status(passage.decision))
        stepping = status.paced is not None and status.paced.unmeasured is not None and running_stepper(
            cluster.client, ds.name, namespace) is not None
        look = StatusLook(status, snapshot, version, stepping)
    if look.report.complete:  # completion is recorded by whichever command observes it (design §10.3)
        from kubectl_disagg.rollout.progressive import record_complete
        record_complete(cluster, ds, namespace, snapshot, _warn)
    return look


def _warn(message: str) -> None:
    sys.stderr.write(f"Warning: {message}\n")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
