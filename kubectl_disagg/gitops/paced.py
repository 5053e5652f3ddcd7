"""`Paced`: what `gitops_step` hands a pass under a RolloutPolicy (`admit`) and records in the
next state: the one pacer (rollout/pacer.py `pace`) over the position in the state file.

Apart from gitops/waves.py, which `render` loads: the pacer measures analysis gates, and render
never reaches rollout/ (the architecture test `test_render_is_offline`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kubectl_disagg.clock import StoppedClock
from kubectl_disagg.core.delivery.fleet import rollback_of
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.core.controller.reconcile import Admission
from kubectl_disagg.core.controller.snapshot import Snapshot
from kubectl_disagg.core.delivery.waves import Passage, WaveDecision
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.waves import state_progress
from kubectl_disagg.rollout.pacer import pace
from kubectl_disagg.views.stops import stopped_reasons


@dataclass
class Paced:
    """One git-driven pass under a policy: `admit` for `run_pass`, the passage it decided."""

    ds: DisaggregatedSet
    state: RolloutState | None
    now: datetime.datetime
    passage: Passage | None = field(default=None)
    # at an analysis gate without a verdict: measure it (rollout/analysis.py's GateAnalysis), so
    # the state this step writes carries the verdict and what it decides
    analyze: Callable[[DisaggregatedSet, str, WaveDecision], Position | None] | None = None

    def admit(self, ds: DisaggregatedSet, snapshot: Snapshot) -> tuple[DisaggregatedSet, Admission]:
        # A lost position is judged from what the committed state records, not the live objects
        # (a commit's render starts the rollout of its admitted slices before any step ran).
        proven = None if self.state is None else (lambda revision: state_progress(ds, self.state, revision))
        self.passage = pace(ds, snapshot, self.state.position if self.state else None, StoppedClock(self.now),
                            self.analyze, proven=proven)
        # what passes a gate here is a --gitops verb's commit
        return self.passage.reconciled, replace(self.passage.admission,
                                            stopped=stopped_reasons(self.passage.decision, gitops=True,
                                                                    where=ds.source.file),
                                            rollback=rollback_of(self.passage.decision))

    @property
    def position(self) -> Position | None:
        return None if self.passage is None else self.passage.decision.position

    def moved(self) -> bool:
        """The decision moved the position (a wave completed or reached, a gate passed)."""
        before = self.state.position if self.state else None
        return self.passage is not None and self.passage.decision.position != before
