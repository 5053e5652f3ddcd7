"""The fuzz campaign's RolloutPolicies on the local control plane (issue 37): every policy the
validator accepts runs a rollout to the end, through the CLI as a person runs it, without a
traceback.

Each drawn policy (tests/support/fuzzing.py `policy_objects`, half with hostile values) goes beside a small
set of its own (4 slices, one replica per role) whose template just changed, in the test's
namespace. A refused policy is the unit fuzz's business (FILE:LINE, tests/unit/core/test_fuzz.py)
and is skipped here; an accepted one is driven: `rollout step --until-complete` with the LWS
status simulator running, and at each hold `rollout promote` (a pause or a soak), `rollout promote
--full` where promote is refused (an analysis gate) or a step cannot end in time (an analysis
longer than --timeout). The analysis is served by a fake Prometheus answering every query with a
value the fuzz's conditions hold (0.1: `> 0`, `< 0.5`). At the end every slice runs the new
revision only, the set is what render makes of it, and the RolloutState is at rest.

KUBECTL_DISAGG_FUZZ_ROLLOUTS sets how many accepted policies (6 in the default suite)."""

from __future__ import annotations

import copy
import json
import os
import sys
from collections import Counter
from pathlib import Path

import yaml
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from kubectl_disagg.exits import StepExit, VerbExit
from tests.fakes.servers import Answers
from tests.support.fuzzing import POLICY_SET, policy_objects, run_cli
from tests.support.stepping import cli, model, write_set

ACCEPTED = int(os.environ.get("KUBECTL_DISAGG_FUZZ_ROLLOUTS", "6"))
ROLES = {"prefill": 1, "decode": 1}
SLICES = 4
FIGURES: Counter = Counter()


def prometheus_answering(value: float = 0.1) -> Answers:
    """A Prometheus that answers every instant query with one sample of `value`."""
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {}, "value": [0, str(value)]}]}}).encode()
    return Answers(then=(200, {"Content-Type": "application/json"}, body))


def beside(policy: dict, namespace: str, name: str, address: str) -> dict:
    """The drawn policy for the test's set: the fuzz seed set's namespace and name become the
    test's (a hostile namespace or target stays hostile), its Prometheus the fake."""
    policy = copy.deepcopy(policy)
    metadata, spec = policy["metadata"], policy["spec"]
    if metadata.get("namespace") == POLICY_SET["metadata"].get("namespace"):
        metadata["namespace"] = namespace
    if (spec.get("targetRef") or {}).get("name") == POLICY_SET["metadata"]["name"]:
        spec["targetRef"]["name"] = name
    prometheus = ((spec.get("analysis") or {}).get("prometheus") or {})
    if prometheus.get("address") == "http://127.0.0.1:9":
        prometheus["address"] = address
    return policy


def to_the_end(stepper, directory: Path, simulator) -> None:
    """Step until complete, passing each hold as a person would; no traceback anywhere (the
    CLI helpers assert it)."""
    for _ in range(20):
        with simulator.running(stepper.namespace, delay=0.02, interval=0.05):
            run = stepper(directory, "--until-complete", "--timeout", "60s")
        FIGURES[f"step --until-complete exit {run.code}"] += 1
        if run.code == StepExit.OK:
            return
        assert run.code in (StepExit.HELD, StepExit.TIMEOUT), run.err
        code, _, err = cli(stepper, "rollout", "promote", "-f", str(directory))
        FIGURES[f"promote exit {code}"] += 1
        if code != VerbExit.OK:
            assert code == VerbExit.REFUSED, err
            code, _, err = cli(stepper, "rollout", "promote", "--full", "--skip-analysis", "-f",
                                 str(directory))
            FIGURES[f"promote --full exit {code}"] += 1
            assert code == VerbExit.OK, err
    raise AssertionError(f"{directory}: the rollout did not end")


def accepted(directory: Path, namespace: str, address: str, count: int) -> list[dict]:
    """`count` distinct policies of the fuzz the validator accepts beside the test's set, drawn
    with a fixed seed (half of them from the hostile draws), the most analysis gates first, then
    the most pauses (a policy without waves paces nothing)."""
    found: dict[str, dict] = {}
    directory.mkdir()
    write_set(directory, namespace, ROLES, image="img:2", slices=SLICES, name="llm")

    @seed(37)
    @settings(max_examples=60 * count, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(policy_objects(), policy_objects(hostile=False)))  # half of them hostile
    def draw(policy: dict) -> None:
        key = json.dumps(policy, sort_keys=True)
        if key in found or not (policy.get("spec") or {}).get("waves"):
            return
        (directory / "policy.yaml").write_text(yaml.safe_dump(beside(policy, namespace, "llm", address)))
        code, _, err = run_cli(["validate", "-f", str(directory)])
        FIGURES[f"drawn policies, validate exit {code}"] += 1
        assert "Traceback" not in err and code in (0, 1), err
        if code == 0:
            found[key] = policy

    draw()

    def gates(policy: dict) -> tuple[int, int]:
        waves = policy["spec"]["waves"]
        return sum(bool(w.get("analysis")) for w in waves), sum("pause" in w for w in waves)

    FIGURES["accepted policies drawn"] = len(found)
    return sorted(found.values(), key=gates, reverse=True)[:count]


def test_every_accepted_policy_runs_its_rollout_to_the_end(stepper, tmp_path, lws_simulator):
    prometheus = prometheus_answering()
    try:
        policies = accepted(tmp_path / "drawn", stepper.namespace, prometheus.address, ACCEPTED)
        assert len(policies) == ACCEPTED
        for n, drawn in enumerate(policies):
            name = f"llm{n}"
            old, new = tmp_path / f"{n}-old", tmp_path / f"{n}-new"
            old.mkdir()
            new.mkdir()
            write_set(old, stepper.namespace, ROLES, image="img:1", slices=SLICES, name=name)
            write_set(new, stepper.namespace, ROLES, image="img:2", slices=SLICES, name=name)
            (new / "policy.yaml").write_text(yaml.safe_dump(beside(drawn, stepper.namespace, name,
                                                                   prometheus.address), sort_keys=False))
            for wave in drawn["spec"]["waves"]:
                FIGURES["waves"] += 1
                FIGURES["analysis gates"] += bool(wave.get("analysis"))
                FIGURES["pauses"] += (wave.get("pause") or {}).get("duration") is None and "pause" in wave
                FIGURES["soaks"] += (wave.get("pause") or {}).get("duration") is not None
            stepper.drive(old)  # deployed at img:1, no policy yet
            to_the_end(stepper, new, lws_simulator)
            FIGURES["rollouts ended"] += 1
            live = {s: set(groups) for s, groups in stepper.live.groups(name).items()}
            assert live == {s: {model(new).revision} for s in range(SLICES)}, (drawn, live)
            assert rollout_state_of(stepper, name)["rollout"]["phase"] == "AtRest", drawn
    finally:
        prometheus.close()
    print("\nfuzz rollout figures:", dict(sorted(FIGURES.items())), file=sys.__stderr__)


def rollout_state_of(stepper, name: str) -> dict:
    from kubernetes import client
    return client.CustomObjectsApi(stepper.live.api).get_namespaced_custom_object(
        "kubectl-disagg.x-k8s.io", "v1alpha1", stepper.namespace, "rolloutstates", name)
