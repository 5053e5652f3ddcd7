"""Where a git-driven rollout stands and what happens next: git's part of `rollout status`
(rollout/status.py), the store's look. `gitops_status` is pure: a set, its committed state and
a snapshot of its live LWS in, the one status model out (core/delivery/status.py `SetStatus`) with its
`Sync` part filled; `GitLooks` takes a look at every set of a directory (read once: a look reads
the live cluster only, LWS and the set's RolloutState object where the kind is served).

The next action is the one `rollout step --gitops` would meet, decided by the same
`gitops_step`: it can write a step (run it), the cluster does not show the commit yet (wait
for the sync: not synced or not pruned), the new revision is not ready (wait for readiness),
nothing is left to roll (complete), or the live objects cannot be explained (refused). It stands
on the step (rollout/git_step.py), above the git store (design §9.8); the step's outcome is read
by its value.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.rollout_status import RolloutStatus, rollout_status
from kubectl_disagg.core.delivery.waves import serving
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.core.delivery.status import (CommittedSlice, NextAction, SetStatus, StatusLook, Sync, Until,
                                        role_statuses)
from kubectl_disagg.gitops.position import committed_position
from kubectl_disagg.gitops.served import served_differences
from kubectl_disagg.gitops.render import render_with_state
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.step import synced_differences
from kubectl_disagg.rollout.git_step import gitops_step
from kubectl_disagg.gitops.waves import state_decision, with_gained
from kubectl_disagg.inputs.directory import Directory
from kubectl_disagg.kube.seam import ClusterReads
from kubectl_disagg.wait import WATCH_SLICE_SECONDS

# The step's outcomes (rollout/outcome.py `Outcome`), by value.
ADVANCED, COMPLETE, HELD, REFUSED = "advanced", "complete", "held", "refused"


class GitLooks:
    """The git store for `rollout status` (rollout/status.py `StatusStore`): every set of
    `directory` (loaded once) judged against the live cluster at each look. -w watches the
    first set's LWS, a few seconds at most when there are several; without --for it waits until
    some set's next action changes (`until` None)."""

    until: Until | None = None

    def __init__(self, cluster: ClusterReads, directory: Directory, clock: Clock = SYSTEM_CLOCK):
        self.cluster, self.directory, self.clock = cluster, directory, clock
        self.most = 5.0 if len(directory.sets) > 1 else WATCH_SLICE_SECONDS

    def look(self) -> list[StatusLook]:
        looks = []
        for entry in self.directory.sets:
            ds, target, state = entry.ds, entry.namespace, entry.state
            snapshot = self.cluster.snapshot(ds.name, target, services=False)
            served = self.cluster.rollout_state(ds.name, target) if state is not None else None
            report = gitops_status(ds, state, snapshot, served, now=self.clock.now(), state_file=entry.state_path)
            looks.append(StatusLook(report, (ds.name, snapshot.namespace, snapshot.lws_resource_version,
                                             naming.LWS_KIND, None), still(report)))
        return looks


def still(report: SetStatus) -> bool:
    """Nothing moves the rollout without a person or a step: held by its policy, or where the
    step is next at an analysis gate (`RolloutStatus.still`: a --gitops step holds no Lease, so
    none is known to measure it). -w ends here (exit 7), as in the cluster."""
    sync = report.sync
    return sync is not None and (sync.next_action == NextAction.HELD or (
        sync.next_action == NextAction.STEP and report.paced is not None and report.paced.still()))


def gitops_status(ds: DisaggregatedSet, state: RolloutState | None, live: Snapshot,
                  served: Mapping[str, Any] | None = None, *, now: datetime.datetime,
                  state_file: str | None = None) -> SetStatus:
    """`served`: the live RolloutState object, None where the kind is not served or there is
    none; when there is one, synced also means it is the committed document (`gitops_step`).
    `now`: the time the position is judged at (the clock's); `state_file`: where the
    state is kept, for the view. After the policy's abort, Available is judged at the stable
    revision the slices go back to, as in the cluster (core/delivery/status.py `Until`)."""
    ours = [o for o in live.lws if o.managed_by_us(ds.name)]
    new_lws = [o for o in ours if o.identity.revision == ds.revision]
    # Ready: the new revision's LWS all ready, and no status of ours describes an older spec.
    ready = bool(new_lws) and all(o.ready == o.replicas for o in new_lws) and not any(o.stale for o in ours)
    if state is None:
        return _status(ds, live, Sync(False, (), False, False, ready, NextAction.STEP,
                                      ("no rollout state yet: `rollout step --gitops` creates it",), state_file))
    objects = render_with_state(ds, state)  # checked here (design §8), once: the step reads the same render
    expected = [o for o in objects if o["kind"] == naming.LWS_KIND]
    differences = served_differences(state, served) + synced_differences(expected, ours)
    unpruned = [d for d in differences if d.endswith("(not pruned yet)")]
    synced = len(unpruned) == len(differences)
    step = gitops_step(ds, state, live, served, now=now, committed_render=objects)
    # the slices gained while the rollout is held run at the stable revision, as render derives them
    seen = with_gained(ds, state)
    paced = None
    if ds.policy is not None and step.outcome != REFUSED:  # a refused state has no position to read
        paced = rollout_status(state_decision(ds, seen, now))
    if paced is not None and paced.unmeasured is not None and step.outcome in (HELD, ADVANCED):
        # an analysis gate without a verdict: this look asks no Prometheus, so it stops there
        # (or records reaching it); the step measures it and writes the verdict, as the words say
        action, reasons = NextAction.STEP, step.passed.stopped if step.passed is not None else step.reasons
    elif step.outcome == HELD:  # a gate, a pause, an abort over (design §9): the reasons name the verb
        action, reasons = NextAction.HELD, step.reasons
    elif step.outcome == ADVANCED:
        action, reasons = NextAction.STEP, ()
    elif step.outcome == COMPLETE:
        action, reasons = NextAction.COMPLETE, ()
    elif step.outcome == REFUSED:
        action, reasons = NextAction.REFUSED, step.reasons
    elif differences:
        action, reasons = NextAction.SYNC, step.reasons
    else:
        action, reasons = NextAction.READY, step.reasons
    # after an abort, judged at the stable revision; the set's own when none of it is live (core/delivery/waves.py)
    judged_at = serving(ds, live, paced.target) if paced is not None and paced.aborted is not None else ds.revision
    return _status(ds, live, Sync(True, _slices(ds, seen), synced, not unpruned, ready, action, tuple(reasons),
                                  state_file), paced, judged_at)


def _status(ds: DisaggregatedSet, live: Snapshot, sync: Sync, paced: RolloutStatus | None = None,
            judged_at: str = "") -> SetStatus:
    """The one status model with git's part: the roles summed over the live LWS (Available as in
    the cluster), the slices' committed points under `sync`."""
    judged_at = judged_at or ds.revision
    return SetStatus(name=ds.name, namespace=live.namespace, revision=ds.revision,
                     roles=role_statuses(ds, live, judged_at), slices=(), stale=(), problems=(), warnings=(),
                     paced=paced, serving=judged_at, sync=sync)


def _slices(ds: DisaggregatedSet, state: RolloutState) -> tuple[CommittedSlice, ...]:
    out = []
    for slice_index in range(ds.slices):
        deployed = state.deployed(slice_index)
        out.append(CommittedSlice(slice_index, {rev: dict(c) for rev, c in deployed.items()},
                                  committed_position(ds, state, slice_index)))
    return tuple(out)
