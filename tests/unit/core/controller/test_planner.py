"""The design §5 planner: hand-derived trajectories, single-step rules, and properties.

Every expected trajectory below was worked out by hand from the design §5 rules (the derivation is
in the comment above it), not captured from the implementation. Notation: (old|new) per role,
T = totalSteps, k/m the interpolation indices, SU/PD/DS/FD = scale up / proportional drain /
drain+scale / final drain.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_disagg.core.controller.planner import (
    PlanDidNotConverge,
    Step,
    StepKind,
    batch_size,
    find_position,
    next_step,
    plan,
    step_cap,
    total_steps,
)
from kubectl_disagg.core.api.rollout_config import RolloutConfig

INITIAL = StepKind.INITIAL
SU = StepKind.SCALE_UP
PD = StepKind.PROPORTIONAL_DRAIN
DS = StepKind.DRAIN_AND_SCALE
FD = StepKind.FINAL_DRAIN


def cfg(surge: int, unavailable: int) -> RolloutConfig:
    return RolloutConfig(surge, unavailable)


def trajectory(steps: list[Step]) -> list[tuple[tuple[int, ...], tuple[int, ...], StepKind]]:
    return [(step.old, step.new, step.kind) for step in steps]


# --- the spec's worked check ------------------------------------------------------------------


def test_worked_check_from_the_spec():
    # design §5: two roles (5,2) -> (5,2), surge 2, unavailable 1 each.
    steps = plan((5, 2), (5, 2), [cfg(2, 1), cfg(2, 1)])
    assert [(s.old, s.new) for s in steps] == [
        ((5, 2), (0, 0)),
        ((5, 2), (2, 1)),
        ((4, 2), (2, 1)),
        ((3, 2), (4, 2)),
        ((2, 1), (4, 2)),
        ((2, 1), (5, 2)),
        ((0, 0), (5, 2)),
    ]
    # batch 2 each, T = max(ceil(5/2), ceil(2/2)) = 3.
    # (5,2|0,0): k=1, new=(ceil(5/3),ceil(2/3))=(2,1); 5+2<=7, 2+1<=4 -> SU.
    # (5,2|2,1): k=min(6//5, 3//2)+1=2, new=(4,2); 5+4>7. m=0: old=(5-5//3, 2-2//3)=(4,2) -> PD.
    # (4,2|2,1): same new=(4,2), 4+4>7; m=0 again gives (4,2), no drain.
    #   d=(min(4,7-4), min(2,4-2))=(3,2), floors (5-1-4, 2-1-2) -> 0 -> DS to (3,2|4,2).
    # (3,2|4,2): k=min(12//5, 6//2)+1=3, new=(5,2); 3+5>7. m=max(6//5, 0)=1:
    #   old=(5-10//3, 2-4//3)=(2,1), floor 0 -> PD.
    # (2,1|4,2): 2+5<=7, 1+2<=4 -> SU. (2,1|5,2): every new at target -> FD.
    assert [s.kind for s in steps] == [INITIAL, SU, PD, DS, PD, SU, FD]


# --- hand-derived trajectories ------------------------------------------------------------------


def test_equal_sizes_surge_one():
    # (3,3) -> (3,3), surge 1 / unavailable 0: batch 1, T = 3, the roles move in lockstep.
    # (3,3|0,0): k=1 -> new 1 each; 3+1<=4 -> SU.
    # (3,3|1,1): k=2 -> new 2; 3+2>4. floor 3-0-1=2; m=0: old 3-1=2 -> PD.
    # (2,2|1,1): 2+2<=4 -> SU.
    # (2,2|2,2): k=3 -> new 3; 2+3>4. floor 3-0-2=1; m=1: old 3-2=1 -> PD.
    # (1,1|2,2): 1+3<=4 -> SU. (1,1|3,3): FD.
    assert trajectory(plan((3, 3), (3, 3), [cfg(1, 0)] * 2)) == [
        ((3, 3), (0, 0), INITIAL),
        ((3, 3), (1, 1), SU),
        ((2, 2), (1, 1), PD),
        ((2, 2), (2, 2), SU),
        ((1, 1), (2, 2), PD),
        ((1, 1), (3, 3), SU),
        ((0, 0), (3, 3), FD),
    ]


def test_asymmetric_ten_to_one_keeps_the_small_role_until_the_end():
    # (10,1) -> (10,1), surge 1 / unavailable 0: T = 10.
    # (10,1|0,0): k=1 -> new (1, ceil(1/10)=1); 11<=11, 2<=2 -> SU.
    # After SU to (11-j,1|j,1): k=j+1 would need 11-j+j+1 = 12 > 11, so drain.
    #   m = j-1 -> old0 = 10-j (= floor 10-0-j), old1 = 1 - j//10 = 1 for j<10 -> PD (10-j,1|j,1).
    # Then k = min(j, 10)+1 -> new0 = j+1 and (10-j)+(j+1) = 11 -> SU. Repeats up to j = 9.
    # (1,1|10,1): FD. The one decode group stays until prefill is all new.
    expected = [((10, 1), (0, 0), INITIAL), ((10, 1), (1, 1), SU)]
    for j in range(1, 10):
        expected.append(((10 - j, 1), (j, 1), PD))
        expected.append(((10 - j, 1), (j + 1, 1), SU))
    expected.append(((0, 0), (10, 1), FD))
    assert trajectory(plan((10, 1), (10, 1), [cfg(1, 0)] * 2)) == expected


def test_scale_up_four_to_six():
    # (4,2) -> (6,2), surge 1 / unavailable 0: T = max(6, 2) = 6.
    # (4,2|0,0): k=1 -> new (1, ceil(2/6)=1); 5<=7, 3<=3 -> SU.
    # (4,2|1,1): k=min(1, 3)+1=2 -> (2, ceil(4/6)=1); 6<=7 -> SU.
    # (4,2|2,1): k=3 -> (3, 1); 7<=7 -> SU.
    # (4,2|3,1): k=4 -> (4, ceil(8/6)=2); 4+4>7. m=0: old (4-4//6, 2-2//6) = (4,2): no drain.
    #   d = (min(4, 7-4), min(2, 3-2)) = (3,1); decode floor max(0, 2-0-2) = 0 -> DS (3,1|4,2).
    # (3,1|4,2): k=min(4, 6)+1=5 -> (5,2); 3+5>7. m=max(trunc(1*6/4)=1, trunc(1*6/2)=3)=3:
    #   old (4-16//6, 2-8//6) = (2,1) -> PD.
    # (2,1|4,2): 2+5<=7, 1+2<=3 -> SU to (2,1|5,2).
    # (2,1|5,2): k=6 -> (6,2); 2+6>7. m=3 again -> (2,1), no drain.
    #   d = (min(2, 7-6), min(1, 3-2)) = (1,1) -> DS (1,1|6,2). Then FD.
    assert trajectory(plan((4, 2), (6, 2), [cfg(1, 0)] * 2)) == [
        ((4, 2), (0, 0), INITIAL),
        ((4, 2), (1, 1), SU),
        ((4, 2), (2, 1), SU),
        ((4, 2), (3, 1), SU),
        ((3, 1), (4, 2), DS),
        ((2, 1), (4, 2), PD),
        ((2, 1), (5, 2), SU),
        ((1, 1), (6, 2), DS),
        ((0, 0), (6, 2), FD),
    ]


def test_scale_down_five_to_two():
    # (5,2) -> (2,2), surge 1 / unavailable 0: T = max(5, 2) = 5. Floors: 2-0-new each.
    # (5,2|0,0): new (ceil(2/5)=1, 1); 5+1>3. m=0: old (5-1, 2-0) = (4,2) -> PD.
    # (4,2|0,0): 4+1>3. m=1: (5-2, 2-4//5) = (3,2) -> PD.
    # (3,2|0,0): 3+1>3. m=2: (5-3, 2-6//5) = (2,1), floor (2,2) -> (2,2) -> PD.
    # (2,2|0,0): 2+1<=3 twice -> SU (2,2|1,1).
    # (2,2|1,1): k=min(trunc(5/2)=2, 2)+1=3 -> (ceil(6/5)=2, 2); 2+2>3.
    #   floor 2-0-1=1; m=max(3*5//5, 0)=3: (5-4, 2-8//5) = (1,1) -> PD.
    # (1,1|1,1): 1+2<=3 -> SU. (1,1|2,2): FD.
    assert trajectory(plan((5, 2), (2, 2), [cfg(1, 0)] * 2)) == [
        ((5, 2), (0, 0), INITIAL),
        ((4, 2), (0, 0), PD),
        ((3, 2), (0, 0), PD),
        ((2, 2), (0, 0), PD),
        ((2, 2), (1, 1), SU),
        ((1, 1), (1, 1), PD),
        ((1, 1), (2, 2), SU),
        ((0, 0), (2, 2), FD),
    ]


def test_mixed_three_five_to_five_three():
    # (3,5) -> (5,3), surge 1 / unavailable 0: T = 5. Role 0 grows (no floor), role 1
    # shrinks (floor 3-0-new).
    # (3,5|0,0): new (1,1); 5+1>4. m=0: (3-3//5, 5-1) = (3,4) -> PD.
    # (3,4|0,0): 4+1>4. m=1: (3-6//5, 5-2) = (2,3) -> PD.
    # (2,3|0,0): 2+1<=6, 3+1<=4 -> SU (2,3|1,1).
    # (2,3|1,1): k=min(1, trunc(5/3)=1)+1=2 -> (2, ceil(6/5)=2); 3+2>4.
    #   floor1 = 3-0-1 = 2; m=max(trunc(5/3)=1, 2)=2: (3-9//5, 5-3) = (2,2) -> PD.
    # (2,2|1,1): 2+2<=6, 2+2<=4 -> SU (2,2|2,2).
    # (2,2|2,2): k=min(2, trunc(10/3)=3)+1=3 -> (3, ceil(9/5)=2); 5<=6, 4<=4 -> SU.
    # (2,2|3,2): k=min(3, 3)+1=4 -> (4, ceil(12/5)=3); 2+3>4.
    #   floor1 = 3-0-2 = 1; m=max(1, 3)=3: (3-12//5, 5-4) = (1,1) -> PD.
    # (1,1|3,2): 5<=6, 4<=4 -> SU (1,1|4,3).
    # (1,1|4,3): k=min(4, 5)+1=5 -> (5,3); 6<=6, 4<=4 -> SU. (1,1|5,3): FD.
    assert trajectory(plan((3, 5), (5, 3), [cfg(1, 0)] * 2)) == [
        ((3, 5), (0, 0), INITIAL),
        ((3, 4), (0, 0), PD),
        ((2, 3), (0, 0), PD),
        ((2, 3), (1, 1), SU),
        ((2, 2), (1, 1), PD),
        ((2, 2), (2, 2), SU),
        ((2, 2), (3, 2), SU),
        ((1, 1), (3, 2), PD),
        ((1, 1), (4, 3), SU),
        ((1, 1), (5, 3), SU),
        ((0, 0), (5, 3), FD),
    ]


def test_surge_only():
    # (4,2) -> (4,2), surge 2 / unavailable 0: batch 2, T = max(2, 1) = 2.
    # (4,2|0,0): k=1 -> (2,1); 6<=6, 3<=4 -> SU.
    # (4,2|2,1): k=min(1, 1)+1=2 -> (4,2); 8>6. floors (4-0-2, 2-0-1) = (2,1);
    #   m=0: (4-4//2, 2-2//2) = (2,1) -> PD.
    # (2,1|2,1): 2+4<=6, 1+2<=4 -> SU. (2,1|4,2): FD.
    assert trajectory(plan((4, 2), (4, 2), [cfg(2, 0)] * 2)) == [
        ((4, 2), (0, 0), INITIAL),
        ((4, 2), (2, 1), SU),
        ((2, 1), (2, 1), PD),
        ((2, 1), (4, 2), SU),
        ((0, 0), (4, 2), FD),
    ]


def test_unavailable_only_drains_first_and_ends_on_a_scale_up():
    # (3,3) -> (3,3), surge 0 / unavailable 1: batch max(1,1) = 1, T = 3; no room above target.
    # (3,3|0,0): new 1; 3+1>3. floor 3-1-0=2; m=0: 3-1=2 -> PD.
    # (2,2|0,0): 2+1<=3 -> SU.
    # (2,2|1,1): new 2; 4>3. floor 3-1-1=1; m=1: 3-2=1 -> PD.
    # (1,1|1,1): 1+2<=3 -> SU.
    # (1,1|2,2): new 3; 4>3. floor 3-1-2=0; m=2: 3-3=0 -> (0,0); every role 0 -> no orphan -> PD.
    # (0,0|2,2): not done (new<target); k=3 -> (3,3); 0+3<=3 -> SU. Then done: no final drain.
    assert trajectory(plan((3, 3), (3, 3), [cfg(0, 1)] * 2)) == [
        ((3, 3), (0, 0), INITIAL),
        ((2, 2), (0, 0), PD),
        ((2, 2), (1, 1), SU),
        ((1, 1), (1, 1), PD),
        ((1, 1), (2, 2), SU),
        ((0, 0), (2, 2), PD),
        ((0, 0), (3, 3), SU),
    ]


def test_orphan_prevention_drains_the_whole_old_revision_at_once():
    # (4,1) -> (4,1), surge 0 / unavailable 2: batch (2, 2), T = max(2, 1) = 2.
    # (4,1|0,0): new (2, ceil(1/2)=1); 4+2>4. floors (4-2-0, 0) = (2,0);
    #   m=0: (4-4//2, 1-1//2) = (2,1) -> PD.
    # (2,1|0,0): new (2,1); 1+1>1. m=max(trunc(2*2/4)=1, 0)=1: (4-4, 1-2//2) = (0,0),
    #   floor -> (2,0). Orphan: decode 0, prefill 2; prefill new 0 < 4-2, so keep one -> (2,1):
    #   no drain. Rule 3: d = (min(2, 4-2), min(1, 1-1)) = (2,0), prefill floor 4-2-2=0.
    #   Orphan with next new (2,1): prefill 2 >= 4-2, decode 1 >= 1-2 -> drain all -> (0,0).
    #   DS (0,0|2,1).
    # (0,0|2,1): k=min(trunc(4/4)=1, 2)+1=2 -> (4,1); 4<=4, 1<=1 -> SU. Done.
    assert trajectory(plan((4, 1), (4, 1), [cfg(0, 2)] * 2)) == [
        ((4, 1), (0, 0), INITIAL),
        ((2, 1), (0, 0), PD),
        ((0, 0), (2, 1), DS),
        ((0, 0), (4, 1), SU),
    ]


def test_fresh_deploy_from_zero_only_scales_up():
    # (0,0) -> (3,2), surge 1 / unavailable 0: T = 3, nothing to drain.
    # k=1 -> (1, ceil(2/3)=1); k=min(1, trunc(3/2)=1)+1=2 -> (2, ceil(4/3)=2);
    # k=min(2, 3)+1=3 -> (3, 2). Old stays 0, new reaches target: done, no final drain.
    assert trajectory(plan((0, 0), (3, 2), [cfg(1, 0)] * 2)) == [
        ((0, 0), (0, 0), INITIAL),
        ((0, 0), (1, 1), SU),
        ((0, 0), (2, 2), SU),
        ((0, 0), (3, 2), SU),
    ]


def test_all_zeros_is_done_before_it_starts():
    # old all 0 and new (0) >= target (0): done at once.
    assert trajectory(plan((0, 0), (0, 0), [cfg(1, 0)] * 2)) == [((0, 0), (0, 0), INITIAL)]


def test_three_roles():
    # (2,4,1) -> (2,4,1), surge 1 / unavailable 0: T = 4. Floors: target - new.
    # (2,4,1|0,0,0): k=1 -> (ceil(2/4), 1, ceil(1/4)) = (1,1,1); 3<=3, 5<=5, 2<=2 -> SU.
    # (2,4,1|1,1,1): k=min(2, 1, 4)+1=2 -> (1, 2, 1); 4+2>5.
    #   m=0: (2-2//4, 4-1, 1-1//4) = (2,3,1), floors (1,3,0) -> PD.
    # (2,3,1|1,1,1): 3<=3, 5<=5, 2<=2 -> SU (2,3,1|1,2,1).
    # (2,3,1|1,2,1): k=min(2, 2, 4)+1=3 -> (ceil(6/4)=2, 3, 1); 2+2>3.
    #   m=max(0, trunc(1*4/4)=1, 0)=1: (2-4//4, 4-2, 1-2//4) = (1,2,1), floors (1,2,0) -> PD.
    # (1,2,1|1,2,1): 3<=3, 5<=5 -> SU (1,2,1|2,3,1).
    # (1,2,1|2,3,1): k=min(4, 3, 4)+1=4 -> (2,4,1); 2+4>5.
    #   m=max(trunc(4/2)=2, trunc(8/4)=2, 0)=2: (2-6//4, 4-3, 1-3//4) = (1,1,1) -> PD.
    # (1,1,1|2,3,1): 3<=3, 5<=5 -> SU. (1,1,1|2,4,1): FD.
    assert trajectory(plan((2, 4, 1), (2, 4, 1), [cfg(1, 0)] * 3)) == [
        ((2, 4, 1), (0, 0, 0), INITIAL),
        ((2, 4, 1), (1, 1, 1), SU),
        ((2, 3, 1), (1, 1, 1), PD),
        ((2, 3, 1), (1, 2, 1), SU),
        ((1, 2, 1), (1, 2, 1), PD),
        ((1, 2, 1), (2, 3, 1), SU),
        ((1, 1, 1), (2, 3, 1), PD),
        ((1, 1, 1), (2, 4, 1), SU),
        ((0, 0, 0), (2, 4, 1), FD),
    ]


def test_four_roles_with_a_removed_and_an_added_role():
    # initial (2,2,1,0) -> target (2,2,0,1): role 2 is removed, role 3 added. Surge 1 / unav 0.
    # T = max(2, 2, 1, 1) = 2.
    # k = min(0, 0, T (target 0), 0)+1 = 1 -> new (1,1,0,1); roles with target > 0 fit -> SU.
    # (2,2,1,0|1,1,0,1): k=min(1, 1, 2, 2)+1=2 -> (2,2,0,1); 2+2>3.
    #   m=0 over roles 0..2: (2-1, 2-1, 1-1//2, 0) = (1,1,1,0), floors (1,1,0,0) -> PD.
    #   (The removed role keeps its one group: it drains with the rest, not before.)
    # (1,1,1,0|1,1,0,1): 1+2<=3 twice, 0+1<=2 -> SU. Every new at target -> FD.
    assert trajectory(plan((2, 2, 1, 0), (2, 2, 0, 1), [cfg(1, 0)] * 4)) == [
        ((2, 2, 1, 0), (0, 0, 0, 0), INITIAL),
        ((2, 2, 1, 0), (1, 1, 0, 1), SU),
        ((1, 1, 1, 0), (1, 1, 0, 1), PD),
        ((1, 1, 1, 0), (2, 2, 0, 1), SU),
        ((0, 0, 0, 0), (2, 2, 0, 1), FD),
    ]


def test_removed_role_does_not_hold_back_scale_up():
    # initial (2,3) -> target (2,0): role 1 is removed. Surge 1 / unavailable 0, T = max(2, 3) = 3.
    # (2,3|0,0): k = min(0, T)+1 = 1 -> new (ceil(2/3)=1, 0). Only role 0 is surge-checked
    #   (2+1 <= 3); role 1's 3 old would exceed 0+1 but target-0 roles only drain -> SU.
    # (2,3|1,0): k=min(trunc(3/2)=1, 3)+1=2 -> (2,0); 2+2>3. floors (2-0-1, 0) = (1,0);
    #   m=0: (2-2//3, 3-3//3) = (2,2) -> PD.
    # (2,2|1,0): m=max(0, trunc(1*3/3)=1)=1: (2-4//3, 3-6//3) = (1,1) -> PD.
    # (1,1|1,0): 1+2<=3 -> SU. (1,1|2,0): FD.
    assert trajectory(plan((2, 3), (2, 0), [cfg(1, 0)] * 2)) == [
        ((2, 3), (0, 0), INITIAL),
        ((2, 3), (1, 0), SU),
        ((2, 2), (1, 0), PD),
        ((1, 1), (1, 0), PD),
        ((1, 1), (2, 0), SU),
        ((0, 0), (2, 0), FD),
    ]


def test_per_role_configs_differ():
    # prefill (surge 0, unavailable 1) next to decode (surge 1, unavailable 0), both 1 -> 1.
    # T = max(ceil(1/1), ceil(1/1)) = 1. (1,1|0,0): new (1,1); prefill 1+1 > 1+0.
    #   floors (1-1-0, 1-0-0) = (0,1); m=0: (1-1, 1-1) = (0,0) -> (0,1); orphan: decode new
    #   0 < 1, keep one -> (1,1): no drain. Rule 3: d = (min(1, 1-1), min(1, 2-1)) = (0,1);
    #   orphan with next new (1,1): 1 >= 0 and 1 >= 1 -> drain all -> DS (0,0|1,1).
    assert trajectory(plan((1, 1), (1, 1), [cfg(0, 1), cfg(1, 0)])) == [
        ((1, 1), (0, 0), INITIAL),
        ((0, 0), (1, 1), DS),
    ]


# --- next_step: single rules ----------------------------------------------------------------------


def test_next_step_is_none_when_done():
    assert next_step((5, 2), (0, 0), (5, 2), (5, 2), [cfg(1, 0)] * 2) is None


def test_next_step_is_none_when_new_exceeds_target_and_old_is_gone():
    # "done" is new >= target, so a role left above target (a scale-down after the fact) is done.
    assert next_step((5, 2), (0, 0), (6, 2), (5, 2), [cfg(1, 0)] * 2) is None


def test_correction_clamps_old_to_initial_and_keeps_new():
    # Someone scaled the old LWS up mid-rollout: clamp before anything else, even if done-ish.
    step = next_step((3, 2), (4, 1), (1, 1), (3, 2), [cfg(1, 0)] * 2)
    assert step == Step((3, 1), (1, 1), StepKind.CORRECTION)


def test_final_drain_when_every_new_is_at_target():
    step = next_step((3, 2), (2, 2), (3, 2), (3, 2), [cfg(1, 0)] * 2)
    assert step == Step((0, 0), (3, 2), StepKind.FINAL_DRAIN)


def test_total_steps_zero_means_nothing_to_plan():
    # initial and target all 0 but a stray old replica: design §5 returns None (totalSteps == 0).
    assert next_step((0, 0), (1, 0), (0, 0), (0, 0), [cfg(1, 0)] * 2) is None


def test_next_step_from_a_live_state_mid_plan_matches_the_plan():
    steps = plan((5, 2), (5, 2), [cfg(2, 1)] * 2)
    for before, after in zip(steps, steps[1:]):
        assert next_step((5, 2), before.old, before.new, (5, 2), [cfg(2, 1)] * 2) == after


def test_off_plan_live_state_can_raise_old_back_to_the_unavailability_floor():
    # design §5 as written: rule 2 applies max(nextOld, minOld) after the min with currentOld, so a
    # live state below the floor (here decode drained by hand to 1) gets old scaled back up.
    # (4,4) -> (4,4), surge 1 / unavailable 0, T = 4, live (4,1|1,1): k=2 -> new (2,2), 4+2>5.
    # floors 4-0-1 = 3 each; m = max(0, trunc(3*4/4)=3) = 3: (4-4, 4-4) = (0,0) -> (3,3).
    step = next_step((4, 4), (4, 1), (1, 1), (4, 4), [cfg(1, 0)] * 2)
    assert step == Step((3, 3), (1, 1), StepKind.PROPORTIONAL_DRAIN)


def test_new_never_shrinks_even_above_target():
    # A role removed mid-rollout (target 0) that already has 1 new replica keeps it; only the
    # other role grows. (0,0) -> (0,1), live (0,0|1,0), surge 1 / unavailable 0: T = 1,
    # k = 1 + min(T for target 0, 0) = 1 -> (max(0, 1), ceil(1/1)) = (1,1); role 1: 0+1 <= 2 -> SU.
    step = next_step((0, 0), (0, 0), (1, 0), (0, 1), [cfg(1, 0)] * 2)
    assert step == Step((0, 0), (1, 1), StepKind.SCALE_UP)


def test_drain_and_scale_keeps_the_availability_floor_off_plan():
    # (1,3) -> (1,3), surge 0 / unavailable 1 (batch 1, T = 3); live (1,0|0,0): decode's old
    # drained by hand. new (ceil(1/3), ceil(3/3)) = (1,1); prefill 1+1 > 1 blocks rule 1.
    # Rule 2: m = 1 + max(0, 3) = 4 -> (0, 0), floors (0, 3-1-0=2) -> (0,2); orphan: decode new
    #   0 < 2, so prefill keeps one -> (1,2): nothing drops below current (1,0).
    # Rule 3: d = (min(1, 1-1), min(0, 3-1)) = (0,0), decode floor 3-1-1 = 1 -> (0,1);
    #   orphan with next new (1,1): decode 1 < 2 -> prefill keeps one -> (1,1).
    step = next_step((1, 3), (1, 0), (0, 0), (1, 3), [cfg(0, 1)] * 2)
    assert step == Step((1, 1), (1, 1), StepKind.DRAIN_AND_SCALE)


def test_new_above_target_stalls_the_plan_with_old_left():
    # design §5 as written: prefill's target was lowered below its new count mid-rollout.
    # (0,1) -> (1,1), live (0,1|3,0), surge 1 / unavailable 0: T = 1, next new = (3, 1),
    # 0+3 > 1+1 blocks rule 1; decode's floor 1-0-0 = 1 keeps its old in rule 2; rule 3:
    # d = (max(0, min(0, 2-3)), min(1, 2-1)) = (0,1) drains nothing -> None, with decode
    # still on its one old replica and no new one.
    assert next_step((0, 1), (0, 1), (3, 0), (1, 1), [cfg(1, 0)] * 2) is None


def test_next_step_accepts_lists():
    step = next_step([5, 2], [5, 2], [0, 0], [5, 2], [cfg(2, 1)] * 2)
    assert step == Step((5, 2), (2, 1), StepKind.SCALE_UP)


@pytest.mark.parametrize(
    "initial_old, current_old, current_new, target, configs",
    [
        ((1, 2), (1, 2), (0, 0), (1,), [cfg(1, 0)] * 2),
        ((1, 2), (1, 2), (0, 0), (1, 2), [cfg(1, 0)]),
        ((1, -2), (1, 2), (0, 0), (1, 2), [cfg(1, 0)] * 2),
        ((1, 2), (1, 2), (0, 0), (1, 2), [cfg(-1, 0)] * 2),
    ],
)
def test_next_step_rejects_malformed_vectors(initial_old, current_old, current_new, target, configs):
    with pytest.raises(ValueError):
        next_step(initial_old, current_old, current_new, target, configs)


# --- arithmetic helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config, batch",
    [(cfg(2, 1), 2), (cfg(0, 3), 3), (cfg(0, 0), 1), (cfg(1, 0), 1)],
)
def test_batch_size(config, batch):
    assert batch_size(config) == batch


def test_total_steps_is_the_slowest_role():
    # ceil(5/2)=3 and ceil(7/3)=3 and ceil(1/1)=1 -> 3; then a bigger target dominates: ceil(10/2)=5.
    assert total_steps((5, 7, 1), (5, 7, 1), [cfg(2, 0), cfg(0, 3), cfg(1, 0)]) == 3
    assert total_steps((5, 7, 1), (10, 7, 1), [cfg(2, 0), cfg(0, 3), cfg(1, 0)]) == 5


def test_large_counts_use_exact_arithmetic():
    # target t = 10**17 + 1, surge 10**16 + 1 -> T = ceil(t / surge) = 10. With new at 3·10**16,
    # new·T/t = 2.99999999999999997: trunc is 2, so k = 3 and next new = ceil(3t/10) = 3·10**16 + 1.
    # In floats t rounds to 10**17, the ratio to exactly 3.0, and k would wrongly be 4.
    t = 10**17 + 1
    step = next_step((t, 1), (0, 0), (3 * 10**16, 1), (t, 1), [cfg(10**16 + 1, 0), cfg(1, 0)])
    assert step == Step((0, 0), (3 * 10**16 + 1, 1), StepKind.SCALE_UP)


# --- plan cap and position -----------------------------------------------------------------------------


def test_step_cap():
    assert step_cap((5, 2), (6, 1)) == 4 * 6 + 10
    assert step_cap((0, 0), (0, 0)) == 10


@pytest.mark.parametrize("transitions, converges", [(18, True), (19, False)])
def test_plan_allows_exactly_the_cap(monkeypatch, transitions, converges):
    import kubectl_disagg.core.controller.planner as planner

    # Stand-in planner that takes `transitions` steps: the cap for (2,1) -> (2,1) is 4·2+10 = 18.
    def advance_by_one(rollout, old, new):
        taken = new[0]
        return Step(old, (taken + 1, 0), SU) if taken < transitions else None

    monkeypatch.setattr(planner, "_advance", advance_by_one)
    if converges:
        assert len(planner.plan((2, 1), (2, 1), [cfg(1, 0)] * 2)) == 1 + transitions
    else:
        with pytest.raises(PlanDidNotConverge, match="did not converge within 18 steps"):
            planner.plan((2, 1), (2, 1), [cfg(1, 0)] * 2)


def test_find_position():
    steps = plan((5, 2), (5, 2), [cfg(2, 1)] * 2)
    assert find_position(steps, (5, 2), (0, 0)) == 0
    assert find_position(steps, [3, 2], [4, 2]) == 3
    assert find_position(steps, (0, 0), (5, 2)) == len(steps) - 1
    # A partly applied step (new scaled, old not yet drained) is not on the plan.
    assert find_position(steps, (4, 2), (4, 2)) is None


# --- properties ------------------------------------------------------------------------------------------


@st.composite
def rollouts(draw):
    roles = draw(st.integers(min_value=2, max_value=5))
    counts = st.integers(min_value=0, max_value=60)
    initial_old = tuple(draw(counts) for _ in range(roles))
    target = tuple(draw(counts) for _ in range(roles))
    configs = []
    for _ in range(roles):
        surge = draw(st.integers(min_value=0, max_value=12))
        # Resolved configs never have both 0 (design §6 falls back to 1/0).
        unavailable = draw(st.integers(min_value=0 if surge else 1, max_value=12))
        configs.append(cfg(surge, unavailable))
    return initial_old, target, configs


@settings(max_examples=400, deadline=None)
@given(rollouts())
def test_property_plan_reaches_target_within_the_cap(rollout):
    initial_old, target, configs = rollout
    steps = plan(initial_old, target, configs)
    assert len(steps) - 1 <= step_cap(initial_old, target)
    assert steps[0] == Step(initial_old, (0,) * len(target), StepKind.INITIAL)
    assert all(count == 0 for count in steps[-1].old)
    assert steps[-1].new == target


@settings(max_examples=400, deadline=None)
@given(rollouts())
def test_property_new_never_shrinks_and_old_never_grows(rollout):
    steps = plan(*rollout)
    for before, after in zip(steps, steps[1:]):
        assert all(b <= a for b, a in zip(before.new, after.new)), (before, after)
        assert all(a <= b for b, a in zip(before.old, after.old)), (before, after)
        assert (before.old, before.new) != (after.old, after.new), f"no progress at {after}"


@settings(max_examples=400, deadline=None)
@given(rollouts())
def test_property_no_role_is_orphaned_before_the_final_drain(rollout):
    initial_old, _, _ = rollout
    for step in plan(*rollout)[1:]:
        if step.kind == StepKind.FINAL_DRAIN:
            continue
        draining = [old for old, initial in zip(step.old, initial_old) if initial > 0]
        assert not (0 in draining and any(draining)), step


@settings(max_examples=200, deadline=None)
@given(rollouts())
def test_property_every_state_is_found_at_its_own_position(rollout):
    steps = plan(*rollout)
    for index, step in enumerate(steps):
        assert find_position(steps, step.old, step.new) == index
