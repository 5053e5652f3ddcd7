"""The analysis verdicts a step recorded, for people: the pull request's section and one line each.

A verdict is what core/analysis.gate_record wrote into the position (keyed by wave); a step
"recorded" those its position holds and the position before it did not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_disagg.core.delivery.position import Position
from kubectl_disagg.views.templating import render_template


def recorded_verdicts(before: Position | None, after: Position | None) -> list[dict[str, Any]]:
    """The verdicts new in the position `after` (by wave), as the template shows them (waves
    counted from 1), with what a failed one made of the rollout (`then`: aborted, paused)."""
    if after is None:
        return []
    earlier = before.verdicts if before is not None else {}
    out = []
    for wave, record in sorted(after.verdicts.items()):
        if earlier.get(wave) == record or not isinstance(record, Mapping):
            continue
        checks = []
        for check in record.get("checks") or []:
            checks.append({"name": check.get("check"), "role": check.get("role"),
                           "condition": check.get("successCondition"),
                           "measurements": [_measurement(m) for m in check.get("measurements") or []]})
        then = ("aborted" if after.aborted is not None and after.aborted.by == "analysis" else
                "paused" if after.paused is not None and after.paused.by == "analysis" else "")
        out.append({"wave": wave + 1, "phase": record.get("phase"), "message": record.get("message", ""),
                    "checks": checks, "then": then})
    return out


def _measurement(measurement: Mapping[str, Any]) -> str:
    """`21:54:05 0.3 (held)`: the time (UTC), the values or the error, and whether it held."""
    time = str(measurement.get("time", ""))[11:19]  # HH:MM:SS of the RFC 3339 time, UTC
    mark = "(held)" if measurement.get("ok") is True else "(missed)"
    if "error" in measurement:
        return f"{time} error: {measurement['error']} {mark}"
    values = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in measurement.get("values") or [])
    return f"{time} {values or 'no data'} {mark}"


def verdicts_markdown(verdicts: list[dict[str, Any]]) -> str:
    """The pull request's analysis section ("" without verdicts)."""
    return render_template("analysis_verdicts.md.j2", verdicts=verdicts) if verdicts else ""
