"""`rollout promote|pause|resume|abort` against the cluster, as one library call (design §9.5).

Each verb reads the LWS and the RolloutState, changes the position (core/waves.py: `promote`,
`pause`, `resume`, `abort`), writes it pinned to the resourceVersion read, and records an Event.
Nothing else is written, so a verb takes no Lease: a stepper running on the set (`rollout step
--until-complete`, an analysis it measures) writes the position pinned too, so a verb in between
makes the stepper's write a conflict, never lost, and the stepper reads the position again at
each boundary (rollout/run.py: `Brakes`) and stops, or after an abort turns back. A verb whose
write meets the stepper's reads again and changes the position anew. The verb names the running
stepper (the Lease's holder) in what it prints.
"""

from __future__ import annotations

import datetime
import getpass
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubectl_disagg.core.model import DisaggregatedSet, namespace_for
from kubectl_disagg.core.position import Position
from kubectl_disagg.core.waves import (ABORTED, PAUSED, PROMOTED_EVENT, RESUMED, VerbRefused, WaveDecision,
                                       WaveEvent, abort, pause, promote, resume)
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.exits import VerbExit
from kubectl_disagg.kube.lease import running_stepper
from kubectl_disagg.rollout.progressive import Progressive, change_position, reference, utcnow, wave_events

PROMOTE, PAUSE, RESUME, ABORT = "promote", "pause", "resume", "abort"
SELF_SUBJECT_REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
VERB_ATTEMPTS = 5  # a verb's write that meets a stepper's reads again, at most this often


@dataclass(frozen=True)
class VerbResult:
    """What a verb did to one set: the decision it found and the position it wrote."""

    ds: DisaggregatedSet
    namespace: str
    verb: str
    before: WaveDecision
    after: WaveDecision
    full: bool = False
    stepper: str | None = None  # the Lease's holder: the `rollout step` running on the set, if any


def change_for(verb: str, now: datetime.datetime, by: str, full: bool) -> Callable[[WaveDecision], Position]:
    return {
        PROMOTE: lambda decision: promote(decision, now, by, full=full),
        PAUSE: lambda decision: pause(decision.position, now, by),
        RESUME: lambda decision: resume(decision.position),
        ABORT: lambda decision: abort(decision, now, by),
    }[verb]


EVENTS = {PROMOTE: PROMOTED_EVENT, PAUSE: PAUSED, RESUME: RESUMED, ABORT: ABORTED}


def whoami(cluster) -> str:
    """The user the API server sees (a SelfSubjectReview: --as, the kubeconfig's user), else
    the local user name."""
    try:
        answer = cluster.client.send("POST", SELF_SUBJECT_REVIEW, body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, repeatable=True)
        name = json.loads(answer.data)["status"]["userInfo"]["username"]
        if isinstance(name, str) and name:
            return name
    except Exception:  # noqa: BLE001 — who did it is a courtesy; the verb goes on without it
        pass
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def run_verb(cluster, sets: Sequence[DisaggregatedSet], namespace: str | None, verb: str, printer, *,
             full: bool = False, clock: Callable[[], datetime.datetime] = utcnow) -> VerbExit:
    """The verb over each set; the exit code (3 when any set refused it, leaving it as it was)."""
    by = whoami(cluster)
    codes = []
    for ds in sets:
        target = namespace_for(ds, namespace, cluster.default_namespace)
        if ds.policy is None:
            printer.error([f"disaggregatedset/{ds.name} in {target} has no RolloutPolicy: its rollouts are not paced "
                           "(nothing to promote, pause, resume or abort)"])
            codes.append(VerbExit.ERROR)
            continue
        try:
            before, after, written = _changed(cluster, ds, target, change_for(verb, clock(), by, full), clock)
        except VerbRefused as refused:
            printer.error([f"refusing to {verb} disaggregatedset/{ds.name} in {target}: {refused}"])
            codes.append(VerbExit.REFUSED)
            continue
        except Conflict as err:
            printer.error([f"could not {verb} disaggregatedset/{ds.name} in {target}: {err.what}, "
                           f"{VERB_ATTEMPTS} times in a row; run it again"])
            codes.append(VerbExit.ERROR)
            continue
        detail = "--full" if full else f"by {by}"
        Progressive(cluster, target, clock=clock, warn=printer.warn).record(
            wave_events(before, [WaveEvent(EVENTS[verb], before.wave, detail)], reference(written)))
        printer.done(VerbResult(ds, target, verb, before, after, full,
                                running_stepper(cluster.client, ds.name, target)))
        codes.append(VerbExit.OK)
    if not codes:
        raise UserError("no DisaggregatedSet to act on")
    return max(codes)


def _changed(cluster, ds: DisaggregatedSet, namespace: str, change: Callable[[WaveDecision], Position],
             clock: Callable[[], datetime.datetime]) -> tuple[WaveDecision, WaveDecision, dict]:
    """`change_position` from a fresh read of the LWS and the RolloutState, read and changed
    again when a stepper wrote the position in between (its write and ours are both pinned)."""
    attempt = 1
    while True:
        snapshot = cluster.snapshot(ds.name, namespace, services=False)
        try:
            return change_position(cluster, ds, namespace, snapshot, change, clock)
        except Conflict:
            if attempt == VERB_ATTEMPTS:
                raise
            attempt += 1
