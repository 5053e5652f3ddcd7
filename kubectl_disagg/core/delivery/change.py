"""A verb's change to a set's position, as a store decides it (rollout/store.py `PositionStore`,
design §9.8): the data both stores return, and the one error both raise for a set without a
RolloutPolicy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.waves import WaveDecision
from kubectl_disagg.errors import Problem, UserError


@dataclass(frozen=True)
class PositionChange:
    """One set's position changed by a verb: the decision `before`, the one `after`, and what
    the store writes (`written`: the RolloutState object, or the state file's RolloutState),
    `where` it is kept (rolloutstate/NAME, or the state file's path). Once recorded,
    `stepper` names the `rollout step` holding the set's Lease (cluster only)."""

    ds: DisaggregatedSet
    namespace: str
    before: WaveDecision
    after: WaveDecision
    written: Any
    where: str
    stepper: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the verb moved the position: a repeated pause or abort does not, and nothing is
        written or recorded for it (it is no error either: the set is where the verb puts it)."""
        return self.after.position != self.before.position


class NotPaced(UserError):
    """A set without a RolloutPolicy: no position to change (the other sets go on). Worded once
    for both stores; at the set's FILE:LINE where it came from a file."""

    def __init__(self, ds: DisaggregatedSet, namespace: str):
        message = (f"disaggregatedset/{ds.name} in {namespace} has no RolloutPolicy: its rollouts are not paced "
                   "(nothing to promote, pause, resume, abort or retry)")
        super().__init__([Problem(ds.source.file, ds.source.line(("metadata", "name")), "", message)
                          if ds.source.lines else message])
