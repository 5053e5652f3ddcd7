"""Where a paced rollout stands, as data: what `rollout status -o json|yaml` gives under
`rollout` in both modes (design §9.7), and whether `rollout status -w` ends held. Pure.

`rollout_status` reads one decision (core/delivery/waves.py): the cluster's (`paced_view`, the position
in the RolloutState) or git's (`state_decision`, the position in the state file), so both modes
give the same fields from the same rules. `rollout_document` spells them as Kubernetes spells a
status: camelCase keys, an absent key for what is not there (docs/rollouts.md lists them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_disagg.core.delivery.position import Stamp
from kubectl_disagg.core.delivery.waves import Gate, Progress, State, Stopped, WaveDecision, gates_ahead, holds, stopped
from kubectl_disagg.manifests.source import JsonObject


@dataclass(frozen=True)
class RolloutStatus:
    """One paced rollout: its `phase` (the RolloutState's), the revision it goes to (`target`:
    the stable one during a rollback) from `stable`, the `wave` reached of `waves` (each a
    (first slice, end) pair), the `gate` it waits at (`at_gate`) or the next one ahead, a pause
    and an abort (who, when, why), the last analysis `verdict` recorded (wave, the record), the
    fleet's counts, and `held`: why `rollout step` would change nothing (None: it would move,
    or measure the analysis gate it stands at: `unmeasured`, that gate; nothing but a step
    measures it, so without one running the rollout is as still as when held)."""

    phase: State
    revision: str
    target: str
    stable: str
    wave: int
    waves: tuple[tuple[int, int], ...]
    gate: Gate | None
    at_gate: bool
    paused: Stamp | None
    aborted: Stamp | None
    verdict: tuple[int, Mapping[str, Any]] | None
    slices: int
    done: tuple[int, ...]
    in_flight: tuple[int, ...]
    held_slices: tuple[int, ...]
    held: Stopped | None
    unmeasured: Gate | None = None

    def still(self, stepping: bool = False) -> bool:
        """Nothing moves the rollout without a person: held, or at the analysis gate `unmeasured`
        that no running `rollout step` measures (`stepping`: one holds the set's Lease; a
        --gitops step holds none). `rollout status -w` ends here, in both modes."""
        return self.held is not None or (self.unmeasured is not None and not stepping)


def rollout_status(decision: WaveDecision) -> RolloutStatus:
    """The status of the rollout `decision` stands at.

    Counts, toward the revision the rollout goes to (the stable one after an abort): `done`,
    the slices that run it alone; `in_flight`, those that run two revisions; `held_slices`,
    those the policy keeps from moving (their wave not started, the budget, a pause), done ones
    aside."""
    position = decision.position
    progress = decision.progress
    back = decision.moves_to != position.revision  # a rollback: toward the stable revision
    done = tuple(s for s, p in enumerate(progress) if p == (Progress.PENDING if back else Progress.DONE))
    in_flight = tuple(s for s, p in enumerate(progress) if p == Progress.IN_FLIGHT)
    held_slices = tuple(sorted(s for s in decision.held if s not in done))
    ahead = gates_ahead(decision)
    gate = decision.gate if decision.gate is not None else (ahead[0] if ahead else None)
    at_gate = decision.gate is not None or (
        gate is not None and decision.state == State.PAUSED and gate.wave in position.completed)
    verdict = max(position.verdicts.items(), default=None)
    held, why = holds(decision), stopped(decision)
    unmeasured = why.gate if held is None and why is not None else None
    return RolloutStatus(
        phase=decision.state, revision=position.revision, target=decision.moves_to, stable=position.stable,
        wave=decision.wave, waves=tuple((w.start, w.end) for w in decision.waves), gate=gate, at_gate=at_gate,
        paused=position.paused, aborted=position.aborted,
        verdict=None if verdict is None else (verdict[0], verdict[1]),
        slices=len(progress), done=done, in_flight=in_flight, held_slices=held_slices, held=held,
        unmeasured=unmeasured)


def rollout_document(status: RolloutStatus) -> JsonObject:
    """The `rollout` of `rollout status -o json|yaml` (docs/rollouts.md lists its fields)."""
    start, end = status.waves[status.wave]
    document: JsonObject = {
        "phase": str(status.phase),
        "revision": status.revision,
        "stableRevision": status.stable,
        "targetRevision": status.target,
        "wave": {"index": status.wave, "count": len(status.waves), "firstSlice": start, "lastSlice": end - 1},
    }
    if status.gate is not None:
        document["gate"] = _gate_document(status.gate, status.at_gate)
    if status.held is not None:
        document["held"] = str(status.held.why)
    for key, stamp in (("paused", status.paused), ("aborted", status.aborted)):
        if stamp is not None:
            document[key] = _stamp_document(stamp)
    if status.verdict is not None:
        document["lastAnalysis"] = _verdict_document(*status.verdict)
    document["fleet"] = {"slices": status.slices, "done": len(status.done), "inFlight": len(status.in_flight),
                         "held": len(status.held_slices)}
    return document


def _gate_document(gate: Gate, at: bool) -> JsonObject:
    document: JsonObject = {"kind": gate.kind, "wave": gate.wave, "reached": at}
    if gate.checks:
        document["checks"] = list(gate.checks)
    if gate.until is not None:
        document["soakUntil"] = gate.until
    if gate.failed:
        document["failed"] = True
    return document


def _stamp_document(stamp: Stamp) -> JsonObject:
    document: JsonObject = {"at": stamp.at}
    if stamp.by:
        document["by"] = stamp.by
    if stamp.reason:
        document["reason"] = stamp.reason
    return document


def _verdict_document(wave: int, record: Mapping[str, Any]) -> JsonObject:
    """A recorded verdict (core/delivery/analysis.py `gate_record`): its phase and message, and each
    check's measured values in the order they were taken."""
    checks = []
    for check in record.get("checks") or ():
        if not isinstance(check, Mapping):
            continue
        measured = [m for m in check.get("measurements") or () if isinstance(m, Mapping)]
        checks.append({"check": check.get("check"), "phase": check.get("phase"),
                       "successCondition": check.get("successCondition"),
                       "values": [m.get("values", m.get("error")) for m in measured]})
    return {"wave": wave, "phase": record.get("phase"), "message": record.get("message"), "checks": checks}
