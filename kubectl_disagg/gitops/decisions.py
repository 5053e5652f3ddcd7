"""Which step commits of a git rollout are decisions for a person, and which a bot lands (issue 49). Pure.

A step is what `rollout step --gitops` writes; most are the planner's next move, within the
budgets `render` checks again, and a bot may land them. A few are **decisions**, told from the
position the step writes (`before` → `after`), never from a commit's words:

- `abort`: the step that records an abort (an analysis's onFailure): the rollback's first commit;
- `analysis`: an analysis verdict that passed opens the next wave;
- `wave`: a wave starts (its slices join the rollout) without an analysis;
- `pause`: a wave completed before a `pause: {}` gate (the next step is held until `promote`).

Which of them stop for a person is the team's choice (`Routes`); by default every decision does,
and every other step lands. A decision's commit goes to a branch named for it
(`decision_branch`), the same name each time the same decision is reached, so a run that finds
it pushed already does not push a second one.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.policy import resolve_waves
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.waves import opened_wave

ABORT, ANALYSIS, WAVE, PAUSE = "abort", "analysis", "wave", "pause"
DECISIONS = (WAVE, ANALYSIS, PAUSE, ABORT)  # every kind a step may be besides a mechanical one
STEP = "step"  # a mechanical step: the planner's next move
KINDS = (STEP, *DECISIONS)


@dataclass(frozen=True)
class Routes:
    """Which kinds of step stop for a person's review (`review`): the decision's commit on a
    branch of its own; every other kind lands on the rollout's branch by itself."""

    review: frozenset[str] = frozenset(DECISIONS)

    def reviewed(self, kind: str) -> bool:
        return kind in self.review


def step_kind(ds: DisaggregatedSet, before: RolloutState | None, after: RolloutState | None) -> str:
    """What the step from `before` to `after` of `ds` is: one of `DECISIONS`, else `STEP`."""
    was = before.position if before is not None else None
    now = after.position if after is not None else None
    if now is None or ds.policy is None:
        return STEP
    if now.aborted is not None and (was is None or was.aborted is None):
        return ABORT
    if opened_wave(ds, before, after) is not None:
        if was is not None and any(now.verdict(wave) == "passed" and was.verdict(wave) is None
                                   for wave in now.verdicts):
            return ANALYSIS
        return WAVE
    completed = set(now.completed) - set(was.completed if was is not None else ())
    waves = resolve_waves(ds.policy, ds.slices)
    if any(index < len(waves) and waves[index].pause and waves[index].duration is None for index in completed):
        return PAUSE
    return STEP


def decision_branch(prefix: str, name: str, revision: str, commits: int, kind: str) -> str:
    """The branch a decision's commit goes to: `PREFIX/NAME/REVISION/step-N-KIND`."""
    return f"{prefix.rstrip('/')}/{name}/{revision[:8]}/step-{commits}-{kind}"
