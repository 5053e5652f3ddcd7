"""Per-role rollout config (design §6) and intstr scaling."""

from __future__ import annotations

import pytest

from kubectl_disagg.core.api.rollout_config import (
    IntOrPercentError,
    RolloutConfig,
    resolve_config,
    scale_int_or_percent,
)


def test_absent_configuration_is_surge_one_unavailable_zero():
    assert resolve_config(None, 8) == RolloutConfig(1, 0)


def test_present_but_empty_configuration_takes_the_api_defaults():
    # maxSurge 0, maxUnavailable 1: unavailable > 0, so both values are used as they are.
    assert resolve_config({}, 8) == RolloutConfig(0, 1)


@pytest.mark.parametrize(
    "rolling_update, target, expected",
    [
        # surge rounds up: 25% of 5 = 1.25 -> 2; unavailable rounds down: 25% of 5 -> 1.
        ({"maxSurge": "25%", "maxUnavailable": "25%"}, 5, RolloutConfig(2, 1)),
        # 10% of 10,000 -> 1000 and 5% -> 500 exactly.
        ({"maxSurge": "10%", "maxUnavailable": "5%"}, 10_000, RolloutConfig(1000, 500)),
        # 1% of 3 = 0.03: surge still rounds up to 1, unavailable down to 0 -> surge alone.
        ({"maxSurge": "1%", "maxUnavailable": "1%"}, 3, RolloutConfig(1, 0)),
        # 100% of 3 both ways.
        ({"maxSurge": "100%", "maxUnavailable": "100%"}, 3, RolloutConfig(3, 3)),
        ({"maxSurge": 2, "maxUnavailable": 1}, 5, RolloutConfig(2, 1)),
        ({"maxSurge": 3}, 5, RolloutConfig(3, 1)),  # maxUnavailable defaults to 1
        ({"maxSurge": 3, "maxUnavailable": 0}, 5, RolloutConfig(3, 0)),  # surge only
        ({"maxUnavailable": 2}, 5, RolloutConfig(0, 2)),  # maxSurge defaults to 0
    ],
)
def test_percentages_and_ints_are_resolved_against_the_target(rolling_update, target, expected):
    assert resolve_config(rolling_update, target) == expected


@pytest.mark.parametrize(
    "rolling_update, target",
    [
        ({"maxSurge": 0, "maxUnavailable": 0}, 5),
        ({"maxSurge": "0%", "maxUnavailable": "0%"}, 5),
        # 10% of 5 unavailable rounds down to 0, with surge 0: both 0 once scaled.
        ({"maxSurge": 0, "maxUnavailable": "10%"}, 5),
        # Percentages of a zero target are 0 both ways.
        ({"maxSurge": "50%", "maxUnavailable": "50%"}, 0),
    ],
)
def test_both_zero_falls_back_to_surge_one(rolling_update, target):
    assert resolve_config(rolling_update, target) == RolloutConfig(1, 0)


@pytest.mark.parametrize(
    "value, total, round_up, expected",
    [
        (3, 10, True, 3),
        ("0%", 10, True, 0),
        ("33%", 10, True, 4),
        ("33%", 10, False, 3),
        ("50%", 4, True, 2),
        ("50%", 4, False, 2),
        ("100%", 7, False, 7),
    ],
)
def test_scale_int_or_percent(value, total, round_up, expected):
    assert scale_int_or_percent(value, total, round_up) == expected


@pytest.mark.parametrize("value", [-1, "101%", "-5%", "5", "5.5%", "%", 1.5, True, None])
def test_scale_int_or_percent_rejects_malformed_values(value):
    with pytest.raises(IntOrPercentError):
        scale_int_or_percent(value, 10, True)
