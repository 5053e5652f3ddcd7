"""Driving a paced rollout against the control plane and reading its RolloutState, shared by the integration tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from kubernetes import client

from kubectl_disagg.core.api import naming
from kubectl_disagg.exits import StepExit
from tests.support.stepping import write_set

ROLES = {"prefill": 1, "decode": 1}


def paced(tmp_path: Path, namespace: str, image: str, spec: dict, slices: int = 4) -> Path:
    """A directory with the set at `image` and its RolloutPolicy."""
    directory = tmp_path / image.replace(":", "-")
    directory.mkdir()
    write_set(directory, namespace, ROLES, image=image, slices=slices)
    policy = {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
              "metadata": {"name": "llm", "namespace": namespace},
              "spec": {"targetRef": {"name": "llm"}, **spec}}
    (directory / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    return directory


def deployed_then_changed(stepper, tmp_path: Path, spec: dict, slices: int = 4,
                          images: tuple[str, str] = ("img:1", "img:2")) -> tuple[Path, Path]:
    """The paced set deployed at the first image, then written at the second (not yet stepped):
    (the deployed directory, the changed one)."""
    old = paced(tmp_path, stepper.namespace, images[0], spec, slices)
    stepper.drive(old)
    return old, paced(tmp_path, stepper.namespace, images[1], spec, slices)


def revisions(stepper) -> dict[int, set[str]]:
    return {s: set(groups) for s, groups in stepper.live.groups().items()}


def versions_of(stepper, slices) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in stepper.live.lws()
            if int(o["metadata"]["labels"][naming.SLICE_LABEL]) in slices}


def rollout_state(stepper) -> dict:
    return client.CustomObjectsApi(stepper.live.api).get_namespaced_custom_object(
        "kubectl-disagg.x-k8s.io", "v1alpha1", stepper.namespace, "rolloutstates", "llm")


def until_held_or_complete(stepper, directory: Path, simulator) -> "object":
    with simulator.running(stepper.namespace, delay=0.05, interval=0.05):
        return stepper(directory, "--until-complete", "--timeout", "2m")


def versions_of_git(repo, slices) -> dict[str, tuple]:
    """What a sync could change of the slices' LWS (each sync stamps the commit on every object,
    and the LWS controller writes status): spec and generation, labels, our annotations."""
    return {o["metadata"]["name"]: (o["metadata"]["generation"], o["spec"], o["metadata"]["labels"],
                                    (o["metadata"].get("annotations") or {}).get(naming.INITIAL_REPLICAS_ANNOTATION))
            for o in repo.live.lws() if int(o["metadata"]["labels"][naming.SLICE_LABEL]) in slices}


CONSOLE_SCRIPT = Path(sys.executable).parent / "kubectl-disagg"


def process(stepper, *argv: str) -> subprocess.Popen:
    """The installed command as a separate process, against the stepper's control plane."""
    return subprocess.Popen([str(CONSOLE_SCRIPT), *argv, "--kubeconfig", str(stepper.control_plane.kubeconfig),
                             "--context", "admin"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"})


def git_rounds(repo, pr_file, until: set[int], limit: int = 40) -> tuple[object, list[str]]:
    """Sync → ready → step (with its pull request text) → commit, until the step's code is in
    `until`: the last run and the pull request texts of the commits."""
    texts = []
    for index in range(limit):
        repo.sync()
        repo.simulator.sync(repo.namespace)
        run = repo.step("--pr-description", str(pr_file))
        if run.code in until:
            return run, texts
        assert run.code == StepExit.OK, (run.code, run.out, run.err)
        texts.append(pr_file.read_text())
        repo.commit(f"rollout step {index}")
    raise AssertionError("never reached")
