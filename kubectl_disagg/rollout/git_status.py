"""Where a git-driven rollout stands and what happens next: git's part of `rollout status`
(rollout/status.py), the store's look. `gitops_status` is pure: a set, its committed state and
a snapshot of its live LWS in, the one status model out (core/delivery/status.py `SetStatus`),
the live set read as the cluster's store reads it (roles, slices, waits, stale status, a
RolloutPolicy's lines) and its `Sync` part filled; `GitLooks` takes a look at every set of a
directory (read once: a look reads the live cluster only, LWS and the set's RolloutState object
where the kind is served).

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
from dataclasses import replace
from functools import partial
from typing import Any

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.rollout_status import RolloutStatus, rollout_status
from kubectl_disagg.core.delivery.waves import serving
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.core.controller.reconcile import Reconciliation, reconcile
from kubectl_disagg.core.delivery.status import (CommittedSlice, NextAction, SetStatus, StatusLook, Sync, Until,
                                                 derive_status, role_statuses)
from kubectl_disagg.gitops.position import committed_position
from kubectl_disagg.gitops.served import served_differences
from kubectl_disagg.gitops.render import render_with_state
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.step import synced_differences
from kubectl_disagg.rollout.git_step import GitopsStep, gitops_step
from kubectl_disagg.gitops.waves import state_decision, state_progress, with_gained
from kubectl_disagg.inputs.directory import Directory
from kubectl_disagg.kube.seam import ClusterReads
from kubectl_disagg.rollout.pacer import Paced
from kubectl_disagg.rollout.progressive import position_lines
from kubectl_disagg.views.stops import stopped_reasons
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
    state is kept, for the view. The live set is read as the cluster's store reads it (roles,
    conditions, slices, waits, stale status; a RolloutPolicy's lines), from the step's own
    reconcile pass (`_reconciled`). After the policy's abort, Available is judged at the stable
    revision the slices go back to, as in the cluster (core/delivery/status.py `Until`)."""
    ours = [o for o in live.lws if o.managed_by_us(ds.name)]
    new_lws = [o for o in ours if o.identity.revision == ds.revision]
    # Ready: the new revision's LWS all ready, and no status of ours describes an older spec.
    ready = bool(new_lws) and all(o.ready == o.replicas for o in new_lws) and not any(o.stale for o in ours)
    if state is None:
        return _status(ds, live, _observed(reconcile(ds, live)), Sync(
            False, (), False, False, ready, NextAction.STEP,
            ("no rollout state yet: `rollout step --gitops` creates it",), state_file))
    objects = render_with_state(ds, state)  # checked here (design §8), once: the step reads the same render
    expected = [o for o in objects if o["kind"] == naming.LWS_KIND]
    differences = served_differences(state, served) + synced_differences(expected, ours)
    unpruned = [d for d in differences if d.endswith("(not pruned yet)")]
    synced = len(unpruned) == len(differences)
    step = gitops_step(ds, state, live, served, now=now, committed_render=objects)
    # the slices gained while the rollout is held run at the stable revision, as render derives them
    seen = with_gained(ds, state)
    paced: RolloutStatus | None = None
    lines: tuple[str, ...] = ()  # with a policy, where its rollout stands (the cluster's `rollout` lines)
    if ds.policy is not None and step.outcome != REFUSED:  # a refused state has no position to read
        decision = state_decision(ds, seen, now)
        paced = rollout_status(decision)
        lines = (position_lines(decision)[0],
                 *(f"held: {reason}" for reason in stopped_reasons(decision, gitops=True, where=ds.source.file)))
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
    sync = Sync(True, _slices(ds, seen), synced, not unpruned, ready, action, tuple(reasons), state_file)
    return replace(_status(ds, live, _reconciled(ds, state, live, step, now), sync, paced, judged_at), rollout=lines)


def _reconciled(ds: DisaggregatedSet, state: RolloutState, live: Snapshot, step: GitopsStep,
                now: datetime.datetime) -> Reconciliation:
    """The live set as the step's reconcile pass read it (what it would write: its actions);
    where the step ran none (the cluster does not show the commit yet, or a status is stale),
    a pass over the live LWS under the committed position, read only: its actions left out, as
    what happens next is the sync."""
    if step.passed is not None:
        return step.passed.reconciliation
    paced = None if ds.policy is None else Paced(state.position, now, proven=partial(state_progress, ds, state))
    toward, admission = (ds, None) if paced is None else paced.admit(ds, live)
    return _observed(reconcile(toward, live, admission))


def _observed(reconciliation: Reconciliation) -> Reconciliation:
    """A pass's reading of the live LWS without its actions: through git nothing acts on them but a sync."""
    return replace(reconciliation, actions=(),
                   slices=tuple(replace(report, actions=()) for report in reconciliation.slices))


def _status(ds: DisaggregatedSet, live: Snapshot, reconciliation: Reconciliation, sync: Sync,
            paced: RolloutStatus | None = None, judged_at: str = "") -> SetStatus:
    """The one status model, as the cluster's store derives it from the live LWS, with git's
    part: roles judged at `judged_at` (the set's revision by default), the slices' committed
    points under `sync`."""
    judged_at = judged_at or ds.revision
    return replace(derive_status(ds, live, reconciliation), roles=role_statuses(ds, live, judged_at),
                   paced=paced, serving=judged_at, sync=sync)


def _slices(ds: DisaggregatedSet, state: RolloutState) -> tuple[CommittedSlice, ...]:
    out = []
    for slice_index in range(ds.slices):
        deployed = state.deployed(slice_index)
        out.append(CommittedSlice(slice_index, {rev: dict(c) for rev, c in deployed.items()},
                                  committed_position(ds, state, slice_index)))
    return tuple(out)
