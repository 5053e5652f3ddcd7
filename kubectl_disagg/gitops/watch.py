"""`rollout status --gitops` over sets, as one library call: each set's committed state read from
beside it (once) and its live LWS judged (`status.gitops_status`); with -w, looked at again on
every LWS change until some set's next action changes (`until`: until every set is Available,
or its rollout complete), or at once when every set's rollout is complete already (`settled`).
The cluster is only read: LWS, and the set's RolloutState object where the kind is served."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.api.naming import LWS_KIND
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.core.delivery.status import Until
from kubectl_disagg.exits import GitopsExit
from kubectl_disagg.gitops.directory import Directory
from kubectl_disagg.gitops.status import GitopsStatus, NextAction, gitops_status
from kubectl_disagg.rollout.outcome import Outcome, gitops_exit
from kubectl_disagg.rollout.status import Watched, looks as status_looks
from kubectl_disagg.wait import NEVER, Deadline

@dataclass(frozen=True)
class SetLook:
    """One set's look: where its state is kept, the live LWS read, and the GitopsStatus."""

    ds: DisaggregatedSet
    path: str | None
    snapshot: Snapshot
    status: GitopsStatus


def looks(cluster, directory: Directory, *, watch: bool = False,
          deadline: Deadline = NEVER, until: Until | None = None) -> Iterator[list[SetLook]]:
    """Each look at every set of the directory (read once: a look reads the live cluster only),
    yielded as it is taken; with `watch`, until the look is `settled` or `deadline` passes
    (the one -w loop, `rollout.status.looks`)."""
    first: list = []
    several = len(directory.sets) > 1

    def look() -> list[SetLook]:
        out = []
        for entry in directory.sets:
            ds, target, state = entry.ds, entry.namespace, entry.state
            snapshot = cluster.snapshot(ds.name, target, services=False)
            served = cluster.rollout_state(ds.name, target) if state is not None else None
            out.append(SetLook(ds, entry.state_path, snapshot, gitops_status(ds, state, snapshot, served)))
        return out

    def done(seen: list[SetLook]) -> bool:
        first[:] = first or [s.status.next_action for s in seen]
        return not watch or settled(seen, first, until)

    def first_set(seen: list[SetLook]) -> Watched:
        # Sleep on a watch of the first set's LWS; the others are looked at again within seconds.
        return seen[0].ds.name, seen[0].snapshot.namespace, seen[0].snapshot.lws_resource_version, LWS_KIND, None

    yield from status_looks(cluster, look, done, first_set, deadline, most=5.0 if several else 60.0)


def settled(seen: Sequence[SetLook], first: Sequence[NextAction], until: Until | None = None) -> bool:
    """Whether -w ends at this look: some set is still (`GitopsStatus.still`: held by its
    RolloutPolicy, a gate, a pause, an abort, which only a verb's commit passes, or at an
    analysis gate only a step measures; -w ends held, exit 7, its reasons naming the command); every set has reached `until`; without it, some set's next
    action differs from the `first` look's, or every set's rollout is complete (only a new commit
    changes that, so there is nothing to wait for: complete at once, as `rollout status -w` on
    an Available set)."""
    if any(s.status.still for s in seen):
        return True
    if until is not None:
        return reached(seen, until)
    actions = [s.status.next_action for s in seen]
    return actions != list(first) or all(action == NextAction.COMPLETE for action in actions)


def reached(seen: Sequence[SetLook], until: Until) -> bool:
    """Every set of a look is Available (`until` AVAILABLE), or its rollout complete (COMPLETE)."""
    return all(s.status.reached(until) for s in seen)


def exit_code(statuses: Sequence[GitopsStatus], timed_out: bool = False, watched: bool = False) -> GitopsExit:
    """As `rollout step --gitops`'s: the most pressing next action's (timed out first of all);
    after -w (`watched`), a still set's is held (7)."""
    if timed_out:
        return gitops_exit([Outcome.TIMEOUT])
    return gitops_exit([Outcome.HELD if watched and s.still else s.next_action.outcome for s in statuses])
