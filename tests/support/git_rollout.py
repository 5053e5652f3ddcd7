"""A git-driven rollout on a temporary repository, run to the end as a person runs it: every
`rollout step --gitops --commit` and `rollout promote --gitops --commit` a commit, synced to the
in-memory cluster (tests/fakes/argo.py) as Argo CD syncs it between commits, which the commands
read."""

from __future__ import annotations

import json
import subprocess
import time

import yaml

from kubectl_disagg.exits import StepExit
from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.inputs import tree as inputs
from tests.fakes.argo import MemoryArgo
from tests.fakes.cluster import MemorySession
from tests.support.cli import on, run
from tests.support.sets import NS


POLICY = {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
          "metadata": {"name": "llm", "namespace": NS}, "spec": {"targetRef": {"name": "llm"}}}


def write(directory, image: str, slices: int, replicas: dict[str, int], policy: dict) -> None:
    roles = [{"name": role, "spec": {"replicas": count, "leaderWorkerTemplate": {
        "workerTemplate": {"spec": {"containers": [{"name": "server", "image": image}]}}}}}
        for role, count in replicas.items()]
    documents = [{"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
                  "metadata": {"name": "llm", "namespace": NS}, "spec": {"slices": slices, "roles": roles}},
                 {**POLICY, "spec": {**POLICY["spec"], **policy}}]
    (directory / "llm.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False))


def git(directory, *args: str) -> str:
    return subprocess.run(["git", "-C", str(directory), "-c", "user.name=alice", "-c", "user.email=a@example.invalid",
                           *args], check=True, capture_output=True, text=True).stdout


def loaded(directory):
    reading = inputs.Reading(False)
    tree = inputs.read_tree([str(directory)], reading)
    (entry,) = directories.load(tree, reading, namespace=NS, fallback=NS).sets
    return entry.ds, entry.state


def promised(directory, capsys) -> int:
    code, out, err = run(["rollout", "plan", "--gitops", "-f", str(directory), "-o", "json"], capsys)
    assert code == 0, err
    return json.loads(out)["fleets"][0]["commits"]


def roll_through_git(directory, argo: MemoryArgo, capsys, limit: int = 400, promises: list | None = None) -> list[int]:
    """Sync, step --commit, promote --commit at a pause, until complete: the exit codes; with
    `promises`, before each step (commits so far, the plan's commits to the end)."""
    codes, options = [], on(MemorySession(argo.cluster))
    for _ in range(limit):
        argo.sync(*loaded(directory))
        argo.cluster.settle()
        if promises is not None:
            promises.append((commits(directory), promised(directory, capsys)))
        code, out, err = run(["rollout", "step", "--gitops", "-f", str(directory), "--commit"], capsys, options=options)
        codes.append(code)
        if code == StepExit.COMPLETE:
            return codes
        if code == 7 and "soaks until" in out + err:  # a soak ends by itself
            time.sleep(1.1)
        elif code == 7:  # held at a pause gate: a person promotes, through git
            promoted, _, err = run(["rollout", "promote", "--gitops", "-f", str(directory), "--commit"], capsys,
                                   options=options)
            assert promoted == 0, err
        else:
            assert code in (StepExit.OK, StepExit.WAITING), err
    raise AssertionError("the git rollout did not complete")


def commits(directory) -> int:
    return int(git(directory, "rev-list", "--count", "HEAD"))
