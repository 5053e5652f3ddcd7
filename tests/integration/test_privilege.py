"""Least privilege: `deploy/rbac.yaml`'s Roles, bound to service accounts whose tokens run the
commands against the real kube-apiserver (RBAC on).

Each Role lets its commands work; a Role missing one verb makes `rollout step` refuse the pass
whole, in one line naming the verb and the resource, before any write (the Lease is taken first,
then a SelfSubjectAccessReview per verb and resource the pass needs).
"""

from __future__ import annotations

import time

import pytest
import yaml

from kubectl_disagg.exits import StepExit
from tests.fakes.clock import FakeClock
from tests.support.privilege import GITOPS, RBAC_API, STATUS, STEPPER, create, run, without_verb
from tests.support.stepping import Live, SET, assert_matches_render, model, write_set


def everything(live: Live) -> dict[str, str]:
    return live.versions()


def test_status_role_reads_and_may_not_step(stepper, accounts, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1})
    stepper.drive(path)
    stored = yaml.safe_load(path.read_text())
    accounts.control_plane.request(
        "POST", f"/apis/disaggregatedset.x-k8s.io/v1/namespaces/{stepper.namespace}/disaggregatedsets", stored)
    for args in (["rollout", "status", "-f", str(path)], ["rollout", "status", SET],
                 ["rollout", "plan", "-f", str(path)], ["rollout", "step", "-f", str(path), "--dry-run"],
                 ["rollout", "step", SET, "--dry-run"]):
        code, out, err = run(stepper, accounts, STATUS, *args)
        assert code == StepExit.OK, (args, err)
        assert out

    before = everything(stepper.live)
    changed = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, image="img:2")
    code, out, err = run(stepper, accounts, STATUS, "rollout", "step", "-f", str(changed))
    assert code == StepExit.ERROR and out == ""
    assert err.strip().splitlines() == [
        f'lease/kubectl-disagg-{SET}: forbidden: User "system:serviceaccount:{stepper.namespace}:{STATUS}" '
        f'cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "{stepper.namespace}"']
    assert everything(stepper.live) == before


def test_stepper_role_rolls_out_to_the_end(stepper, accounts, tmp_path, lws_simulator):
    first = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, slices=2)
    second = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 2}, image="img:2")  # one slice fewer
    with lws_simulator.running(stepper.namespace, delay=0.05, interval=0.05):
        for path in (first, second):
            code, _, err = run(stepper, accounts, STEPPER, "rollout", "step", "-f", str(path), "--until-complete",
                               "--wait-for-lease", "--timeout", "2m")
            assert code == StepExit.OK, err
            assert "forbidden" not in err
    assert lws_simulator.errors == []
    assert_matches_render(model(second), stepper.live)  # creates, scales, annotations, deletes: all allowed


def test_gitops_role_steps_through_git(stepper, accounts, tmp_path):
    directory = tmp_path / "repo"
    directory.mkdir()
    write_set(directory, stepper.namespace, {"prefill": 1, "decode": 1})
    code, _, err = run(stepper, accounts, GITOPS, "rollout", "step", "--gitops", "-f", str(directory))
    assert code == StepExit.OK, err
    assert stepper.live.lws("") == []  # the cluster is left alone: the next state is in git
    # With a state, its RolloutState object is read too (the cluster serves the kind): none yet,
    # so the LWS tell: not synced.
    for command in ("step", "status"):
        code, out, err = run(stepper, accounts, GITOPS, "rollout", command, "--gitops", "-f", str(directory))
        assert code == StepExit.WAITING and "not live yet" in out and err == "", (command, out, err)


@pytest.mark.parametrize(("resource", "verb", "named"), [
    ("leaderworkersets", "patch", "patch leaderworkersets.leaderworkerset.x-k8s.io"),
    ("services", "create", "create services"),
    ("leases", "update", "update leases.coordination.k8s.io"),
])
def test_a_missing_verb_refuses_the_pass_whole_in_one_line(stepper, accounts, tmp_path, resource, verb, named):
    name = f"no-{verb}-{resource}"
    accounts.add_account(name, without_verb(accounts.role(STEPPER), resource, verb, name))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1})
    code, out, err = run(stepper, accounts, name, "rollout", "step", "-f", str(path))
    assert code == StepExit.ERROR and out == ""
    (line,) = err.strip().splitlines()
    assert line == (f"forbidden: this pass needs permission to {named} in namespace {stepper.namespace}, which this "
                    "user lacks; nothing was changed (see deploy/rbac.yaml)")
    assert everything(stepper.live) == {}  # no LWS, no Service
    leases = accounts.control_plane.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{stepper.namespace}/leases")
    assert leases["items"] == []  # taken, then released


def test_a_grant_is_asked_once_per_lease_term_and_a_refusal_every_time(stepper, accounts):
    """The SelfSubjectAccessReviews before a pass's first write: a grant holds for one lease
    term (no second review within it, even if revoked meanwhile), after it is asked again."""
    from kubectl_disagg.kube.executor import ClusterExecutor, Forbidden, GrantedPermissions
    from kubectl_disagg.core.controller.reconcile import Scale
    from kubectl_disagg.kube.client import LWS

    namespace = stepper.namespace
    scale = [Scale(name="x", from_replicas=1, to_replicas=2, resource_version="1", slice=0)]
    now = [0.0]
    with ClusterExecutor(str(accounts.kubeconfig), STEPPER) as cluster:
        cluster.permissions = GrantedPermissions(30, clock=FakeClock(read=lambda: now[0]))
        cluster.authorize(scale, namespace)  # patch leaderworkersets, update + delete leases: granted
        accounts.control_plane.request(
            "DELETE", f"{RBAC_API}/namespaces/{namespace}/rolebindings/{STEPPER}")
        deadline = time.monotonic() + 30
        while cluster.client.allowed("patch", LWS, namespace):  # RBAC sees the deletion shortly
            assert time.monotonic() < deadline, "the RoleBinding's deletion never took effect"
            time.sleep(0.05)
        now[0] = 29.0
        cluster.authorize(scale, namespace)  # within the term: remembered, not asked
        now[0] = 30.0
        with pytest.raises(Forbidden) as refused:
            cluster.authorize(scale, namespace)
        assert "patch leaderworkersets.leaderworkerset.x-k8s.io, update leases.coordination.k8s.io, " \
               "delete leases.coordination.k8s.io" in str(refused.value)  # asked side by side, named in order
        create(accounts.control_plane, namespace, next(
            d for d in accounts.documents if d["kind"] == "RoleBinding" and d["metadata"]["name"] == STEPPER))
        while not cluster.client.allowed("patch", LWS, namespace):
            assert time.monotonic() < deadline + 30, "the RoleBinding's return never took effect"
            time.sleep(0.05)
        cluster.authorize(scale, namespace)  # a refusal is never remembered: asked again, granted now


def test_a_pass_lists_twice_checks_its_creates_and_asks_only_what_is_not_granted(control_plane, namespace,
                                                                                 tmp_path, lws_simulator):
    from benchmarks.request_count import RequestCounter
    from kubectl_disagg.kube.executor import ClusterExecutor
    from kubectl_disagg.rollout.stepper import run_pass

    first, second = (model(write_set(tmp_path, namespace, {"prefill": 1, "decode": 1}, image=image))
                     for image in ("img:1", "img:2"))
    with ClusterExecutor(str(control_plane.kubeconfig), "admin") as cluster:
        counter = RequestCounter.wrap(cluster.transport)
        with cluster.lease(first.name, namespace) as lease:
            counter.clear()
            assert run_pass(cluster, first, namespace, lease).done  # creates LWS and Services
            reads = {k: n for k, n in counter.requests.items() if k[0] in ("list", "get", "watch")}
            # two lists side by side, then one get per object the pass creates: is its name free?
            assert reads == {("list", "leaderworkersets"): 1, ("list", "services"): 1,
                             ("get", "leaderworkersets"): 2, ("get", "services"): 2}
            # create + patch (server-side apply) of LWS and Services, update + delete of the Lease
            assert counter.requests[("create", "selfsubjectaccessreviews")] == 6
            lws_simulator.sync(namespace)
            counter.clear()
            started = run_pass(cluster, second, namespace, lease)  # the template change: annotates, creates
            assert started.done and any(a.describe().startswith("annotate") for a in started.done)
            assert counter.requests[("create", "selfsubjectaccessreviews")] == 0  # all granted within the term
            assert counter.requests[("list", "leaderworkersets")] == 1
