"""The RolloutPolicy's data (design §9): the policy as written, its waves resolved for a set, and
the arithmetic of their counts. Pure; below every module that names them (policy, model, position,
analysis), so that none of those imports another for its types.

core/delivery/policy.py reads and checks a policy; core/api/model.py keeps a set's; core/delivery/position.py and
core/delivery/analysis.py check a recorded position against the resolved waves."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from kubectl_disagg.manifests.source import Document

ABORT, PAUSE = "abort", "pause"  # what onFailure does
_PERCENT = re.compile(r"^([0-9]+)%$")

IntOrPercent = int | str  # 3, or "25%"


@dataclass(frozen=True)
class Wave:
    """One wave as written: `slices` (cumulative, a count or "N%"), its gates: `analysis` (the
    names of checks that must pass) then `pause` (None: none; `manual`: until `rollout promote`;
    else `duration` seconds after the wave completed)."""

    slices: IntOrPercent
    analysis: tuple[str, ...] = ()
    pause: bool = False
    duration: float | None = None  # with pause: the soak, in seconds (None: until promoted)


@dataclass(frozen=True)
class RolloutPolicy:
    """`analysis`: spec.analysis as core/delivery/analysis.py models it, else the raw mapping (or None).
    `source`: the document read, for line numbers (None: built in memory)."""

    name: str
    namespace: str | None
    target: str
    waves: tuple[Wave, ...] = ()
    max_in_flight: IntOrPercent | None = None
    on_failure: str = ABORT
    analysis: object = None
    source: Document | None = None

    def budget(self, slices: int) -> int | None:
        """Slices that may be in flight at once for a set of `slices` (None: no limit)."""
        return None if self.max_in_flight is None else max(1, resolve_count(self.max_in_flight, slices))


@dataclass(frozen=True)
class ResolvedWave:
    """A wave for a set of a given size: slices `start`..`end-1` join with it; its gates follow
    once they are complete. `implied`: the 100% wave added when the policy ends short of it."""

    index: int
    start: int
    end: int
    analysis: tuple[str, ...] = ()
    pause: bool = False
    duration: float | None = None
    implied: bool = False

    @property
    def slices(self) -> range:
        return range(self.start, self.end)

    @property
    def gated(self) -> bool:
        return bool(self.analysis) or self.pause


def resolve_count(value: IntOrPercent, total: int) -> int:
    """A count or a percentage of `total` (rounded up)."""
    if isinstance(value, int):
        return value
    return math.ceil(percent(value) * total / 100)


def percent(value: str) -> int:
    """The number of a percentage already checked to be one ("25%" -> 25)."""
    match = _PERCENT.match(value)
    assert match is not None, value
    return int(match.group(1))
