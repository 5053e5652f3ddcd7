"""The rollout state as Argo CD shows it, in words (gitops/served.py serves it): the `rollout`
summary `cmp generate` writes into the state document from the committed state. Pure.

Words the pacers' way (views/stops.py phrases why a paced rollout stops, as for the cluster's
RolloutState, rollout/progressive.py): gitops/ returns the decision, this module says it.
"""

from __future__ import annotations

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.waves import State
from kubectl_disagg.gitops.position import committed_position
from kubectl_disagg.gitops.state import RolloutState, state_document
from kubectl_disagg.gitops.waves import state_decision
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.views.stops import rollback_words, stopped_reasons

AT_REST, ROLLING = "AtRest", "Rolling"
NEXT = "rollout step --gitops"


def served_object(ds: DisaggregatedSet, state: RolloutState) -> JsonObject:
    document = state_document(state)
    document["rollout"] = summary(ds, state)
    return document


def summary(ds: DisaggregatedSet, state: RolloutState) -> JsonObject:
    """Phase and a one-line message: per run of slices alike, the step and the old/new counts
    per role (`old/new: prefill 1/2`, as the step report writes them; `→` always reads before → after)."""
    runs: list[list[int | str]] = []  # [first, last, text]
    steps: list[str] = []  # the distinct "i/N" of the rolling slices, in slice order
    for slice_index in range(ds.slices):
        deployed = state.deployed(slice_index)
        if set(deployed) <= {ds.revision}:
            continue
        position = committed_position(ds, state, slice_index)
        counts = []
        for role in ds.role_names:
            old = sum(c.get(role, 0) for rev, c in deployed.items() if rev != ds.revision)
            new = deployed.get(ds.revision, {}).get(role, 0)
            counts.append(f"{role} {old}/{new}")
        where = f"step {position[0]} of {position[1]}" if position else "off the plan"
        step = f"{position[0]}/{position[1]}" if position else "?"
        if step not in steps:
            steps.append(step)
        text = f"{where} (old/new: {', '.join(counts)})"
        if runs and runs[-1][2] == text and runs[-1][1] == slice_index - 1:
            runs[-1][1] = slice_index
        else:
            runs.append([slice_index, slice_index, text])
    if not runs:
        return paced_summary(ds, state, {"set": ds.name, "revision": ds.revision, "phase": AT_REST,
                                         "message": f"{ds.name}: at rest at revision {ds.revision}"})
    parts = [f"{'slice ' + str(first) if first == last else f'slices {first}-{last}'} {text}"
             for first, last, text in runs]
    return paced_summary(ds, state, {"set": ds.name, "revision": ds.revision, "step": ",".join(steps),
                                     "phase": ROLLING, "message": f"{ds.name}: {'; '.join(parts)}; next: {NEXT}"})


def paced_summary(ds: DisaggregatedSet, state: RolloutState, summary: JsonObject) -> JsonObject:
    """The served summary (`summary`) with the wave, and the phase a gate, a pause or an
    abort gives it (AtGate, Paused, Aborted: Suspended or Degraded in Argo CD, argocd/)."""
    if ds.policy is None:
        return summary
    decision = state_decision(ds, state)
    summary = {**summary, "wave": f"{decision.wave + 1}/{len(decision.waves)}"}
    stopped = stopped_reasons(decision, gitops=True)
    if stopped or decision.state == State.ABORTED:
        where = f"wave {decision.wave + 1} of {len(decision.waves)}"
        why = stopped[0] if stopped else f"{rollback_words(decision)}; next: {NEXT}"
        summary.update(phase=str(decision.state), message=f"{ds.name}: {where}; {why}")
    return summary
