"""Per-role rollout configuration (design §6): how far a role may surge and drain."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Starting point when a role says nothing: one extra group at a time, never below target.
DEFAULT_SURGE = 1
DEFAULT_UNAVAILABLE = 0
# Defaults the API server applies inside a present rollingUpdateConfiguration.
API_DEFAULT_MAX_SURGE = 0
API_DEFAULT_MAX_UNAVAILABLE = 1

_PERCENT = re.compile(r"^(\d+)%$")


@dataclass(frozen=True)
class RolloutConfig:
    """A role's resolved budgets: replicas it may run above target, and below it."""

    surge: int
    unavailable: int


class IntOrPercentError(ValueError):
    """A maxSurge/maxUnavailable value that is neither a non-negative int nor "NN%"."""


def scale_int_or_percent(value: int | str, total: int, round_up: bool) -> int:
    """Resolve an intstr against `total`, like apimachinery's GetScaledValueFromIntOrPercent."""
    if isinstance(value, bool):
        raise IntOrPercentError(f"must be an integer or a percentage, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise IntOrPercentError(f"must be non-negative, got {value}")
        return value
    if isinstance(value, str):
        match = _PERCENT.match(value)
        if not match:
            raise IntOrPercentError(f'must be an integer or a percentage like "25%", got {value!r}')
        percent = int(match.group(1))
        if percent > 100:
            raise IntOrPercentError(f"must not be greater than 100%, got {value!r}")
        if match.group(1) != str(percent):  # the CRD's rule: ^(100|[1-9]?[0-9])%$
            raise IntOrPercentError(f'must be a percentage without leading zeros, e.g. "5%", got {value!r}')
        exact = percent * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    raise IntOrPercentError(f"must be an integer or a percentage, got {type(value).__name__}")


def resolve_config(rolling_update: Mapping[str, Any] | None, target: int) -> RolloutConfig:
    """Surge and unavailable for one role, scaled against its target replicas.

    An absent configuration keeps the start values (surge 1, unavailable 0). A present one
    uses its values (API defaults maxSurge 0, maxUnavailable 1) when unavailable > 0, surge
    alone when only surge > 0, and the start values when both resolve to 0.
    """
    if rolling_update is None:
        return RolloutConfig(DEFAULT_SURGE, DEFAULT_UNAVAILABLE)
    surge = scale_int_or_percent(unless_null(rolling_update.get("maxSurge"), API_DEFAULT_MAX_SURGE), target, True)
    unavailable = scale_int_or_percent(
        unless_null(rolling_update.get("maxUnavailable"), API_DEFAULT_MAX_UNAVAILABLE), target, False
    )
    if unavailable > 0:
        return RolloutConfig(surge, unavailable)
    if surge > 0:
        return RolloutConfig(surge, 0)
    return RolloutConfig(DEFAULT_SURGE, DEFAULT_UNAVAILABLE)


def unless_null(value: int | str | None, default: int) -> int | str:
    """A null value is unset, as the API server reads it (it prunes the null, then defaults)."""
    return default if value is None else value
