"""A session's view of a set's LWS kept current by watch events equals a fresh LIST.

`Session.wait_for_change` applies the change it waited for to the LWS it last listed, and the
next `snapshot` reads them from there (one LIST fewer: `--until-complete` reacts to a ready LWS
without re-reading the fleet). These tests compare that view with a new session's LIST after
status changes, a deletion, a creation, and after our own writes (which always list again).
"""

from __future__ import annotations

from benchmarks.request_count import RequestCounter

from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.kube.executor import ClusterExecutor
from tests.support.paths import sets_from_files
from tests.support.stepping import write_set


def fresh(stepper, name: str):
    with ClusterExecutor(str(stepper.control_plane.kubeconfig)) as other:
        return other.snapshot(name, stepper.namespace)


def same_state(watched, listed) -> None:
    assert watched.lws == listed.lws
    assert watched.services == listed.services
    assert watched.objects.keys() == listed.objects.keys()


def test_a_watched_view_equals_a_new_list(stepper, tmp_path):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, slices=2)
    stepper.drive(path)
    new = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1}, slices=2, image="img:2")
    stepper(new)  # the rollout starts: objects the LWS controller has not seen yet
    (ds,) = sets_from_files([str(new)])
    with ClusterExecutor(str(stepper.control_plane.kubeconfig)) as cluster:
        counter = RequestCounter.wrap(cluster.transport)
        first = cluster.snapshot(ds.name, stepper.namespace)
        assert counter.requests[("list", "leaderworkersets")] == 1

        stepper.simulator.sync(stepper.namespace)  # status written: MODIFIED events
        assert cluster.wait_for_change(ds.name, stepper.namespace, first.lws_resource_version, timeout=10)
        counter.clear()
        second = cluster.snapshot(ds.name, stepper.namespace)
        assert counter.requests[("list", "leaderworkersets")] == 0  # read from the view
        assert counter.requests[("list", "services")] == 1
        # The view stands at the first change; a LIST now may be further on: catch up event by event.
        while True:
            listed = fresh(stepper, ds.name)
            if listed.lws_resource_version == second.lws_resource_version or not cluster.wait_for_change(
                    ds.name, stepper.namespace, second.lws_resource_version, timeout=2):
                break
            second = cluster.snapshot(ds.name, stepper.namespace)
        same_state(cluster.snapshot(ds.name, stepper.namespace), fresh(stepper, ds.name))
        assert reconcile(ds, cluster.snapshot(ds.name, stepper.namespace)).actions == \
            reconcile(ds, fresh(stepper, ds.name)).actions

        # A deletion by someone else arrives as an event too.
        victim = sorted(lws.name for lws in second.lws)[0]
        _delete(stepper, victim)
        current = cluster.snapshot(ds.name, stepper.namespace)
        while cluster.wait_for_change(ds.name, stepper.namespace, current.lws_resource_version, timeout=2):
            current = cluster.snapshot(ds.name, stepper.namespace)
            if victim not in {lws.name for lws in current.lws}:
                break
        assert victim not in {lws.name for lws in current.lws}

        # Our own write: the next snapshot lists again.
        result = reconcile(ds, current)
        if result.actions:
            cluster.execute(result.actions[0], stepper.namespace)
            counter.clear()
            cluster.snapshot(ds.name, stepper.namespace)
            assert counter.requests[("list", "leaderworkersets")] == 1


def _delete(stepper, name: str) -> None:
    from kubernetes import client

    client.CustomObjectsApi(stepper.live.api).delete_namespaced_custom_object(
        "leaderworkerset.x-k8s.io", "v1", stepper.namespace, "leaderworkersets", name)


def test_a_watch_of_the_services_sees_a_service_go_from_the_listed_version(stepper, tmp_path):
    """What `rollout status -w --for=complete` sleeps on once only Services are left to change:
    a watch from the snapshot's `services_resource_version` sees a deletion after that LIST, and
    times out quietly when nothing changes."""
    from kubernetes import client

    path = write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1})
    stepper.drive(path)
    (ds,) = sets_from_files([str(path)])
    with ClusterExecutor(str(stepper.control_plane.kubeconfig)) as cluster:
        seen = cluster.snapshot(ds.name, stepper.namespace)
        assert seen.services and seen.services_resource_version
        assert not cluster.wait_for_change(ds.name, stepper.namespace, seen.services_resource_version,
                                           timeout=1, kind="Service")
        client.CoreV1Api(stepper.live.api).delete_namespaced_service(seen.services[0].name, stepper.namespace)
        assert cluster.wait_for_change(ds.name, stepper.namespace, seen.services_resource_version,
                                       timeout=10, kind="Service")
