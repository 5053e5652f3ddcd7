"""Where a whole fleet of slices stands after a pass, as data (design §9.7). Pure.

`fleet_of` reads only what a pass already carries (the set, its RolloutPolicy and reconcile's
slice reports): the wave reached, the slices in flight and done, the gate ahead and the
revision the pass goes toward (the stable one after an abort: a rollback). `situations` folds
slices in the same situation into one entry, so a view prints one line for slices 4-11, not
eight (views/fleet.py words both).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.policy import resolve_waves
from kubectl_disagg.core.api.policy_types import ResolvedWave
from kubectl_disagg.core.controller.reconcile import Phase, Reconciliation, Rollback, SliceReport
from kubectl_disagg.core.delivery.waves import Hold, Progress, State, WaveDecision

K = TypeVar("K", bound=Hashable)

# The phases of a slice whose rollout is under way (it runs, or is about to run, two revisions).
MOVING = (Phase.ROLLOUT_STARTED, Phase.ROLLING, Phase.WAITING, Phase.STALLED, Phase.CONVERGING)


@dataclass(frozen=True)
class Fleet:
    """The fleet after a pass. `waves` is empty without a RolloutPolicy; `wave` indexes it (the
    wave reached: the last whose slices are admitted). `moves_to` is the revision the pass
    reconciles toward: the set's own, or after an abort the stable one (`rollback`). `gate`:
    the next wave, from the one reached, with a gate after it (None: no gate ahead)."""

    name: str
    slices: int
    revision: str
    moves_to: str
    waves: tuple[ResolvedWave, ...]
    wave: int
    in_flight: tuple[int, ...]
    done: tuple[int, ...]
    held: tuple[int, ...]
    budget: int | None
    gate: ResolvedWave | None
    stopped: tuple[str, ...] = ()
    back: Rollback | None = None  # why the pass takes slices back, when the policy said (`rollback_of`)
    returning: bool = False  # the set's revision is one it ran before: the rollout goes back to it (an undo)
    deploying: tuple[int, ...] = ()  # of `in_flight`, those with no old revision (a first deploy): no budget paces them

    @property
    def rollback(self) -> bool:
        return self.back is not None or (bool(self.moves_to) and self.moves_to != self.revision)

    @property
    def complete(self) -> bool:
        return len(self.done) == self.slices and not self.in_flight

    def wave_of(self, slice_index: int) -> int:
        """The wave `slice_index` joins with (0 without a policy)."""
        return next((w.index for w in self.waves if w.start <= slice_index < w.end), 0)


def fleet_of(ds: DisaggregatedSet, result: Reconciliation) -> Fleet:
    """The fleet as `result` (one pass over `ds`) leaves it."""
    reports = result.slices
    moves_to = result.revision or ds.revision
    waves = resolve_waves(ds.policy, ds.slices) if ds.policy is not None else ()
    in_flight = tuple(r.slice for r in reports if r.phase in MOVING)
    done = tuple(r.slice for r in reports if _done(r, moves_to))
    held = tuple(r.slice for r in reports if r.phase == Phase.HELD and r.slice not in done)
    admitted = [r.slice for r in reports if not (r.phase == Phase.HELD and r.waiting_for == (Hold.WAVE.value,))]
    reached = max(admitted, default=-1)
    wave = max((w.index for w in waves if w.start <= reached and w.end > w.start), default=0)
    if len(done) == ds.slices and waves:
        wave = len(waves) - 1
    gate = next((w for w in waves[wave:-1] if w.gated), None) if waves else None
    budget = ds.policy.budget(ds.slices) if ds.policy is not None else None
    deploying = tuple(r.slice for r in reports if r.phase in MOVING and set(r.revisions) <= {moves_to})
    return Fleet(ds.name, ds.slices, ds.revision, moves_to, waves, wave, in_flight, done, held, budget, gate,
                 result.stopped, result.rollback, result.returning, deploying)


def rollback_of(decision: WaveDecision) -> Rollback | None:
    """The rollback a policy's decision makes, as reconcile carries it (None: the pass goes
    forward): an abort (its stamp's reason and who) while slices go back, or a rollout to the
    stable revision itself, the template set back mid-rollout (design §9.6: a revert)."""
    position = decision.position
    if decision.state == State.ABORTED and decision.moves:
        stamp = position.aborted
        return Rollback(decision.moves_to, stamp.reason if stamp else "", stamp.by if stamp else "")
    back = position.stable and position.stable == position.revision == decision.moves_to
    if back and decision.state != State.COMPLETE:
        return Rollback(decision.moves_to, revert=True)
    return None


def going_back(decision: WaveDecision) -> tuple[int, ...]:
    """The slices a rollback takes back: those that run the revision it leaves."""
    if decision.state == State.ABORTED:
        return tuple(s for s, p in enumerate(decision.progress) if p in (Progress.IN_FLIGHT, Progress.DONE))
    return tuple(s for s, p in enumerate(decision.progress) if p in (Progress.IN_FLIGHT, Progress.PENDING))


def _done(report: SliceReport, revision: str) -> bool:
    """At `revision` alone (or leaving the other revision behind this pass: its last step)."""
    if report.phase == Phase.COMPLETE:
        return True
    return report.phase not in MOVING and report.phase != Phase.BLOCKED and set(report.revisions) == {revision}


def situations(keys: Sequence[K]) -> list[tuple[tuple[int, ...], K]]:
    """Slices (indexes of `keys`) grouped by equal key, in the order each key first appears."""
    groups: dict[K, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    return [(tuple(slices), key) for key, slices in groups.items()]

