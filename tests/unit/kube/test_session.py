"""`Session`: its configuration (where and who, the namespace a command falls back to), the
watched view of a set's LWS, the reads sent side by side, and the RolloutState read only where
its kind is served. No control plane needed."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from kubectl_disagg.clock import SYSTEM_CLOCK
from kubectl_disagg.core.api.model import namespace_for
from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client import kubeconfig as kubeconfig_module
from kubectl_disagg.kube.client.api_errors import Gone, NotFound
from kubectl_disagg.kube.session import OCCUPANT_GETS_MOST, Session, side_by_side
from tests.support.kube import write_kubeconfig
from tests.support.paths import CERTS
from tests.support.sets import make_set


# A self-signed certificate made for these tests (its key beside it): any PEM will do as a CA.
TEST_CA = (CERTS / "unit-test-client.crt").read_text()


# --- configuration --------------------------------------------------------------------------------


def test_namespace_comes_from_the_flag_then_the_document_then_the_context(tmp_path):
    kubeconfig = write_kubeconfig(tmp_path, "https://127.0.0.1:6443", namespace="team-a")
    with Session(str(kubeconfig)) as cluster:
        assert cluster.default_namespace == "team-a"
        assert cluster.server == "https://127.0.0.1:6443"
        in_document = make_set({"prefill": 1, "decode": 1})  # its document says "serving"
        fallback = cluster.default_namespace
        assert namespace_for(in_document, "serving", fallback) == "serving"
        assert namespace_for(in_document, None, fallback) == "serving"
        assert namespace_for(SimpleNamespace(namespace=None), None, fallback) == "team-a"  # none in the document
        assert namespace_for(SimpleNamespace(namespace=None), "flag", fallback) == "flag"


def test_in_a_pod_without_kubeconfig_the_service_account_is_used(tmp_path, monkeypatch):
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "namespace").write_text("inference\n")
    (account / "token").write_text("pod-token\n")
    (account / "ca.crt").write_text(TEST_CA)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setattr(kubeconfig_module, "SERVICE_ACCOUNT_DIR", str(account))
    with Session() as cluster:
        assert (cluster.server, cluster.default_namespace) == ("https://10.96.0.1:443", "inference")
        assert cluster.client.transport._credentials.authorization() == "Bearer pod-token"


def test_a_broken_kubeconfig_is_a_readable_error(tmp_path):
    from kubectl_disagg.kube.session import Session

    broken = tmp_path / "config"
    broken.write_text("apiVersion: v1\nclusters: [\n")
    with pytest.raises(UserError) as caught:
        Session(kubeconfig=str(broken))
    assert caught.value.lines()[0].startswith(f"kubeconfig {broken}: cannot be read")


# --- reading --------------------------------------------------------------------------------------


def test_a_watched_lws_view_takes_events_in_order_and_refuses_what_it_does_not_know():
    from kubectl_disagg.kube.session import WatchedLWS

    def lws(name: str, version: str, replicas: int = 1) -> dict:
        return {"metadata": {"name": name, "resourceVersion": version,
                             "labels": {"disaggregatedset.x-k8s.io/name": "llm"}},
                "spec": {"replicas": replicas}, "status": {}}

    view = WatchedLWS.listed({"metadata": {"resourceVersion": "10"}, "items": [lws("b", "9"), lws("a", "8")]})
    before = view.live()
    assert [v.name for v in before] == ["a", "b"] and view.resource_version == "10"
    assert view.apply({"type": "MODIFIED", "object": lws("b", "11", replicas=3)})
    assert view.apply({"type": "ADDED", "object": lws("c", "12")})
    assert view.apply({"type": "DELETED", "object": lws("a", "13")})
    after = view.live()
    assert [v.name for v in after] == ["b", "c"] and view.resource_version == "13"
    assert after[0].replicas == 3 and after[0] is not before[1]
    assert view.live()[1] is after[1]  # unchanged objects are not parsed again
    assert not view.apply({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "14"}}})


def test_side_by_side_runs_calls_at_once_and_answers_in_call_order():
    both_running = threading.Barrier(2, timeout=5)  # each call waits for the other: they overlap

    def answer(value):
        both_running.wait()
        return value

    assert side_by_side(lambda: answer("a"), None, lambda: answer("b")) == ["a", None, "b"]
    assert side_by_side(None, lambda: threading.current_thread()) == [None, threading.current_thread()]  # one: here


def test_side_by_side_raises_the_first_error_in_call_order_once_every_call_ended():
    ended = []

    def fail_late():
        time.sleep(0.05)
        ended.append("late")
        raise Gone("first asked")

    def fail_early():
        ended.append("early")
        raise NotFound("second asked")

    with pytest.raises(Gone, match="first asked"):
        side_by_side(fail_late, fail_early, lambda: ended.append("fine"))
    assert sorted(ended) == ["early", "fine", "late"]


def test_a_sets_rollout_state_is_read_only_where_the_kind_is_served():
    calls = []

    class Client:
        def __init__(self, serves):
            self.answer = serves

        def serves(self, resource):
            calls.append(f"discovery {resource.group}/{resource.version}")
            return self.answer

        def get(self, resource, namespace, name):
            calls.append(f"get {resource.plural}/{name}")
            if name == "gone":
                raise NotFound(f"rolloutstate/{name} not found (404 NotFound)")
            return {"kind": resource.kind, "metadata": {"name": name}}

    def session(serves):
        cluster = Session.__new__(Session)  # no kubeconfig: only the reads under test
        cluster.client, cluster._serves_rollout_states = Client(serves), None
        return cluster

    served = session(True)
    assert served.rollout_state("llm", "serving") == {"kind": "RolloutState", "metadata": {"name": "llm"}}
    assert served.rollout_state("gone", "serving") is None  # none applied: the LWS alone tell
    assert calls == ["discovery kubectl-disagg.x-k8s.io/v1alpha1", "get rolloutstates/llm", "get rolloutstates/gone"]
    calls.clear()
    unserved = session(False)
    assert [unserved.rollout_state("llm", "serving") for _ in range(2)] == [None, None]
    assert calls == ["discovery kubectl-disagg.x-k8s.io/v1alpha1"]  # asked once, nothing read


@pytest.mark.parametrize("count", [3, OCCUPANT_GETS_MOST, OCCUPANT_GETS_MOST + 1, 500])
def test_occupants_are_the_same_whether_read_by_name_or_listed(count):
    """A few names are read one GET each; many, by one LIST per kind of the namespace: either
    way the objects at those names, whoever's they are, and nothing else."""
    names = [("LeaderWorkerSet", f"llm-{i}-new-decode") if i % 2 else ("Service", f"llm-{i}-new-decode-prv")
             for i in range(count)]
    stored = {key: {"metadata": {"name": key[1], "labels": {"team": "other"}}} for key in names[::7]}
    stored[("Service", "unrelated")] = {"metadata": {"name": "unrelated"}}
    requests = []

    class Client:
        def get(self, resource, namespace, name):
            requests.append("get")
            if (resource.kind, name) not in stored:
                raise NotFound(f"{resource.plural}/{name} not found")
            return {"apiVersion": "x", "kind": resource.kind, **stored[(resource.kind, name)]}

        def list(self, resource, namespace, label_selector):
            requests.append(f"list {resource.plural} {label_selector!r}")
            return {"items": [obj for (kind, _), obj in stored.items() if kind == resource.kind]}

    cluster = Session.__new__(Session)  # no kubeconfig: only the reads under test
    cluster.client = Client()
    found = cluster.occupants(names, "serving")
    assert set(found) == {key for key in names if key in stored}
    assert all(obj["kind"] == key[0] and obj["metadata"]["name"] == key[1] for key, obj in found.items())
    if count > OCCUPANT_GETS_MOST:
        assert sorted(requests) == ["list leaderworkersets ''", "list services ''"]
    else:
        assert requests == ["get"] * count


def test_issue47_item14_a_wait_with_the_rollout_state_ends_at_the_first_change_of_either_kind():
    """`rollout status -w` under a RolloutPolicy watches the set's LWS and its RolloutState at
    once: a write of the state (a verb, a stepper at a gate) ends the wait while the LWS stay
    quiet; a watch still running from the last wait is waited on again, never doubled; with
    nothing changing, the wait ends at its timeout."""
    started, state_changes = [], threading.Event()

    class Client:
        def watch(self, resource, namespace, selector, resource_version, timeout, field_selector=None):
            started.append((resource.kind, resource_version, field_selector))
            if resource.kind == "RolloutState":
                return state_changes.wait(timeout)
            time.sleep(timeout)  # the LWS stay quiet for the whole watch
            return False

    cluster = Session.__new__(Session)  # no kubeconfig: only the wait under test
    cluster.client, cluster._watched, cluster.clock = Client(), {}, SYSTEM_CLOCK
    cluster._background, cluster._woken = {}, threading.Event()
    threading.Timer(0.1, state_changes.set).start()
    began = time.monotonic()
    assert cluster.wait_for_change("llm", "serving", "41", timeout=5, state_version="40") is True
    assert time.monotonic() - began < 2
    assert sorted(started) == [("LeaderWorkerSet", "41", None), ("RolloutState", "40", "metadata.name=llm")]
    state_changes.clear()
    began = time.monotonic()
    assert cluster.wait_for_change("llm", "serving", "41", timeout=0.3, state_version="42") is False
    assert 0.25 < time.monotonic() - began < 2
    # the LWS watch of the first wait was still running: waited on again, not started twice
    assert [kind for kind, _, _ in started].count("LeaderWorkerSet") == 1
    assert started[-1] == ("RolloutState", "42", "metadata.name=llm")


def test_issue47_item14_a_refused_rollout_state_watch_is_a_change_once_then_the_lws_alone_are_watched():
    """A user whose Role lacks `watch rolloutstates`: the refusal ends one wait (the next look
    reads, and says whatever is wrong), and the state is not watched again: no loop of looks."""
    started = []

    class Client:
        def watch(self, resource, namespace, selector, resource_version, timeout, field_selector=None):
            started.append(resource.kind)
            if resource.kind == "RolloutState":
                raise UserError("rolloutstates.kubectl-disagg.x-k8s.io is forbidden: cannot watch")
            time.sleep(timeout)
            return False

    cluster = Session.__new__(Session)
    cluster.client, cluster._watched, cluster.clock = Client(), {}, SYSTEM_CLOCK
    cluster._background, cluster._woken = {}, threading.Event()
    assert cluster.wait_for_change("llm", "serving", "41", timeout=5, state_version="40") is True
    began = time.monotonic()
    assert cluster.wait_for_change("llm", "serving", "41", timeout=0.3, state_version="40") is False
    assert 0.25 < time.monotonic() - began < 2 and started.count("RolloutState") == 1
