"""`rollout step --dry-run=server` against the real kube-apiserver: every write of a pass sent with
dryRun=All, judged by the server (validation, admission, preconditions, RBAC) and stored nowhere.
"""

from __future__ import annotations

import time

import pytest
import yaml
from kubernetes import client

from kubectl_disagg.core.api import naming
from kubectl_disagg.exits import StepExit
from tests.support.privilege import STATUS, STEPPER, run, without_verb
from tests.support.stepping import (
    LWS,
    SET,
    cli,
    interfere_before_writes,
    kinds_of,
    model,
    write_replicas,
    write_set,
)


def leases(api_client, namespace: str) -> list:
    return client.CoordinationV1Api(api_client).list_namespaced_lease(namespace).items


def verdicts(doc: dict) -> list[str]:
    return [action["verdict"] for entry in doc["slices"] for action in entry["actions"]]


def test_every_kind_of_write_is_accepted_and_nothing_is_stored(stepper, tmp_path, api_client):
    """A first deploy, then a template change to its end: before each real pass, the same pass
    as a server dry run is accepted whole and leaves every object (and the Lease) as it was."""
    first = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1})
    run = stepper(first, "--dry-run=server")
    assert run.code == StepExit.OK, run.err
    assert "server dry run, 4 changes planned, all accepted by the API server, nothing changed" in run.out
    assert run.out.count(": accepted by the API server\n") == 4
    assert stepper.live.versions() == {} and leases(api_client, stepper.namespace) == []

    seen = set()
    for path in (first, write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, image="img:2")):
        for _ in range(30):
            before = stepper.live.versions()
            checked = stepper(path, "--dry-run=server", "-o", "json")
            assert checked.code == StepExit.OK, checked.err
            doc = checked.json()
            assert doc["dryRunStrategy"] == "server" and set(verdicts(doc)) <= {"accepted"}
            assert stepper.live.versions() == before and leases(api_client, stepper.namespace) == []
            real = stepper(path, "-o", "json")
            assert real.code == StepExit.OK, real.err
            assert kinds_of(real.json()) == kinds_of(doc)  # the dry run planned the pass that then ran
            seen.update(kinds_of(doc))
            if real.json()["complete"]:
                break
            stepper.simulator.sync(stepper.namespace)
    assert seen == {"create", "annotate", "scale", "delete"}


def test_a_write_the_server_refuses_exits_1_naming_it(stepper, tmp_path, monkeypatch, api_client):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2})
    touched = interfere_before_writes(monkeypatch, api_client, stepper.namespace,
                                      lambda api, a: write_replicas(api, a, stepper.namespace, 3), every=False)
    run = stepper(path, "--dry-run=server")
    assert run.code == StepExit.ERROR
    (name,) = touched  # someone scaled it between the read and the dry-run scale: its JSON patch test fails
    assert run.err.splitlines() == [
        f"leaderworkerset/{name} changed since it was read (spec.replicas is no longer what this step read); "
        "run the step again",
        f"disaggregatedset/{SET} in {stepper.namespace}: the API server would refuse 1 of this pass's 2 writes "
        "(server dry run: nothing was changed)",
    ]
    assert "server dry run, 2 changes planned, 1 refused by the API server, nothing changed" in run.out
    assert f"scale leaderworkerset/{name} 1 → 2: refused by the API server\n" in run.out
    groups = stepper.live.groups()[0][model(path).revision]
    assert sorted(groups.values()) == [1, 3]  # the other scale was accepted, not stored


def test_a_create_over_someone_elses_object_is_refused_before_any_write_is_judged(stepper, tmp_path, api_client):
    """An LWS of the name a create would use, not labelled as the set's (so not listed), written
    by another field manager: the pass is refused whole at planning, exit 3, naming the object and
    its manager, as a real step would be; no write is sent, not even as a dry run."""
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    name = naming.lws_name(SET, 0, model(path).revision, "prefill")
    squatter = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                "metadata": {"name": name}, "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {
                    "containers": [{"name": "server", "image": "someone-else:1"}]}}}}}
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        *LWS, stepper.namespace, "leaderworkersets", squatter, field_manager="helm")
    before = stepper.live.versions()

    run = stepper(path, "--dry-run=server")
    assert run.code == StepExit.REFUSED
    assert (f"slice 0: blocked: leaderworkerset/{name} exists and is not disaggregatedset/llm's "
            "(no managed-by label; field managers helm)") in run.out
    assert stepper.live.versions() == before


@pytest.fixture
def admission_policy(control_plane, namespace):
    """A ValidatingAdmissionPolicy in `namespace` only: at most one pod per LWS group (what a
    cluster's own policy may say, and offline validation cannot know). Its denial names no field
    (the API server leaves `fieldPath` out of the Status causes), so it is traced to the role."""
    api = "/apis/admissionregistration.k8s.io/v1"
    policy = f"one-pod-groups-{namespace}"
    control_plane.request("POST", f"{api}/validatingadmissionpolicies", {
        "metadata": {"name": policy},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{
                     "apiGroups": ["leaderworkerset.x-k8s.io"], "apiVersions": ["*"],
                     "operations": ["CREATE", "UPDATE"], "resources": ["leaderworkersets"]}]},
                 "validations": [{"expression": "object.spec.leaderWorkerTemplate.size <= 1",
                                  "message": "groups of one pod only in this namespace",
                                  "fieldPath": "spec.leaderWorkerTemplate.size", "reason": "Invalid"}]}})
    control_plane.request("POST", f"{api}/validatingadmissionpolicybindings", {
        "metadata": {"name": policy},
        "spec": {"policyName": policy, "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": namespace}}}}})
    yield policy
    control_plane.request("DELETE", f"{api}/validatingadmissionpolicybindings/{policy}")
    control_plane.request("DELETE", f"{api}/validatingadmissionpolicies/{policy}")


def test_a_create_refused_by_admission_is_traced_to_file_and_line(stepper, tmp_path, admission_policy):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    document = yaml.safe_load(path.read_text())
    document["spec"]["roles"][1]["spec"]["leaderWorkerTemplate"]["size"] = 2
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    ds = model(path)
    decode = naming.lws_name(SET, 0, ds.revision, "decode")
    line = ds.source.line(("spec", "roles", 1))  # an admission refusal names no field: the role it came from

    deadline = time.monotonic() + 30
    while (run := stepper(path, "--dry-run=server")).code == StepExit.OK:  # the policy takes a moment to load
        assert time.monotonic() < deadline, "the admission policy never took effect"
        time.sleep(0.5)
    assert run.code == StepExit.ERROR
    first, summary = run.err.splitlines()
    assert first.startswith(f"{path}:{line}: spec.roles[1]: refused by the API server (leaderworkerset/{decode}): "
                            f"leaderworkersets.leaderworkerset.x-k8s.io \"{decode}\" is forbidden: "
                            f"ValidatingAdmissionPolicy '{admission_policy}'")
    assert first.endswith("denied request: groups of one pod only in this namespace")
    assert "would refuse 1 of this pass's 4 writes" in summary
    assert f"create leaderworkerset/{decode} with 1 replica: refused by the API server\n    {first}\n" in run.out

    # The set stored in the cluster (`rollout step NAME`): no file, no line, still the role's path.
    stepper.control_plane.request(
        "POST", f"/apis/disaggregatedset.x-k8s.io/v1/namespaces/{stepper.namespace}/disaggregatedsets", document)
    code, _, err = cli(stepper, "rollout", "step", SET, "-n", stepper.namespace, "--dry-run=server",
                       "--context", "admin")
    assert code == StepExit.ERROR
    assert err.splitlines()[0].startswith(f"disaggregatedset/{SET} in {stepper.namespace}: spec.roles[1]: refused by "
                                          f"the API server (leaderworkerset/{decode}): ")
    assert stepper.live.versions() == {}


def test_permissions_are_checked_first_and_dry_run_writes_need_them(stepper, accounts, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    code, out, err = run(stepper, accounts, STEPPER, "rollout", "step", "-f", str(path), "--dry-run=server")
    assert code == StepExit.OK, err
    assert "all accepted by the API server" in out

    name = "no-patch-leaderworkersets"
    accounts.add_account(name, without_verb(accounts.role(STEPPER), "leaderworkersets", "patch", name))
    code, out, err = run(stepper, accounts, name, "rollout", "step", "-f", str(path), "--dry-run=server")
    assert code == StepExit.ERROR and out == ""
    assert err.strip().splitlines() == [
        f"forbidden: this pass needs permission to patch leaderworkersets.leaderworkerset.x-k8s.io in namespace "
        f"{stepper.namespace}, which this user lacks; nothing was changed (see deploy/rbac.yaml)"]

    code, out, err = run(stepper, accounts, STATUS, "rollout", "step", "-f", str(path), "--dry-run=server")
    assert code == StepExit.ERROR and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("forbidden: this pass needs permission to create leaderworkersets.leaderworkerset.x-k8s.io")
    assert stepper.live.versions() == {}


def test_a_role_scaler_create_is_judged_without_its_status_write(stepper, tmp_path):
    """An External role's RoleScaler: its create is sent as a dry run; the status write that follows
    a real create is not (there is no object to write it to)."""
    from tests.support.controller import with_external_decode

    path = with_external_decode(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    run = stepper(path, "--dry-run=server", "-o", "json")
    assert run.code == StepExit.OK, run.err
    actions = {a["name"]: a["verdict"] for entry in run.json()["slices"] for a in entry["actions"]}
    assert actions[f"{SET}-decode"] == "accepted"
    listed = stepper.control_plane.kubectl("get", "disaggregatedsetrolescalers", "-n", stepper.namespace, "-o", "json")
    assert yaml.safe_load(listed.stdout)["items"] == [] and stepper.live.versions() == {}
