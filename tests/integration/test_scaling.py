"""Scaling during a progressive rollout (design §10.1 and design §10.2, issue 40) on the real
kube-apiserver, in the terminal and through git: replicas and slices changed at three points of a
paced rollout (mid-canary, at the canary's gate, mid-wave), the bounds checked at every step on
the live LeaderWorkerSets: groups whole, per rolling slice and role old + new within the target
in force plus maxSurge and, for a role that started at or above it, at or above the target minus
maxUnavailable (never further out than before the step), no slice at the new revision outside
the promoted waves, at most maxSlicesInFlight in flight. The rollout then completes at exactly
the last replicas and slices."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.delivery.policy import policy_from_object, resolve_waves
from kubectl_disagg.exits import StepExit
from tests.support.git_repo import deploy
from tests.support.scaling_bounds import pass_violations
from tests.support.stepping import assert_matches_render, cli, model, write_set
from tests.support.sets import set_selector

SPEC = {"targetRef": {"name": "llm"}, "maxSlicesInFlight": 1,
        "waves": [{"slices": 1, "pause": {}}, {"slices": "50%", "pause": {}}]}
ROLLING = {"prefill": {"maxSurge": 1, "maxUnavailable": 1}}


def policy_document(namespace: str) -> dict:
    return {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
            "metadata": {"name": "llm", "namespace": namespace}, "spec": SPEC}


def write(directory: Path, namespace: str, replicas: dict[str, int], image: str, slices: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.yaml"):
        stale.unlink()
    write_set(directory, namespace, replicas, image=image, slices=slices, rolling=ROLLING)
    (directory / "policy.yaml").write_text(yaml.safe_dump(policy_document(namespace), sort_keys=False))
    return directory


class Bounds:
    """The checks of one step, from the live LWS before and after it."""

    def __init__(self, namespace: str):
        found, problems = policy_from_object(policy_document(namespace))
        assert not problems, problems
        self.policy, self.promoted = found, 0  # pauses promoted so far

    @staticmethod
    def read(live) -> tuple[dict, dict]:
        """(slice → revision → role → replicas, (slice, revision, role) → initial-replicas)."""
        groups: dict = {}
        initial: dict = {}
        for obj in live.lws(set_selector("llm")):
            labels = obj["metadata"]["labels"]
            key = (int(labels[naming.SLICE_LABEL]), labels[naming.REVISION_LABEL], labels[naming.ROLE_LABEL])
            groups.setdefault(key[0], {}).setdefault(key[1], {})[key[2]] = obj["spec"].get("replicas", 1)
            started = (obj["metadata"].get("annotations") or {}).get(naming.INITIAL_REPLICAS_ANNOTATION)
            if started is not None:
                initial[key] = int(started)
        return groups, initial

    def admitted(self, slices: int) -> int:
        waves = [w for w in resolve_waves(self.policy, slices)]
        gated = [w for w in waves if w.pause]
        return gated[self.promoted].end if self.promoted < len(gated) else slices

    def check(self, ds, before: tuple[dict, dict], after: dict) -> None:
        was_groups, initial = before
        revision = ds.revision
        started: dict[tuple[int, str], int] = {}  # (slice, role) → what its old revisions started with
        for s, groups in was_groups.items():
            for rev, counts in groups.items():
                if rev != revision:
                    for role, count in counts.items():
                        started[s, role] = started.get((s, role), 0) + initial.get((s, rev, role), count)
        assert not (broken := pass_violations(ds, was_groups, after, started, self.admitted(ds.slices))), broken
        in_flight = [s for s, groups in after.items() if s < ds.slices and revision in groups and len(groups) > 1]
        assert len(in_flight) <= 1, after


# --- the terminal ---------------------------------------------------------------------------------


def step(stepper, directory: Path, bounds: Bounds):
    ds = model(directory)
    before = bounds.read(stepper.live)
    run = stepper(directory, "-o", "json")
    assert run.code in (StepExit.OK, StepExit.HELD), (run.code, run.out, run.err)
    bounds.check(ds, before, bounds.read(stepper.live)[0])
    stepper.simulator.sync(stepper.namespace)
    return run


def test_replicas_and_slices_changed_at_three_points_of_a_paced_rollout(stepper, tmp_path):
    ns = stepper.namespace
    directory = tmp_path / "set"
    stepper.drive(write(directory, ns, {"prefill": 2, "decode": 1}, "img:1", 4))
    bounds = Bounds(ns)
    write(directory, ns, {"prefill": 2, "decode": 1}, "img:2", 4)
    target = model(directory).revision
    for _ in range(2):  # mid-canary: slice 0 rolling
        step(stepper, directory, bounds)
    assert len(bounds.read(stepper.live)[0][0]) == 2
    write(directory, ns, {"prefill": 3, "decode": 2}, "img:2", 5)  # raised, one more slice
    for _ in range(30):
        if step(stepper, directory, bounds).code == StepExit.HELD:
            break
    assert set(bounds.read(stepper.live)[0][0]) == {target}  # at the canary's gate
    write(directory, ns, {"prefill": 1, "decode": 1}, "img:2", 3)  # lowered, slices removed
    for _ in range(10):  # the removed slices go, the canary and the held slices scale: still at the gate
        if step(stepper, directory, bounds).code == StepExit.HELD:
            break
    assert set(bounds.read(stepper.live)[0]) == {0, 1, 2}
    assert cli(stepper, "rollout", "promote", "-f", str(directory))[0] == StepExit.OK
    bounds.promoted = 1
    for _ in range(3):  # mid-wave: slice 1 rolling
        step(stepper, directory, bounds)
    assert len(bounds.read(stepper.live)[0][1]) == 2
    write(directory, ns, {"prefill": 4, "decode": 2}, "img:2", 4)  # raised, one more slice
    for _ in range(60):
        run = step(stepper, directory, bounds)
        if run.code == StepExit.HELD:
            assert cli(stepper, "rollout", "promote", "-f", str(directory))[0] == StepExit.OK
            bounds.promoted += 1
        elif run.json()["complete"]:
            break
    else:
        raise AssertionError(f"not complete: {bounds.read(stepper.live)[0]}")
    assert_matches_render(model(directory), stepper.live)


# --- through git ----------------------------------------------------------------------------------


def round_(repo, bounds: Bounds) -> int:
    """Sync (the committed render; refused: a step records the set first) → ready → step → commit."""
    ds = model(repo.set_file)
    before = bounds.read(repo.live)
    run = repo.generate_committed()
    if run.code == 0:
        repo.sync()
        bounds.check(ds, before, bounds.read(repo.live)[0])
    else:  # only a slice the set gained, or a rolling slice below the set's floor (design §10.1)
        assert all("has no counts" in line or "below the set's replicas" in line
                   for line in run.err.splitlines()), run.err
    repo.simulator.sync(repo.namespace)
    step_run = repo.step()
    assert step_run.code in (StepExit.OK, StepExit.COMPLETE, StepExit.HELD), step_run
    if step_run.code == StepExit.OK:
        repo.commit("rollout step")
    return step_run.code


def change(repo, replicas: dict[str, int], slices: int) -> None:
    repo.change_set(f"scale to {replicas}, {slices} slices", replicas, image="img:2", slices=slices, rolling=ROLLING)


def test_through_git_replicas_and_slices_changed_at_three_points_of_a_paced_rollout(repo):
    deploy(repo, {"prefill": 2, "decode": 1}, slices=4, rolling=ROLLING)
    (repo.root / "policy.yaml").write_text(yaml.safe_dump(policy_document(repo.namespace), sort_keys=False))
    bounds = Bounds(repo.namespace)
    change(repo, {"prefill": 2, "decode": 1}, 4)
    target = model(repo.set_file).revision
    for _ in range(2):  # mid-canary
        round_(repo, bounds)
    repo.sync()
    assert len(bounds.read(repo.live)[0][0]) == 2
    change(repo, {"prefill": 3, "decode": 2}, 5)
    # slice 4, outside the canary's wave, renders at the stable revision at once (design §10.2)
    assert repo.generate_committed().code == 0
    for _ in range(30):
        if round_(repo, bounds) == StepExit.HELD:
            break
    repo.sync()
    assert set(bounds.read(repo.live)[0][0]) == {target}  # at the canary's gate
    change(repo, {"prefill": 1, "decode": 1}, 3)
    assert repo.generate_committed().code == 0, "a scale at the gate renders at once"
    assert round_(repo, bounds) == StepExit.HELD
    promoted = repo.cli("rollout", "promote", "--gitops", "-f", str(repo.root), "--commit")
    assert promoted.code == StepExit.OK, promoted
    bounds.promoted = 1
    # slice 1 ran at the stable revision at the lowered replicas while held (rule 7): its rollout starts
    # from those, not from what a step recorded before the scale (design §10.1), as in the terminal
    ((stable, held),) = bounds.read(repo.live)[0][1].items()
    for _ in range(2):  # mid-wave: slice 1 rolling, where the terminal's three steps leave it
        round_(repo, bounds)
        assert bounds.read(repo.live)[0][1][stable] == held, bounds.read(repo.live)[0]
    repo.sync()
    assert len(bounds.read(repo.live)[0][1]) == 2, bounds.read(repo.live)[0]
    change(repo, {"prefill": 4, "decode": 2}, 3)  # raised
    assert repo.generate_committed().code == 0, "a scale mid-wave renders at once"
    round_(repo, bounds)
    change(repo, {"prefill": 4, "decode": 2}, 4)  # one more slice: recorded by a step first (design §8.1)
    for _ in range(60):
        code = round_(repo, bounds)
        if code == StepExit.HELD:
            promoted = repo.cli("rollout", "promote", "--gitops", "-f", str(repo.root), "--commit")
            assert promoted.code == StepExit.OK, promoted
            bounds.promoted += 1
        elif code == StepExit.COMPLETE:
            break
    else:
        raise AssertionError(f"not complete: {bounds.read(repo.live)[0]}")
    repo.sync()
    assert_matches_render(model(repo.set_file), repo.live)


def test_through_git_slices_lowered_mid_wave_below_the_slice_in_flight(repo):
    deploy(repo, {"prefill": 2, "decode": 1}, slices=3, rolling=ROLLING)
    (repo.root / "policy.yaml").write_text(yaml.safe_dump(policy_document(repo.namespace), sort_keys=False))
    bounds = Bounds(repo.namespace)
    change(repo, {"prefill": 2, "decode": 1}, 3)
    for _ in range(30):
        if round_(repo, bounds) == StepExit.HELD:
            break
    assert repo.cli("rollout", "promote", "--gitops", "-f", str(repo.root), "--commit").code == StepExit.OK
    bounds.promoted = 1
    for _ in range(2):  # slice 1 in flight (wave 2: 50% of 3 slices)
        round_(repo, bounds)
    repo.sync()
    assert len(bounds.read(repo.live)[0][1]) == 2, bounds.read(repo.live)[0]
    change(repo, {"prefill": 2, "decode": 1}, 2)  # 50% of 2 is the canary alone: slice 1 is in wave 3
    repo.sync()  # the scaling commit renders: slice 1, in flight, goes on (design §10.2)
    repo.simulator.sync(repo.namespace)
    assert repo.step().code == StepExit.OK
    repo.commit("rollout step")
    run = repo.generate_committed()
    assert run.code == 0, run.err
    assert yaml.safe_load(repo.state_file.read_text())["position"]["found"] == [1]  # recorded: it goes on
    target = model(repo.set_file).revision
    for _ in range(30):  # ... to the end, every bound held at every step
        code = round_(repo, bounds)
        if code == StepExit.COMPLETE:
            break
        if code == StepExit.HELD:
            assert repo.cli("rollout", "promote", "--gitops", "-f", str(repo.root), "--commit").code == StepExit.OK
            bounds.promoted += 1
    repo.sync()
    assert {s: set(g) for s, g in repo.live.groups().items()} == {0: {target}, 1: {target}}
