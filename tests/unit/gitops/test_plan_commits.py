"""Issue 47: `rollout plan --gitops` promised 27 commits for a rollout that took 33 through git.
The promise is held to the count: a git rollout run to the end on a temporary repository, every
`rollout step --gitops --commit` and `rollout promote --gitops --commit` a commit, synced to the
in-memory cluster as Argo CD would sync it between commits."""

from __future__ import annotations

import pytest

from tests.fakes.argo import MemoryArgo
from tests.support.git_rollout import commits, git, roll_through_git, write


@pytest.mark.parametrize(("slices", "replicas", "policy"), [
    (4, {"prefill": 1, "decode": 3}, {"maxSlicesInFlight": 2, "waves": [{"slices": 1}, {"slices": "100%"}]}),
    (3, {"prefill": 2, "decode": 1}, {}),
    (12, {"prefill": 1, "decode": 1}, {"maxSlicesInFlight": 3, "waves": [{"slices": 1, "pause": {}},
                                                                         {"slices": "25%", "pause": {}},
                                                                         {"slices": "100%"}]}),
    # before: the step passing the soak committed wave 2's starts alone, one commit the plan missed
    (4, {"prefill": 1, "decode": 1}, {"maxSlicesInFlight": 2, "waves": [{"slices": 1, "pause": {"duration": "1s"}},
                                                                        {"slices": "100%"}]}),
    (6, {"prefill": 3, "decode": 1}, {"maxSlicesInFlight": 2, "waves": [{"slices": 2, "pause": {}},
                                                                        {"slices": "100%", "pause": {}}]}),
])
def test_the_plans_commit_count_is_what_the_git_rollout_commits(tmp_path, capsys, slices, replicas, policy):
    argo = MemoryArgo()
    git(tmp_path, "init", "-q", "-b", "main")
    write(tmp_path, "img:1", slices, replicas, policy)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "deploy")
    deploy: list[tuple[int, int]] = []
    roll_through_git(tmp_path, argo, capsys, promises=deploy)  # the first deploy
    end = commits(tmp_path)
    assert [(at, promise) for at, promise in deploy if end - at != promise] == [], (end, deploy, git(tmp_path, "log", "--format=%s"))
    write(tmp_path, "img:2", slices, replicas, policy)
    git(tmp_path, "commit", "-q", "-am", "img:2")
    promises: list[tuple[int, int]] = []
    roll_through_git(tmp_path, argo, capsys, promises=promises)
    end = commits(tmp_path)
    assert [(at, promise) for at, promise in promises if end - at != promise] == [], (end, promises, git(tmp_path, "log", "--format=%s"))


def test_the_plans_commit_count_holds_through_an_analysis_gate():
    """The same promise with an analysis gate (measured by a fake Prometheus, so stepped through
    gitops_step as `rollout step --gitops` steps): before, the step that passed the analysis
    committed wave 2's starts alone, one commit the plan missed (42 promised, 43 made)."""
    from dataclasses import replace

    from kubectl_disagg.core.delivery.analysis import Sample
    from kubectl_disagg.core.delivery.waves import promote
    from kubectl_disagg.rollout.git_step import Outcome, gitops_step
    from kubectl_disagg.gitops.waves import change_state
    from kubectl_disagg.rollout.analysis import GateAnalysis
    from kubectl_disagg.gitops.store import live_from_state
    from kubectl_disagg.rollout.plan import fleet_plan
    from tests.fakes.argo import deploy, round_trip
    from tests.fakes.clock import FakeClock
    from tests.support.gitops_pr import NOW, fleet_policy, llama, upgraded

    new = replace(upgraded(slices=12), policy=fleet_policy(12))
    argo, state = deploy(llama(slices=12))
    measure = GateAnalysis(lambda prometheus: (lambda query: (Sample(0.1),)), clock=FakeClock(wall=NOW))
    made, promises = 0, []
    for _ in range(200):
        argo.sync(new, state)
        argo.cluster.settle()
        promises.append((made, fleet_plan(new, state.position, live_from_state(new, state), NOW).commits))
        step = gitops_step(new, state, argo.snapshot(new), argo.served, now=NOW, analyze=measure)
        if step.outcome == Outcome.COMPLETE:
            break
        if step.outcome == Outcome.HELD:  # the pause: a person's promote, a commit
            state = round_trip(change_state(new, state, lambda d: promote(d, NOW, "alice"), NOW)[2], new)
        else:
            assert step.outcome == Outcome.ADVANCED, step
            state = round_trip(step.state, new)
        made += 1
    assert made == 43 and [(at, promise) for at, promise in promises if made - at != promise] == []
