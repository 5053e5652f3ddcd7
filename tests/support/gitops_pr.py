"""The scenario the git rollout PR views are written from, and where their golden texts are."""

from __future__ import annotations

from kubectl_disagg.core.sets import load_documents
from kubectl_disagg.gitops.step import Outcome, gitops_step
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from tests.fakes.argo import MemoryArgo, round_trip
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
    (ds,) = load_documents(parse_stream(to_yaml(data), "llama.yaml")).sets
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
