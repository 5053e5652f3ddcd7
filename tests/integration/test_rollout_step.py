"""`rollout step` against the real kube-apiserver, with LWSSimulator playing the LWS controller.

The driver runs the command exactly as people do (`main([...])`), lets the simulator settle
status (deterministically, with `sync`), and after every pass checks the rollout invariants on
the live objects: per slice and role, old + new never exceeds max(target + max(surge, 1),
initial) (orphan prevention may hold one replica beyond a surge of 0, design §5), and no revision
group ever has some roles at 0 and others above 0. At the end the live objects must be what
`render` says (names, labels, spec; the API server's defaults may add to a spec, never change it).
"""

from __future__ import annotations

import datetime
import threading

import pytest
import yaml
from kubernetes import client

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.reconcile import Scale, reconcile
from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.errors import Conflict
from kubectl_disagg.exits import StepExit
from kubectl_disagg.kube.executor import ClusterExecutor
from kubectl_disagg.kube.lease import LeaseHeld, format_time
from kubectl_disagg.kube.session import OCCUPANT_GETS_MOST
from kubectl_disagg.rollout.stepper import Pass, PassInterrupted, run_pass
from tests.support.stepping import (
    LWS,
    SET,
    _role_totals,
    assert_matches_render,
    check_invariants,
    interfere_before_writes,
    kinds_of,
    model,
    write_replicas,
    write_set,
)


# --- the set under test ------------------------------------------------------------------------


# --- reading the cluster -----------------------------------------------------------------------


# --- running the command -----------------------------------------------------------------------


def phases(doc: dict) -> list[str]:
    return [entry["phase"] for entry in doc["slices"]]


# --- scenarios ---------------------------------------------------------------------------------


def test_first_deploy_creates_every_lws_with_its_services(stepper, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, slices=2)
    history = stepper.drive(path)
    first = history[0]
    assert kinds_of(first) == ["create"] * 8
    assert [[a["kind"] for a in s["actions"]] for s in first["slices"]] == [
        ["LeaderWorkerSet", "LeaderWorkerSet", "Service", "Service"]] * 2
    assert all(not s["actions"] for doc in history[1:] for s in doc["slices"])
    assert_matches_render(model(path), stepper.live)


def test_steady_state_scale_up_and_down_never_starts_a_rollout(stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}))
    bigger = write_set(tmp_path, stepper.namespace, {"prefill": 5, "decode": 3})
    history = stepper.drive(bigger)
    actions = [a["action"] for doc in history for s in doc["slices"] for a in s["actions"]]
    assert actions == [f"scale leaderworkerset/llm-0-{model(bigger).revision}-prefill 2 → 5",
                       f"scale leaderworkerset/llm-0-{model(bigger).revision}-decode 1 → 3"]
    smaller = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    stepper.drive(smaller)
    assert len(stepper.live.groups()[0]) == 1  # one revision throughout
    assert_matches_render(model(smaller), stepper.live)


def test_template_change_slices_advance_independently(stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, slices=2))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, slices=2, image="img:2")
    new = model(path)
    stuck = naming.lws_name(SET, 1, new.revision, "decode")
    stepper.simulator.never_ready(stuck)

    def slice0_done_slice1_stuck(doc):
        return phases(doc) == ["steady", "waiting"] and doc["slices"][1]["waitingFor"] == ["decode: 0/1 ready"]
    history = stepper.drive(path, until=slice0_done_slice1_stuck)
    assert any(p[0] == "rolling" for p in map(phases, history))

    groups = stepper.live.groups()
    assert set(groups[0]) == {new.revision}  # slice 0 finished without waiting for slice 1
    assert len(groups[1]) == 2 and groups[1][new.revision]["decode"] == 1

    text = stepper(path)
    assert "slice 1: waiting: decode: 0/1 ready" in text.out

    stepper.simulator.healthy(stuck)
    stepper.drive(path)
    assert_matches_render(new, stepper.live)


def test_roles_added_and_removed(stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2}))
    added = write_set(tmp_path, stepper.namespace, {"encode": 1, "prefill": 2, "decode": 2})
    stepper.drive(added)
    assert_matches_render(model(added), stepper.live)

    removed = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2})
    history = stepper.drive(removed)
    rolling = [doc["slices"][0]["rollout"] for doc in history if doc["slices"][0]["phase"] == "rolling"]
    assert rolling[0]["roles"] == ["prefill", "decode", "encode"]  # the removed role drains to 0
    assert_matches_render(model(removed), stepper.live)


def test_slices_raised_and_lowered(stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, slices=1))
    raised = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, slices=3)
    stepper.drive(raised)
    assert_matches_render(model(raised), stepper.live)

    lowered = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, slices=2)
    history = stepper.drive(lowered)
    removed = [s for s in history[0]["slices"] if s["phase"] == "removed"]
    assert [s["slice"] for s in removed] == [2]
    assert sorted(a["action"].split()[0] for a in removed[0]["actions"]) == ["delete"] * 4
    assert_matches_render(model(lowered), stepper.live)


def test_second_template_change_mid_rollout_runs_three_revisions(stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 4, "decode": 2}))
    second = write_set(tmp_path, stepper.namespace, {"prefill": 4, "decode": 2}, image="img:2")
    stepper.drive(second, until=lambda doc: doc["slices"][0]["phase"] == "rolling")
    stepper.simulator.sync(stepper.namespace)
    assert len(stepper.live.groups()[0]) == 2

    third = write_set(tmp_path, stepper.namespace, {"prefill": 4, "decode": 2}, image="img:3")
    history = stepper.drive(third, until=lambda doc: True)
    assert history[0]["slices"][0]["phase"] == "rollout started"
    assert len(stepper.live.groups()[0]) == 3  # three revisions at once
    stepper.simulator.sync(stepper.namespace)
    stepper.drive(third)
    assert set(stepper.live.groups()[0]) == {model(third).revision}
    assert_matches_render(model(third), stepper.live)


def test_new_revision_never_ready_waits_without_further_surge(stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 3, "decode": 3}))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 3, "decode": 3}, image="img:2")
    revision = model(path).revision
    stepper.simulator.never_ready(labels={naming.REVISION_LABEL: revision})
    seen = []
    for _ in range(8):
        assert stepper(path).code == StepExit.OK
        stepper.simulator.sync(stepper.namespace)
        seen.append(stepper.live.groups()[0][revision])
    assert seen[-1] == seen[2]  # nothing moves after the first surge
    assert sum(seen[-1].values()) <= 2  # one surge per role at most
    doc = stepper(path, "-o", "json").json()
    assert doc["slices"][0]["phase"] == "waiting" and doc["slices"][0]["actions"] == []
    assert doc["slices"][0]["waitingFor"] == ["prefill: 0/1 ready", "decode: 0/1 ready"]


def test_stale_status_waits(stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2}))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2}, image="img:2")
    revision = model(path).revision
    stepper.drive(path, until=lambda doc: doc["slices"][0]["phase"] == "rolling")  # the first scale-up
    stepper.simulator.stale(labels={naming.REVISION_LABEL: revision})
    before = stepper.live.versions()
    doc = stepper(path, "-o", "json").json()
    assert doc["slices"][0]["phase"] == "waiting"
    assert any("status is stale" in reason for reason in doc["slices"][0]["waitingFor"])
    assert stepper.live.versions() == before


def test_all_roles_paused_at_zero(stepper, tmp_path):
    paused = write_set(tmp_path, stepper.namespace, {"prefill": 0, "decode": 0})
    history = stepper.drive(paused)
    assert history[-1]["complete"]
    assert stepper.live.groups() == {0: {model(paused).revision: {"prefill": 0, "decode": 0}}}
    assert len(stepper.live.services()) == 2  # a paused revision keeps its (empty) Services, as render does
    assert_matches_render(model(paused), stepper.live)

    running = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1})
    stepper.drive(running)
    assert_matches_render(model(running), stepper.live)
    stepper.drive(paused)  # pausing a running set is a scale to zero, not a rollout
    assert stepper.live.groups() == {0: {model(paused).revision: {"prefill": 0, "decode": 0}}}


def race(clusters: list[ClusterExecutor], ds: DisaggregatedSet, namespace: str) -> list:
    """One pass per cluster client, all started at the same instant: each a Pass or the error."""
    barrier = threading.Barrier(len(clusters))
    outcomes: list = [None] * len(clusters)

    def attempt(index: int) -> None:
        cluster = clusters[index]
        barrier.wait()
        try:
            with cluster.lease(ds.name, namespace) as lease:
                outcomes[index] = run_pass(cluster, ds, namespace, lease)
        except (LeaseHeld, PassInterrupted) as err:
            outcomes[index] = err

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(len(clusters))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_concurrent_steppers_never_act_on_the_same_state(control_plane, stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 3, "decode": 2}))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 3, "decode": 2}, image="img:2")
    ds = model(path)
    initial = stepper.live.totals()
    clusters = [ClusterExecutor(str(control_plane.kubeconfig), "admin") for _ in range(2)]
    refused = 0
    for _ in range(40):
        outcomes = race(clusters, ds, stepper.namespace)
        acted = [o for o in outcomes if isinstance(o, Pass) and o.done]
        if len(acted) == 2:  # both wrote: then one must have read what the other wrote
            assert acted[0].snapshot.lws_resource_version != acted[1].snapshot.lws_resource_version
        for outcome in outcomes:
            if isinstance(outcome, PassInterrupted):
                assert isinstance(outcome.error, Conflict)
        refused += sum(isinstance(o, (LeaseHeld, PassInterrupted)) for o in outcomes)
        check_invariants(ds, stepper.live, initial)
        if any(isinstance(o, Pass) and o.complete for o in outcomes):
            break
        stepper.simulator.sync(stepper.namespace)
    for cluster in clusters:
        cluster.close()
    assert refused > 0, "the two steppers never overlapped: the test did not exercise the lease"
    stepper.drive(path)
    assert_matches_render(ds, stepper.live)


def test_lease_held_by_another_stepper_refuses_with_exit_3(control_plane, stepper, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    with ClusterExecutor(str(control_plane.kubeconfig), "admin") as other:
        with other.lease(SET, stepper.namespace, holder="alice@laptop/4242/abc123"):
            run = stepper(path)
            assert run.code == StepExit.REFUSED
            assert "held by alice@laptop/4242/abc123 until" in run.err
            assert stepper.live.lws("") == []  # nothing was done
            assert stepper(path, "--dry-run").code == StepExit.OK  # a dry run takes no lease
        assert stepper(path).code == StepExit.OK  # released on exit


def test_expired_lease_is_taken_over(control_plane, stepper, tmp_path, api_client):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    long_ago = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    client.CoordinationV1Api(api_client).create_namespaced_lease(stepper.namespace, {
        "metadata": {"name": f"kubectl-disagg-{SET}"},
        "spec": {"holderIdentity": "crashed@host/1/dead00", "leaseDurationSeconds": 30,
                 "renewTime": format_time(long_ago), "acquireTime": format_time(long_ago)}})
    assert stepper(path).code == StepExit.OK
    leases = client.CoordinationV1Api(api_client).list_namespaced_lease(stepper.namespace).items
    assert leases == []  # taken over, then released


def test_scale_computed_from_a_stale_read_is_refused(control_plane, stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    ds = model(write_set(tmp_path, stepper.namespace, {"prefill": 3, "decode": 1}))
    with ClusterExecutor(str(control_plane.kubeconfig), "admin") as cluster:
        result = reconcile(ds, cluster.snapshot(SET, stepper.namespace))
        (scale, *_) = [a for a in result.actions if isinstance(a, Scale)]
        cluster.execute(Scale(scale.name, scale.from_replicas, 2, scale.resource_version, 0),
                        stepper.namespace)  # someone else
        with pytest.raises(Conflict) as err:
            cluster.execute(scale, stepper.namespace)
    assert str(err.value) == (f"leaderworkerset/{scale.name} changed since it was read (spec.replicas is no "
                              "longer what this step read); run the step again")
    assert stepper.live.groups()[0][ds.revision]["prefill"] == 2


def test_foreign_lws_with_colliding_labels_is_left_untouched(stepper, tmp_path, api_client):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    foreign = next(render_set(model(path), stepper.namespace))
    foreign["metadata"]["name"] = "someone-elses"
    foreign["metadata"]["labels"][naming.MANAGED_BY_LABEL] = "helm"
    api = client.CustomObjectsApi(api_client)
    created = api.create_namespaced_custom_object(*LWS, stepper.namespace, "leaderworkersets", foreign)

    run = stepper(path)
    assert run.code == StepExit.OK
    assert "Warning: leaderworkerset/someone-elses carries this set's labels but is managed by helm" in run.err
    stepper.drive(path)
    after = api.get_namespaced_custom_object(*LWS, stepper.namespace, "leaderworkersets", "someone-elses")
    # The simulator writes its status; nobody may touch what it is.
    assert after["metadata"]["generation"] == created["metadata"]["generation"] == 1
    assert (after["metadata"]["labels"], after["spec"]) == (created["metadata"]["labels"], created["spec"])
    assert "annotations" not in after["metadata"]
    assert_matches_render(model(path), stepper.live)


def test_foreign_object_in_the_way_refuses_with_exit_3(stepper, tmp_path, api_client):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    squatter = next(render_set(model(path), stepper.namespace))
    del squatter["metadata"]["labels"][naming.MANAGED_BY_LABEL]
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        *LWS, stepper.namespace, "leaderworkersets", squatter)
    before = stepper.live.versions()

    run = stepper(path)
    assert run.code == StepExit.REFUSED
    assert f"slice 0: blocked: leaderworkerset/{squatter['metadata']['name']} exists and is not " \
           "disaggregatedset/llm's" in run.out
    assert "refusing to step disaggregatedset/llm" in run.err
    assert stepper.live.versions() == before  # not even the other role was created


@pytest.mark.parametrize("kind", ["LeaderWorkerSet", "Service"])
@pytest.mark.parametrize("slices", [3, 9])  # 9 slices: more names than the stepper reads one by one (LISTed)
def test_a_name_held_without_our_labels_refuses_the_whole_pass_with_exit_3(stepper, tmp_path, api_client, kind,
                                                                          slices):
    # The last slice's last object: the pass would have written the other slices before reaching it.
    assert (slices * 2 * 2 > OCCUPANT_GETS_MOST) == (slices == 9)
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, slices=slices)
    name = [o for o in render_set(model(path), stepper.namespace) if o["kind"] == kind][-1]["metadata"]["name"]
    if kind == "Service":
        client.CoreV1Api(api_client).create_namespaced_service(stepper.namespace, {
            "metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}})
    else:
        squatter = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": kind, "metadata": {"name": name},
                    "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [
                        {"name": "other", "image": "other:1"}]}}}}}
        client.CustomObjectsApi(api_client).create_namespaced_custom_object(
            *LWS, stepper.namespace, "leaderworkersets", squatter)
    before = stepper.live.versions()

    run = stepper(path)
    assert run.code == StepExit.REFUSED
    assert (f"slice {slices - 1}: blocked: {kind.lower()}/{name} exists and is not disaggregatedset/llm's "
            "(no managed-by label; field managers ") in run.out
    assert "refusing to step disaggregatedset/llm" in run.err
    assert stepper.live.versions() == before  # no slice was written


def test_unexplainable_state_refuses_with_exit_3(stepper, tmp_path, api_client):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    stepper.drive(path)
    impostor = next(render_set(model(path), stepper.namespace))
    impostor["metadata"]["name"] = "llm-0-deadbeef-prefill"  # labels say another revision
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        *LWS, stepper.namespace, "leaderworkersets", impostor)
    before = stepper.live.versions()
    run = stepper(path, "-o", "yaml")
    assert run.code == StepExit.REFUSED
    assert "should be named" in run.err and "are both slice 0" in run.err
    assert yaml.safe_load(run.out)["refused"]
    assert stepper.live.versions() == before


def test_dry_run_changes_nothing_and_shows_diffs(stepper, tmp_path, api_client):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, image="img:2")
    before = stepper.live.versions()

    run = stepper(path, "--dry-run")
    assert run.code == StepExit.OK
    assert "dry run, 6 changes planned, nothing changed" in run.out  # 2 annotations, 2 LWS, 2 Services
    assert "+    disaggregatedset.x-k8s.io/initial-replicas: \"2\"" in run.out  # the annotate diff
    assert "image: img:2" in run.out  # the whole object a create would make
    assert stepper.live.versions() == before
    assert client.CoordinationV1Api(api_client).list_namespaced_lease(stepper.namespace).items == []

    stepper(path)  # start the rollout for real, then preview a scale
    stepper.simulator.sync(stepper.namespace)
    before = stepper.live.versions()
    doc = stepper(path, "--dry-run", "-o", "json").json()
    (action, *_) = doc["slices"][0]["actions"]
    assert action["action"].startswith("scale ")
    assert "-  replicas: 0\n+  replicas: 1\n" in action["diff"]
    assert action["patch"] == [{"op": "replace", "path": "/spec/replicas", "value": 1}]
    assert stepper.live.versions() == before


def test_until_complete_with_background_simulator(stepper, tmp_path, lws_simulator):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2}, slices=2))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2}, slices=2, image="img:2")
    with lws_simulator.running(stepper.namespace, delay=0.1, interval=0.05):
        run = stepper(path, "--until-complete", "--timeout", "2m")
    assert run.code == StepExit.OK, run.err
    assert "disaggregatedset/llm in " in run.out and "rollout complete at revision" in run.out
    # progress: one line of the fleet per pass, what the slices in flight wait for last (not a terminal)
    assert "llm: " in run.err and "; waiting: slices 0-1 (" in run.err
    assert lws_simulator.errors == []
    assert_matches_render(model(path), stepper.live)


def test_until_complete_times_out_when_a_role_never_becomes_ready(stepper, tmp_path, lws_simulator):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, image="img:2")
    lws_simulator.never_ready(naming.lws_name(SET, 0, model(path).revision, "decode"))
    with lws_simulator.running(stepper.namespace, delay=0, interval=0.05):
        run = stepper(path, "--until-complete", "--timeout", "3s")
    assert run.code == StepExit.TIMEOUT
    assert "timed out after 3s: disaggregatedset/llm" in run.err
    # Between passes it watches, it does not poll: a handful of waiting passes in three seconds
    # (one is enough when the simulator's status writes arrive as one batch of watch events).
    # Piped, a progress line is printed only when it changed: at most one per pass.
    passes = run.err.count("llm: ")
    assert 1 <= passes <= 8, run.err


def test_viewer_is_refused_with_a_readable_message(stepper, tmp_path, control_plane):
    # `viewer` may read, not write, and only in `default`: a set of its own name keeps it apart.
    name = f"rbac-{stepper.namespace[-6:]}"
    path = write_set(tmp_path, "default", {"prefill": 1, "decode": 1}, name=name)
    run = stepper(path, context="viewer")
    assert run.code == StepExit.ERROR
    assert run.err.strip() == (f'lease/kubectl-disagg-{name}: forbidden: User "viewer" cannot create resource '
                               '"leases" in API group "coordination.k8s.io" in the namespace "default"')
    assert stepper(path, "--dry-run", context="viewer").code == StepExit.OK  # reading is allowed

    other = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    run = stepper(other, "--dry-run", context="viewer")
    assert run.code == StepExit.ERROR
    assert 'leaderworkersets in namespace' in run.err and 'forbidden: User "viewer" cannot list' in run.err


def test_several_sets_in_one_input_get_one_pass_each(stepper, tmp_path):
    first = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, name="alpha")
    second = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, name="beta")
    both = tmp_path / "both.yaml"
    both.write_text(first.read_text() + "---\n" + second.read_text())
    run = stepper(both)
    assert run.code == StepExit.OK
    assert run.out.count("4 changes made") == 2
    assert set(stepper.live.groups("alpha")[0]) == {model(first).revision}
    assert set(stepper.live.groups("beta")[0]) == {model(second).revision}


def write_status(api: client.CustomObjectsApi, action: Scale, namespace: str) -> None:
    """What the LWS controller does all the time: a status write, a new resourceVersion."""
    api.patch_namespaced_custom_object_status(
        *LWS, namespace, "leaderworkersets", action.name,
        {"status": {"readyReplicas": action.from_replicas, "replicas": action.from_replicas}},
        _content_type="application/merge-patch+json")


def test_status_written_before_every_write_never_interrupts_a_pass(stepper, tmp_path, monkeypatch, api_client):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}))
    touched = interfere_before_writes(monkeypatch, api_client, stepper.namespace,
                                      lambda api, a: write_status(api, a, stepper.namespace), every=True)
    history = stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, image="img:2"))
    assert len(touched) >= 4 and len(history) >= 4  # every scale of the rollout raced a status write
    assert stepper(write_set(tmp_path, stepper.namespace, {"prefill": 3, "decode": 2}, image="img:2")).code == StepExit.OK
    assert _role_totals(stepper.live.groups()[0]) == {"prefill": 3, "decode": 2}


def test_a_replica_change_between_read_and_scale_fails_the_step_with_exit_1(stepper, tmp_path, monkeypatch,
                                                                             api_client):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 2})
    touched = interfere_before_writes(monkeypatch, api_client, stepper.namespace,
                                      lambda api, a: write_replicas(api, a, stepper.namespace, 3), every=False)
    run = stepper(path)
    assert run.code == StepExit.ERROR
    assert run.err.splitlines() == [
        f"leaderworkerset/{touched[0]} changed since it was read (spec.replicas is no longer what this step "
        "read); run the step again",
        "no action of this pass was carried out",
    ]
    assert _role_totals(stepper.live.groups()[0]) == {"prefill": 3, "decode": 1}


def test_until_complete_reads_again_after_losing_a_race(stepper, tmp_path, monkeypatch, api_client, lws_simulator):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}, image="img:2")
    touched = interfere_before_writes(
        monkeypatch, api_client, stepper.namespace,
        lambda api, a: write_replicas(api, a, stepper.namespace, a.to_replicas), every=False)
    with lws_simulator.running(stepper.namespace, delay=0, interval=0.05):
        run = stepper(path, "--until-complete", "--timeout", "1m")
    assert run.code == StepExit.OK, run.err
    assert (f"Warning: leaderworkerset/{touched[0]} changed since it was read (spec.replicas is no longer what "
            "this step read); reading the state again") in run.err
    assert_matches_render(model(path), stepper.live)
