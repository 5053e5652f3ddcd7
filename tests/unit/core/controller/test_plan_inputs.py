"""`core.controller.plan_inputs`: planner inputs from `rollout plan`'s flag vectors, or from a set and --from."""

from __future__ import annotations

import pytest

from kubectl_disagg.core.controller.plan_inputs import inputs_from_flags, inputs_from_set
from kubectl_disagg.core.controller.planner import PlanInputs
from kubectl_disagg.core.api.rollout_config import RolloutConfig
from kubectl_disagg.errors import UserError
from kubectl_disagg.views.plan import FLAGS
from tests.support.paths import EXAMPLES


def test_inputs_from_flags_resolves_every_role():
    assert inputs_from_flags("5,2", "6,2", "2", "0,1", "prefill,decode", FLAGS) == PlanInputs(
        roles=("prefill", "decode"),
        initial_old=(5, 2),
        target=(6, 2),
        configs=(RolloutConfig(2, 0), RolloutConfig(2, 1)),
    )


def test_inputs_from_flags_allows_spaces_after_commas():
    assert inputs_from_flags("5, 2", None, "1", "0", "prefill, decode", FLAGS).roles == ("prefill", "decode")


def test_inputs_from_flags_raises_user_error():
    with pytest.raises(UserError) as error:
        inputs_from_flags("5,2", None, "0", "0", None, FLAGS)
    assert error.value.lines() == [
        '--max-surge/--max-unavailable: role "role-0" has both 0; '
        "at least one must be positive so the rollout has room to surge or drain",
        '--max-surge/--max-unavailable: role "role-1" has both 0; '
        "at least one must be positive so the rollout has room to surge or drain",
    ]


def test_inputs_from_set():
    from tests.support.paths import load_sets

    (ds,) = load_sets([str(EXAMPLES / "percent-rollout.yaml")]).sets
    assert inputs_from_set(ds, "10,4", FLAGS) == PlanInputs(
        roles=("prefill", "decode"), initial_old=(10, 4), target=(10, 4),
        configs=(RolloutConfig(3, 1), RolloutConfig(1, 0)))
