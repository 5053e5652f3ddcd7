"""Hardening against the real API server: large objects, and a pass cut short inside a revision group.

Uses the `rollout step` driver of test_rollout_step (invariants checked after every pass).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from kubectl_disagg.kube.executor import ClusterExecutor
from kubectl_disagg.errors import UserError
from kubectl_disagg.core.reconcile import Scale
from tests.integration.test_rollout_step import (
    EXIT_ERROR, EXIT_OK, SET, _role_totals, assert_matches_render, model, stepper, write_set,  # noqa: F401
)

ENV_VARS = 600  # ~90 bytes each: a ~55 KB pod template per role, ~110 KB per LWS with managedFields


def with_large_template(path: Path) -> Path:
    """A vLLM-like container with hundreds of env vars, in every role's worker template."""
    document = yaml.safe_load(path.read_text())
    for role in document["spec"]["roles"]:
        container = role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
        container["env"] = [{"name": f"VLLM_SETTING_{i:04d}", "value": f"value-{i:04d}-" + "x" * 60}
                            for i in range(ENV_VARS)]
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_large_templates_roll_out_over_pooled_connections(stepper, tmp_path, monkeypatch):
    from kubectl_disagg.kube.transport import Transport

    encodings, request = [], Transport.request

    def recorded(self, *args, **kwargs):
        response = request(self, *args, **kwargs)
        encodings.append(response.headers.get("Content-Encoding"))
        return response

    monkeypatch.setattr(Transport, "request", recorded)
    first = with_large_template(write_set(tmp_path, stepper.namespace, {"prefill": 3, "decode": 2}))
    assert len(first.read_bytes()) > 2 * 50_000
    stepper.drive(first)
    second = with_large_template(write_set(tmp_path, stepper.namespace, {"prefill": 3, "decode": 2}, image="img:2"))
    history = stepper.drive(second)
    writes = sum(len(entry["actions"]) for doc in history for entry in doc["slices"])
    assert writes >= 10  # annotations, creates, scale-ups and drains, all answered with ~100 KB objects
    assert_matches_render(model(second), stepper.live)
    # Asked for with Accept-Encoding as client-go asks: the API server compresses answers over
    # 128 KiB (the LISTs of these LWS), and they were read (the rollout above is right).
    assert "gzip" in encodings


def test_a_failure_inside_a_revision_group_is_undone(stepper, tmp_path, monkeypatch):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, image="img:2")
    assert stepper(path).code == EXIT_OK  # rollout started: the new group exists at 0
    stepper.simulator.sync(stepper.namespace)
    real_execute = ClusterExecutor.execute
    failed: list[str] = []

    def execute(self, action, namespace=None):
        # The second scale of the new group (decode 0 → 1) fails after prefill 0 → 1 landed.
        if isinstance(action, Scale) and action.from_replicas == 0 and action.name.endswith("-decode"):
            failed.append(action.name)
            raise UserError(f"leaderworkerset/{action.name}: the API server answered 500 InternalError: boom")
        return real_execute(self, action, namespace)

    monkeypatch.setattr(ClusterExecutor, "execute", execute)
    run = stepper(path)
    assert run.code == EXIT_ERROR and failed
    prefill = failed[0].removesuffix("-decode") + "-prefill"
    assert run.err.splitlines() == [
        f"leaderworkerset/{failed[0]}: the API server answered 500 InternalError: boom",
        f"undid: scale leaderworkerset/{prefill} 0 → 1",
        "no action of this pass was carried out",
    ]
    new = stepper.live.groups()[0][model(path).revision]
    assert new == {"prefill": 0, "decode": 0}  # never left serving prefill without decode
    monkeypatch.setattr(ClusterExecutor, "execute", real_execute)
    stepper.drive(path)
    assert_matches_render(model(path), stepper.live)
