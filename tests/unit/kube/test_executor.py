"""`executor`: the permissions a pass needs, asked before its first write and remembered for
one lease term, and a hand-over's wait for the garbage collector (the one wait). Its writes run
against a real API server in tests/integration."""

from __future__ import annotations


def test_permissions_needed_by_a_pass_one_per_verb_and_resource():
    from kubectl_disagg.kube.executor import Forbidden, permissions_needed
    from kubectl_disagg.core.controller.reconcile import Create, Delete, Scale
    from kubectl_disagg.kube.client import LWS

    scale = Scale(name="a", from_replicas=1, to_replicas=2, resource_version="1", slice=0)
    actions = [Create(object={"kind": "Service", "metadata": {"name": "s"}}, slice=0), scale, scale,
               Delete(kind="LeaderWorkerSet", name="b", uid="u", resource_version="2", slice=0)]
    needed = [(verb, resource.plural) for verb, resource in permissions_needed(actions)]
    assert needed == [("create", "services"), ("patch", "services"), ("patch", "leaderworkersets"),
                      ("delete", "leaderworkersets"), ("update", "leases"), ("delete", "leases")]
    assert permissions_needed([]) == []
    message = str(Forbidden([("patch", LWS)], "serving"))
    assert "\n" not in message
    assert message.startswith("forbidden: this pass needs permission to patch "
                              "leaderworkersets.leaderworkerset.x-k8s.io in namespace serving")


def test_granted_permissions_are_remembered_for_one_term_per_namespace():
    from kubectl_disagg.kube.executor import GrantedPermissions
    from tests.fakes.clock import FakeClock
    from kubectl_disagg.kube.client import LEASE, LWS

    now = [100.0]
    granted = GrantedPermissions(30, clock=FakeClock(read=lambda: now[0]))
    wanted = [("patch", LWS), ("update", LEASE)]
    assert granted.unknown(wanted, "ns") == wanted  # nothing asked yet
    granted.grant("patch", LWS, "ns", now[0])
    assert granted.unknown(wanted, "ns") == [("update", LEASE)]
    assert granted.unknown(wanted, "other") == wanted  # a grant is per namespace
    assert granted.unknown([("delete", LWS)], "ns") == [("delete", LWS)]  # and per verb
    now[0] = 129.9
    assert granted.unknown(wanted, "ns") == [("update", LEASE)]
    now[0] = 130.0  # the term is over: ask again
    assert granted.unknown(wanted, "ns") == wanted


def test_a_permission_is_trusted_for_one_lease_term():
    from kubectl_disagg.kube.executor import PERMISSION_TERM_SECONDS
    from kubectl_disagg.kube.lease import DEFAULT_LEASE_SECONDS

    assert PERMISSION_TERM_SECONDS == DEFAULT_LEASE_SECONDS


class _OrphaningClient:
    """The API server as a hand-over sees it: the set is deleted (orphaning its objects) and
    stays until the garbage collector lets it go, `lingers` reads later."""

    def __init__(self, lingers: int):
        self.lingers, self.requests = lingers, []

    def delete(self, resource, namespace, name, uid, resource_version, **options):
        self.requests.append(("delete", options["propagation"]))

    def get(self, resource, namespace, name):
        from kubectl_disagg.kube.client import NotFound

        self.requests.append(("get",))
        if self.lingers == 0:
            raise NotFound(f"disaggregatedset/{name} not found (404 NotFound)")
        self.lingers -= 1
        return {"metadata": {"resourceVersion": f"v{self.lingers}"}}

    def watch(self, resource, namespace, selector, version, seconds, field_selector=None):
        self.requests.append(("watch", version, field_selector))
        return True


def _executor(client):
    from kubectl_disagg.kube.executor import ClusterExecutor

    executor = object.__new__(ClusterExecutor)  # no kubeconfig: the client is the fake
    executor.client = client
    return executor


STORED = {"metadata": {"name": "llm", "namespace": "serving", "uid": "u", "resourceVersion": "7", "generation": 1}}


def test_orphaning_a_set_watches_until_the_garbage_collector_lets_it_go():
    client = _OrphaningClient(lingers=2)
    _executor(client).orphan_set(STORED, timeout=None)
    assert client.requests == [("delete", "Orphan"), ("get",), ("watch", "v1", "metadata.name=llm"),
                               ("get",), ("watch", "v0", "metadata.name=llm"), ("get",)]


def test_orphaning_a_set_gives_up_at_its_deadline_without_watching_past_it():
    import pytest

    from kubectl_disagg.errors import UserError

    client = _OrphaningClient(lingers=5)
    with pytest.raises(UserError, match="still waits for the garbage collector"):
        _executor(client).orphan_set(STORED, timeout=0)
    assert client.requests == [("delete", "Orphan"), ("get",)]
