"""`rollout status --gitops` over sets, as one library call: each set's committed state read from
beside it and its live LWS judged (`status.gitops_status`); with -w, looked at again on every
LWS change until some set's next action changes. The cluster is only read: LWS, and the set's
RolloutState object where the kind is served.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kubectl_disagg.core.model import DisaggregatedSet, namespace_for
from kubectl_disagg.core.snapshot import Snapshot
from kubectl_disagg.gitops import files as state_files
from kubectl_disagg.gitops.exit_codes import (EXIT_ADVANCED, EXIT_COMPLETE, EXIT_HELD, EXIT_REFUSED, EXIT_TIMEOUT,
                                              EXIT_WAITING, most_pressing)
from kubectl_disagg.gitops.status import GitopsStatus, NextAction, gitops_status
from kubectl_disagg.kube.wait import Deadline, until_settled

_EXIT = {NextAction.STEP: EXIT_ADVANCED, NextAction.SYNC: EXIT_WAITING, NextAction.READY: EXIT_WAITING,
         NextAction.COMPLETE: EXIT_COMPLETE, NextAction.REFUSED: EXIT_REFUSED, NextAction.HELD: EXIT_HELD}


@dataclass(frozen=True)
class SetStatus:
    """One set's look: where its state is kept, the live LWS read, and the GitopsStatus."""

    ds: DisaggregatedSet
    path: str | None
    snapshot: Snapshot
    status: GitopsStatus


def looks(cluster, sets: Sequence[DisaggregatedSet], namespace: str | None, *, watch: bool = False,
          deadline: float | None = None) -> Iterator[list[SetStatus]]:
    """Each look at every set, yielded as it is taken; with `watch`, until a next action changes
    from the first look's or `deadline` (a time.monotonic() value) passes."""
    targets = [(ds, namespace_for(ds, namespace, cluster.default_namespace)) for ds in sets]
    first: list = []

    def look() -> list[SetStatus]:
        out = []
        for ds, target in targets:
            snapshot = cluster.snapshot(ds.name, target, services=False)
            state = state_files.read_state(ds, target)
            served = cluster.rollout_state(ds.name, target) if state is not None else None
            out.append(SetStatus(ds, state_files.state_path(ds), snapshot, gitops_status(ds, state, snapshot, served)))
        return out

    def settled(seen: list[SetStatus]) -> bool:
        actions = [s.status.next_action for s in seen]
        first[:] = first or actions
        return not watch or actions != first

    def wait_for_change(seen: list[SetStatus], seconds: float) -> bool:
        # Sleep on a watch of the first set's LWS; the others are looked at again within seconds.
        s = seen[0]
        return cluster.wait_for_change(s.ds.name, s.snapshot.namespace, s.snapshot.lws_resource_version,
                                       timeout=seconds)

    yield from until_settled(look, settled, wait_for_change, Deadline(deadline),
                             most=60.0 if len(targets) == 1 else 5.0)


def exit_code(statuses: Sequence[GitopsStatus], timed_out: bool = False) -> int:
    """As `rollout step --gitops`'s: the most pressing next action's (timed out first of all)."""
    if timed_out:
        return EXIT_TIMEOUT
    return most_pressing(_EXIT[s.next_action] for s in statuses)
