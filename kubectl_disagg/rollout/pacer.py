"""The one pacer of a RolloutPolicy's pass, for both stores (design §9.8): admit, measure the
analysis gate the decision waits at, admit again with its verdict.

`rollout/progressive.py` (the cluster: the position in the RolloutState) and `gitops/waves.py`
(git: the position in the state file) both decide a pass through `pace`; what differs is where
the position comes from and goes (the store), and what the cluster shows while a gate is
measured (`measuring`: the RolloutState written Rolling, which Argo CD reads as Progressing).
"""

from __future__ import annotations

from collections.abc import Callable

from kubectl_disagg.clock import Clock
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.core.delivery.waves import Gate, Passage, Progress, WaveDecision, admit
from kubectl_disagg.rollout.analysis import pending_gate

Analyze = Callable[[DisaggregatedSet, str, WaveDecision], Position | None]


def pace(ds: DisaggregatedSet, snapshot: Snapshot, recorded: Position | None, clock: Clock,
         analyze: Analyze | None = None, *, proven: Callable[[str], tuple[Progress, ...]] | None = None,
         measuring: Callable[[WaveDecision, Gate], None] | None = None) -> Passage:
    """The passage of one pass from the `recorded` position (core/delivery/waves.py `admit`; `proven`: a
    lost position's evidence). At an analysis gate without a verdict, `analyze` measures it
    (`measuring` is told first) and the pass is decided again from the position with the verdict:
    the same pass passes the gate or does the policy's onFailure. Without `analyze` (a dry run),
    the gate stays pending."""
    passage = admit(ds, snapshot, recorded, clock.now(), proven)
    gate = None if analyze is None else pending_gate(passage.decision)
    if gate is None:
        return passage
    if measuring is not None:
        measuring(passage.decision, gate)
    measured = analyze(ds, snapshot.namespace, passage.decision)
    return passage if measured is None else admit(ds, snapshot, measured, clock.now(), proven)
