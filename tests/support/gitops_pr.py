"""The scenario the git rollout PR views are written from, and where their golden texts are."""

from __future__ import annotations

import datetime
import functools
from dataclasses import replace

from kubectl_disagg.core.delivery.analysis import Analysis, Check, Condition, Prometheus, Sample
from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.core.delivery.sets import load_sets
from kubectl_disagg.core.delivery.waves import promote
from kubectl_disagg.rollout.git_step import Outcome, gitops_step
from kubectl_disagg.gitops.waves import change_state
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from kubectl_disagg.rollout.analysis import GateAnalysis
from tests.fakes.argo import MemoryArgo, deploy, round_trip
from tests.fakes.clock import FakeClock
from tests.fakes.cluster import MemoryCluster
from tests.support.paths import DATA
from tests.support.sets import NS

GOLDEN = DATA / "golden" / "gitops_pr"


STATE_FILE = "apps/llama/disagg-rollout-state.yaml"


OLD_IMAGE, NEW_IMAGE = "vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.11.1"


REPLICAS = {"prefill": 3, "decode": 2}


def llama(image: str = OLD_IMAGE, extra_prefill_args: tuple[str, ...] = (), slices: int = 1,
          replicas: dict[str, int] | None = None):
    """The set of the docs: vLLM prefill and decode; v0.11.1 also turns on prefix caching."""
    roles = []
    for role, count in (replicas or REPLICAS).items():
        args = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--kv-transfer-role",
                "producer" if role == "prefill" else "consumer"]
        if role == "prefill":
            args += list(extra_prefill_args)
        roles.append({"name": role, "spec": {"replicas": count, "leaderWorkerTemplate": {"size": 2, "workerTemplate": {
            "spec": {"containers": [{"name": "vllm", "image": image, "args": args}]}}}}})
    data = {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
            "metadata": {"name": "llama", "namespace": NS}, "spec": {"slices": slices, "roles": roles}}
    (ds,) = load_sets(parse_stream(to_yaml(data), "llama.yaml"))
    return ds


def upgraded(**kwargs):
    return llama(NEW_IMAGE, ("--enable-prefix-caching",), **kwargs)


def steps_until_complete(argo: MemoryArgo, ds, state, limit: int = 30):
    """(step, state before) of each round of sync → ready → step → commit, until complete."""
    out = []
    for _ in range(limit):
        argo.sync(ds, state)
        argo.cluster.settle()
        step = gitops_step(ds, state, argo.snapshot(ds))
        if step.outcome == Outcome.COMPLETE:
            return out, state
        assert step.outcome == Outcome.ADVANCED, step
        out.append(step)
        state = round_trip(step.state, ds)
    raise AssertionError("not complete")


def rollout_steps(slices: int = 1) -> list[tuple[str, object, object]]:
    """(golden name, set, step) of the initial state and of every step of the rollout."""
    old, new = llama(slices=slices), upgraded(slices=slices)
    argo = MemoryArgo()
    first = gitops_step(old, None, MemoryCluster(NS).snapshot(old.name))
    out = [("initial-state", old, first)]
    state = round_trip(first.state, old)
    _, state = steps_until_complete(argo, old, state)
    steps, _ = steps_until_complete(argo, new, state)
    out.extend((f"step-{index:02d}", new, step) for index, step in enumerate(steps, 1))
    return out


def abort_steps() -> list[tuple[str, object, object]]:
    """Two steps forward, then the template reverted: every step of the rollback."""
    old, new = llama(), upgraded()
    argo = MemoryArgo()
    state = round_trip(gitops_step(old, None, MemoryCluster(NS).snapshot(old.name)).state, old)
    _, state = steps_until_complete(argo, old, state)
    for _ in range(2):
        argo.sync(new, state)
        argo.cluster.settle()
        state = round_trip(gitops_step(new, state, argo.snapshot(new)).state, new)
    steps, _ = steps_until_complete(argo, old, round_trip(state, old))
    return [(f"rollback-{index:02d}", old, step) for index, step in enumerate(steps, 1)]


SCENARIOS = {
    "rollout": lambda: rollout_steps(),
    "abort": abort_steps,
    "two-slices": lambda: rollout_steps(slices=2)[1:3],
}


def scenario_steps() -> dict[str, tuple[object, object]]:
    """golden file name → (set, step) of every scenario."""
    return {f"{scenario}-{name}.md": (ds, step) for scenario, make in SCENARIOS.items() for name, ds, step in make()}


# --- a fleet under a RolloutPolicy (issue 39) -----------------------------------------------------

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)


def fleet_policy(slices: int) -> RolloutPolicy:
    """A canary with an analysis gate on time to first token, a 25 % wave with a manual pause,
    then the rest; at most 3 slices in flight."""
    return RolloutPolicy("llama", NS, "llama", (Wave(1, analysis=("ttft",)), Wave("25%", pause=True), Wave("100%")),
                         max_in_flight=3, analysis=Analysis(Prometheus(address="http://prometheus:9090"), (
                             Check("ttft", "prefill", 'ttft{revision="{{revision}}"}', Condition("<", 0.5), 60, 1, 0,
                                   "fail"),)))


def fleet_steps(slices: int = 12, ttft: float = 0.1, limit: int = 400, until: int | None = None
                ) -> list[tuple[object, object]]:
    """(set, step) of every step commit of a paced rollout of `slices` slices whose canary
    measures `ttft` seconds: to the end (promoted at the pause), or aborted and rolled back."""
    old = llama(slices=slices)
    new = replace(upgraded(slices=slices), policy=fleet_policy(slices))
    argo, state = deploy(old)
    measure = GateAnalysis(lambda prometheus: (lambda query: (Sample(ttft),)), clock=FakeClock(wall=NOW))
    out = []
    for _ in range(limit):
        argo.sync(new, state)
        argo.cluster.settle()
        step = gitops_step(new, state, argo.snapshot(new), argo.served, now=NOW, analyze=measure)
        if step.outcome == Outcome.COMPLETE:
            return out
        if step.outcome == Outcome.HELD:
            if any("aborted" in reason for reason in step.reasons):
                return out
            _, _, promoted = change_state(new, state, lambda d: promote(d, NOW, "alice"), NOW)
            state = round_trip(promoted, new)
            continue
        assert step.outcome == Outcome.ADVANCED, step
        out.append((new, step))
        if until is not None and len(out) == until:
            return out
        state = round_trip(step.state, new)
    raise AssertionError("not complete")


@functools.cache
def fleet_runs(slices: int = 12) -> tuple[tuple, tuple]:
    """The step commits of the fleet's good rollout (ttft 0.1 s: promoted at the pause, to the
    end) and of its bad canary (ttft 2 s: aborted after wave 1 and rolled back), computed once."""
    return tuple(fleet_steps(slices, ttft=0.1)), tuple(fleet_steps(slices, ttft=2.0))


def fleet_pr_kinds() -> list[tuple[str, object, object]]:
    """(kind, set, step) of a pull request of each kind of the 12-slice, 3-wave fleet: a wave's
    start, a step in the middle of a wave, the analysis passed, the pause reached (a person's
    `promote` next), the abort, a rollback step, the last step (the old revision removed)."""
    from kubectl_disagg.views.gitops_pr import pr_context

    good, bad = fleet_runs()
    contexts = [pr_context(ds, NS, step, STATE_FILE) for ds, step in good]
    last_wave = max(i for i, c in enumerate(contexts) if c["wave"] is not None)
    passed = next(i for i, c in enumerate(contexts) if "analysis after wave 1 passed" in c["title"])
    paused = next(i for i, c in enumerate(contexts) if "is paused" in c["title"])
    abort = next(i for i, (ds, step) in enumerate(bad)
                 if pr_context(ds, NS, step, STATE_FILE)["title"].startswith("llama: rollback"))
    picks = {"wave-start": good[last_wave], "mid-wave-step": good[last_wave + 3],
             "analysis-passed": good[passed], "paused": good[paused], "abort": bad[abort], "rollback-step": bad[abort + 2],
             "last-step": good[-1]}
    return [(kind, ds, step) for kind, (ds, step) in picks.items()]


SCENARIOS["fleet"] = fleet_pr_kinds
