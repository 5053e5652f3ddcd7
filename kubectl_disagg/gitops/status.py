"""Where a git-driven rollout stands and what happens next. Pure: a set, its committed state
and a snapshot of its live LWS in, a `GitopsStatus` out (`rollout status --gitops`).

The next action is the one `rollout step --gitops` would meet, decided by the same
`gitops_step`: it can write a step (run it), the cluster does not show the commit yet (wait
for the sync: not synced or not pruned), the new revision is not ready (wait for readiness),
nothing is left to roll (complete), or the live objects cannot be explained (refused).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.rollout_status import RolloutStatus, rollout_status
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.core.delivery.status import Until, role_statuses
from kubectl_disagg.core.delivery.waves import serving
from kubectl_disagg.gitops.position import committed_position
from kubectl_disagg.gitops.served import served_differences
from kubectl_disagg.gitops.render import render_with_state
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.step import gitops_step, synced_differences
from kubectl_disagg.gitops.waves import state_decision, with_gained
from kubectl_disagg.rollout.outcome import Outcome
from kubectl_disagg.rollout.progressive import utcnow


class NextAction(StrEnum):
    STEP = "run rollout step --gitops"
    SYNC = "wait for the sync"
    READY = "wait for readiness"
    COMPLETE = "complete"
    REFUSED = "a person must look"
    HELD = "held by the RolloutPolicy: a --gitops verb's commit passes it"

    @property
    def outcome(self) -> Outcome:
        """What `rollout step --gitops` would come to here (its exit code is status's too)."""
        return _OUTCOME[self]


_OUTCOME = {NextAction.STEP: Outcome.ADVANCED, NextAction.SYNC: Outcome.WAITING, NextAction.READY: Outcome.WAITING,
            NextAction.COMPLETE: Outcome.COMPLETE, NextAction.REFUSED: Outcome.REFUSED,
            NextAction.HELD: Outcome.HELD}


@dataclass(frozen=True)
class SliceStatus:
    """The committed point of one slice: `revisions` revision → role → replicas (deployment
    order), `position` (step i, of N) on the plan of its rollout, or None when it is at rest
    (one revision) or off the plan."""

    slice: int
    revisions: Mapping[str, Mapping[str, int]]
    position: tuple[int, int] | None


@dataclass(frozen=True)
class GitopsStatus:
    """`synced`: every LWS the state renders is live with its committed replicas and annotation
    (and the live RolloutState, where there is one, is the committed document);
    `pruned`: no LWS the state no longer renders is left; `ready`: the set's revision's LWS are
    all ready, and every status is current (observedGeneration); `reasons`: why it waits or
    refuses (one line each); `available`: the live set is Available (every role ready at the
    set's revision, `rollout status`'s); complete: the rollout's last step is committed and live
    (nothing left to roll: no old revision's LWS in the state or the cluster); `paced`: where
    the committed position of a RolloutPolicy's rollout stands (the fields `rollout status`
    gives in the cluster, core/delivery/rollout_status.py), None without a policy or a state. After the
    policy's abort, Available is judged at the stable revision the slices go back to (`aborted`),
    as in the cluster (core/delivery/status.py `Until`): `serving`, the set's own revision when none
    of the stable one is live to go back to (core/delivery/waves.py `serving`)."""

    name: str
    namespace: str
    revision: str
    has_state: bool
    slices: tuple[SliceStatus, ...]
    synced: bool
    pruned: bool
    ready: bool
    next_action: NextAction
    reasons: tuple[str, ...]
    available: bool = False
    paced: RolloutStatus | None = None
    serving: str = ""

    @property
    def aborted(self) -> bool:
        return self.paced is not None and self.paced.aborted is not None

    @property
    def complete(self) -> bool:
        return self.next_action == NextAction.COMPLETE

    @property
    def still(self) -> bool:
        """Nothing moves the rollout without a person or a step: held by its policy, or where the
        step is next at an analysis gate (`RolloutStatus.still`: a --gitops step holds no Lease,
        so none is known to measure it). -w ends here (exit 7), as in the cluster."""
        return self.next_action == NextAction.HELD or (
            self.next_action == NextAction.STEP and self.paced is not None and self.paced.still())

    def reached(self, until: Until) -> bool:
        return self.complete if until == Until.COMPLETE else self.available


def gitops_status(ds: DisaggregatedSet, state: RolloutState | None, live: Snapshot,
                  served: Mapping | None = None) -> GitopsStatus:
    """`served`: the live RolloutState object, None where the kind is not served or there is
    none; when there is one, synced also means it is the committed document (`gitops_step`)."""
    ours = [o for o in live.lws if o.managed_by_us(ds.name)]
    new_lws = [o for o in ours if o.identity.revision == ds.revision]
    # Ready: the new revision's LWS all ready, and no status of ours describes an older spec.
    ready = bool(new_lws) and all(o.ready == o.replicas for o in new_lws) and not any(o.stale for o in ours)
    if state is None:
        available = all(role.available for role in role_statuses(ds, live))
        return GitopsStatus(ds.name, live.namespace, ds.revision, False, (), False, False, ready, NextAction.STEP,
                            ("no rollout state yet: `rollout step --gitops` creates it",), available)
    objects = render_with_state(ds, state)  # checked here (design §8), once: the step reads the same render
    expected = [o for o in objects if o["kind"] == naming.LWS_KIND]
    differences = served_differences(state, served) + synced_differences(expected, ours)
    unpruned = [d for d in differences if d.endswith("(not pruned yet)")]
    synced = len(unpruned) == len(differences)
    now = utcnow()
    step = gitops_step(ds, state, live, served, now=now, committed_render=objects)
    # the slices gained while the rollout is held run at the stable revision, as render derives them
    seen = with_gained(ds, state)
    paced = None
    if ds.policy is not None and step.outcome != Outcome.REFUSED:  # a refused state has no position to read
        paced = rollout_status(state_decision(ds, seen, now))
    if paced is not None and paced.unmeasured is not None and step.outcome in (Outcome.HELD, Outcome.ADVANCED):
        # an analysis gate without a verdict: this look asks no Prometheus, so it stops there
        # (or records reaching it); the step measures it and writes the verdict, as the words say
        action, reasons = NextAction.STEP, step.passed.stopped if step.passed is not None else step.reasons
    elif step.outcome == Outcome.HELD:  # a gate, a pause, an abort over (design §9): the reasons name the verb
        action, reasons = NextAction.HELD, step.reasons
    elif step.outcome == Outcome.ADVANCED:
        action, reasons = NextAction.STEP, ()
    elif step.outcome == Outcome.COMPLETE:
        action, reasons = NextAction.COMPLETE, ()
    elif step.outcome == Outcome.REFUSED:
        action, reasons = NextAction.REFUSED, step.reasons
    elif differences:
        action, reasons = NextAction.SYNC, step.reasons
    else:
        action, reasons = NextAction.READY, step.reasons
    judged_at = serving(ds, live, paced.target) if paced is not None and paced.aborted is not None else ds.revision
    available = all(role.available for role in role_statuses(ds, live, judged_at))
    return GitopsStatus(ds.name, live.namespace, ds.revision, True, _slices(ds, seen), synced, not unpruned,
                        ready, action, tuple(reasons), available, paced, judged_at)


def _slices(ds: DisaggregatedSet, state: RolloutState) -> tuple[SliceStatus, ...]:
    out = []
    for slice_index in range(ds.slices):
        deployed = state.deployed(slice_index)
        out.append(SliceStatus(slice_index, {rev: dict(c) for rev, c in deployed.items()},
                               committed_position(ds, state, slice_index)))
    return tuple(out)
