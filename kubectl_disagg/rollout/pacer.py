"""The one pacer of a RolloutPolicy's pass, for both stores (design §9.8): admit, measure the
analysis gate the decision waits at, admit again with its verdict.

`rollout/progressive.py` (the cluster: the position in the RolloutState) and `Paced` here (git:
the position in the state file, for `rollout/git_step.py`'s pass) both decide a pass through `pace`;
what differs is where the position comes from and goes (the store), and what the cluster shows
while a gate is measured (`measuring`: the RolloutState written Rolling, which Argo CD reads as
Progressing).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kubectl_disagg.clock import Clock, StoppedClock
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.reconcile import Admission
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.core.delivery.fleet import rollback_of
from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.core.delivery.waves import Gate, Passage, Progress, WaveDecision, admit
from kubectl_disagg.rollout.analysis import pending_gate
from kubectl_disagg.views.stops import stopped_reasons

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
    if gate is None or analyze is None:
        return passage
    if measuring is not None:
        measuring(passage.decision, gate)
    measured = analyze(ds, snapshot.namespace, passage.decision)
    return passage if measured is None else admit(ds, snapshot, measured, clock.now(), proven)


@dataclass
class Paced:
    """One git-driven pass under a policy (rollout/git_step.py): `admit` for `run_pass`, from the
    position the state file records (`recorded`) at `now`, and the passage it decided. A lost
    position is judged from what the committed state records (`proven`), not the live objects (a
    commit's render starts the rollout of its admitted slices before any step ran); what passes
    a gate here is a --gitops verb's commit, as the stops say."""

    recorded: Position | None
    now: datetime.datetime
    proven: Callable[[str], tuple[Progress, ...]] | None = None
    # at an analysis gate without a verdict: measure it (rollout/analysis.py's GateAnalysis), so
    # the state this step writes carries the verdict and what it decides
    analyze: Analyze | None = None
    passage: Passage | None = field(default=None)

    def admit(self, ds: DisaggregatedSet, snapshot: Snapshot) -> tuple[DisaggregatedSet, Admission]:
        self.passage = pace(ds, snapshot, self.recorded, StoppedClock(self.now), self.analyze, proven=self.proven)
        return self.passage.reconciled or ds, replace(
            self.passage.admission, stopped=stopped_reasons(self.passage.decision, gitops=True, where=ds.source.file),
            rollback=rollback_of(self.passage.decision))

    @property
    def position(self) -> Position | None:
        return None if self.passage is None else self.passage.decision.position

    def moved(self) -> bool:
        """The decision moved the position (a wave completed or reached, a gate passed)."""
        return self.passage is not None and self.passage.decision.position != self.recorded
