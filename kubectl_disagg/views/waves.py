"""A RolloutPolicy's waves and gates as `rollout plan` shows them, over the set's slices: lines
for the table, a bar per wave for -o chart, a list for -o yaml|json. Pure."""

from __future__ import annotations

from typing import Any

from kubectl_disagg.core.api.durations import format_duration
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.policy import resolve_waves
from kubectl_disagg.core.api.policy_types import ResolvedWave, RolloutPolicy
from kubectl_disagg.views.invocation import GENERIC, Invocation
from kubectl_disagg.views.templating import table

BAR = "█"


def slice_range(start: int, end: int) -> str:
    if end - start <= 0:
        return "no new slice"
    return f"slice {start}" if end - start == 1 else f"slices {start}-{end - 1}"


def gate_words(wave: ResolvedWave, invocation: Invocation = GENERIC) -> str:
    """The gates after `wave`; the command that passes a pause spelled as the user invoked us."""
    gates: list[str] = []
    if wave.analysis:
        gates.append(f"analysis {', '.join(wave.analysis)}")
    if wave.pause:
        gates.append(f"a {format_duration(wave.duration)} soak" if wave.duration is not None
                     else f"a pause until `{invocation.command('promote')}`")
    return ", then ".join(gates) or "none"


def _policy(ds: DisaggregatedSet) -> RolloutPolicy:
    assert ds.policy is not None  # the paced sets only (views/plan.py)
    return ds.policy


def waves_document(ds: DisaggregatedSet) -> dict[str, Any]:
    """-o yaml|json: the policy's waves resolved for the set."""
    policy = _policy(ds)
    return {"set": ds.name, "maxSlicesInFlight": policy.budget(ds.slices), "onFailure": policy.on_failure,
            "waves": [{"wave": w.index + 1, "slices": list(w.slices), "analysis": list(w.analysis),
                       "pause": None if not w.pause else ({"duration": format_duration(w.duration)}
                                                          if w.duration is not None else {})}
                      for w in resolve_waves(policy, ds.slices)]}


def waves_lines(ds: DisaggregatedSet, chart: bool = False, width: int = 60,
                invocation: Invocation = GENERIC) -> list[str]:
    """The waves as a table (WAVE, SLICES, GATES AFTER IT); with `chart`, a bar of each wave's
    share of the slices beside it."""
    policy = _policy(ds)
    waves = resolve_waves(policy, ds.slices)
    budget = policy.budget(ds.slices)
    head = (f"disaggregatedset/{ds.name} RolloutPolicy {policy.name}: {len(waves)} wave"
            f"{'' if len(waves) == 1 else 's'}, {'no limit on' if budget is None else f'at most {budget}'} slices "
            f"in flight, a failed check does {policy.on_failure}")
    rows: list[list[object]] = []
    for wave in waves:
        row = [wave.index + 1, slice_range(wave.start, wave.end), gate_words(wave, invocation) if wave is not waves[-1] else "-"]
        if chart:
            cells = max(1, round(width * (wave.end - wave.start) / max(ds.slices, 1))) if wave.end > wave.start else 0
            row.insert(2, " " * round(width * wave.start / max(ds.slices, 1)) + BAR * cells)
        rows.append(row)
    headers = ["WAVE", "SLICES", *(["SLICES 0.." + str(max(ds.slices - 1, 0))] if chart else []), "GATES AFTER IT"]
    return [head, *table(headers, rows, indent="  ", right=(0,)), ""]
