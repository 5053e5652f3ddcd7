"""Hardening against the real API server: large objects, and a pass cut short inside a revision group.

Uses the `rollout step` driver of test_rollout_step (invariants checked after every pass).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from kubectl_disagg.core.controller.reconcile import Scale
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import StepExit
from kubectl_disagg.kube.executor import ClusterExecutor
from tests.support.stepping import SET, assert_matches_render, model, write_set

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
    from kubectl_disagg.kube.client.transport import Transport

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
    assert stepper(path).code == StepExit.OK  # rollout started: the new group exists at 0
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
    assert run.code == StepExit.ERROR and failed
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


# --- a step that drains and scales up at once (issue 34, item 3) ---------------------------------

# maxSurge 0, maxUnavailable 1: the sixth pass is design §5's drain+scale, old (1,1,1) → 0 and new
# (1,1,1) → (2,2,2). Scaled up first, prefill would pass through 3 against its bound of 2 + 0.
DRAIN_AND_SCALE = {"prefill": 2, "decode": 3, "encode": 3}
NO_SURGE = {role: {"maxSurge": 0, "maxUnavailable": 1} for role in DRAIN_AND_SCALE}
PASSES_BEFORE_DRAIN_AND_SCALE = 5


def _role_points(points: list[dict]) -> list[dict[str, int]]:
    totals = []
    for point in points:
        per_role: dict[str, int] = {}
        for (_, _, role), replicas in point.items():
            per_role[role] = per_role.get(role, 0) + replicas
        totals.append(per_role)
    return totals


def test_every_point_of_a_drain_and_scale_pass_stays_within_where_it_starts_and_ends(stepper, tmp_path, api_client):
    from tests.support.faults import Recorder

    stepper.drive(write_set(tmp_path, stepper.namespace, DRAIN_AND_SCALE, rolling=NO_SURGE))
    target = write_set(tmp_path, stepper.namespace, DRAIN_AND_SCALE, rolling=NO_SURGE, image="img:2")
    recorder = Recorder(api_client, stepper.namespace, SET)
    boundaries = [0]
    kinds = []
    for _ in range(12):
        run = stepper(target, "-o", "json")
        assert run.code == StepExit.OK, run.err
        kinds.append((run.json()["slices"][0].get("rollout") or {}).get("stepKind"))
        stepper.simulator.sync(stepper.namespace)
        boundaries.append(len(_wait_caught_up(recorder, stepper)) - 1)
        if run.json()["complete"]:
            break
    assert "drain+scale" in kinds, kinds
    totals = _role_points(recorder.stop())
    for start, end in zip(boundaries, boundaries[1:]):
        for point in totals[start:end + 1]:
            for role, replicas in point.items():
                assert replicas <= max(totals[start].get(role, 0), totals[end].get(role, 0)), (start, end, totals)
    assert_matches_render(model(target), stepper.live)


def _wait_caught_up(recorder, stepper, timeout: float = 10.0) -> list[dict]:
    """The recorder's points once it has seen the live replica counts."""
    import time

    live = {(s, rev, role): n for s, groups in stepper.live.groups().items() for rev, roles in groups.items()
            for role, n in roles.items()}
    deadline = time.monotonic() + timeout
    while recorder._state != live:
        assert time.monotonic() < deadline, (recorder._state, live)
        time.sleep(0.02)
    return recorder.points


def test_a_drain_refused_by_admission_leaves_no_role_above_its_bound(stepper, tmp_path, control_plane, namespace):
    """A ValidatingAdmissionPolicy refuses every replica decrease: the drain+scale pass's first
    write, its drain, is refused, so its scale-up never goes and nothing is left above the bound."""
    import time

    stepper.drive(write_set(tmp_path, stepper.namespace, DRAIN_AND_SCALE, rolling=NO_SURGE))
    target = write_set(tmp_path, stepper.namespace, DRAIN_AND_SCALE, rolling=NO_SURGE, image="img:2")
    for _ in range(PASSES_BEFORE_DRAIN_AND_SCALE):
        assert stepper(target).code == StepExit.OK
        stepper.simulator.sync(stepper.namespace)
    (planned,) = stepper(target, "--dry-run", "-o", "json").json()["slices"]
    assert planned["rollout"]["stepKind"] == "drain+scale", planned
    before = stepper.live.totals()

    api, policy = "/apis/admissionregistration.k8s.io/v1", f"no-drains-{namespace}"
    control_plane.request("POST", f"{api}/validatingadmissionpolicies", {
        "metadata": {"name": policy},
        "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{
            "apiGroups": ["leaderworkerset.x-k8s.io"], "apiVersions": ["*"], "operations": ["UPDATE"],
            "resources": ["leaderworkersets"]}]},
            "validations": [{"expression": "object.spec.replicas >= oldObject.spec.replicas",
                             "message": "no drains during the change freeze"}]}})
    control_plane.request("POST", f"{api}/validatingadmissionpolicybindings", {
        "metadata": {"name": policy}, "spec": {"policyName": policy, "validationActions": ["Deny"],
                                               "matchResources": {"namespaceSelector": {"matchLabels": {
                                                   "kubernetes.io/metadata.name": namespace}}}}})
    try:
        deadline = time.monotonic() + 30
        while stepper(target, "--dry-run=server").code == StepExit.OK:  # the policy takes a moment to load
            assert time.monotonic() < deadline, "the admission policy never took effect"
            time.sleep(0.5)
        run = stepper(target)
        assert run.code == StepExit.ERROR and "no drains during the change freeze" in run.err, run.err
        assert "no action of this pass was carried out" in run.err, run.err
        assert stepper.live.totals() == before  # nothing scaled up past its bound, nothing left split
    finally:
        control_plane.request("DELETE", f"{api}/validatingadmissionpolicybindings/{policy}")
        control_plane.request("DELETE", f"{api}/validatingadmissionpolicies/{policy}")
