"""Integration tier: tests against a real kube-apiserver + etcd with the
upstream CRDs installed where they are present (CI), else the project's own
(see testenv/controlplane.py).

Every test collected under this directory carries the ``integration`` marker,
so ``pytest -m "not integration"`` runs the fast tiers only.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path

import pytest

from testenv.controlplane import ControlPlane, ensure_binaries
from testenv.lws_simulator import LWSSimulator
from testenv.prometheus import LatencyExporter, NetworkNamespace, PrometheusServer
from testenv.upstream import UpstreamStack, ensure_upstream, unavailable_reason
from tests.oracles.prometheus_oracle import require
from tests.support.git_repo import GitopsRepo, READER
from tests.support.paths import session_crds
from tests.support.privilege import Accounts
from tests.support.stepping import Live, Stepper


HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    # This hook sees the whole session's items: mark only ours.
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def binaries(request) -> Path:
    """The directory of etcd, kube-apiserver and kubectl, for a test that starts control planes
    of its own (a demo, a fresh playground per page): built once, no control plane started."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        return ensure_binaries()


@pytest.fixture(scope="session")
def control_plane(request):
    """One control plane for the whole session (starting one takes seconds)."""
    crds = session_crds()
    # A cold build of the binaries takes minutes: show its progress live
    # instead of capturing it.
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        bin_dir = ensure_binaries()
    with ControlPlane(crds=crds, bin_dir=bin_dir) as cp:
        yield cp


@pytest.fixture
def namespace(control_plane, request) -> str:
    """A fresh namespace per test, named after the test for easier debugging.

    It is not deleted afterwards: without kube-controller-manager a deleted
    namespace would only sit in Terminating, and the whole cluster is thrown
    away at the end of the session anyway.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{slug}-{secrets.token_hex(3)}"
    control_plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    return name


@pytest.fixture
def api_client(control_plane):
    """A kubernetes ApiClient authenticated as the cluster admin."""
    with control_plane.api_client() as client:
        yield client


@pytest.fixture
def lws_simulator(api_client):
    """An LWSSimulator (healthy by default); background mode stopped at the end."""
    simulator = LWSSimulator(api_client)
    yield simulator
    simulator.stop()


@pytest.fixture(scope="session")
def upstream_stack(request):
    """The real LWS and DisaggregatedSet controllers (the LWS manager built from the source
    archive beside the clone), kube-controller-manager, kube-scheduler and kwok nodes, on a
    control plane of their own with the manager's CRDs and webhooks (testenv/upstream.py).

    Skipped, naming why, where the source archive is absent; under CI=true that is a failure.
    """
    reason = unavailable_reason()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI must run the upstream tier")
        pytest.skip(reason)
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        binaries = ensure_upstream()
    stack = UpstreamStack().start(binaries)
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture
def upstream_namespaces(upstream_stack, request):
    """Makes fresh namespaces on the upstream stack's control plane, deleted after the test (the
    namespace controller and the garbage collector run there: the pods go, their GPUs free)."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:36].strip("-")
    created: list[str] = []

    def make() -> str:
        name = f"{slug}-{len(created)}-{secrets.token_hex(2)}"
        upstream_stack.cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        created.append(name)
        return name
    yield make
    for name in created:
        with contextlib.suppress(OSError):
            upstream_stack.cp.request("DELETE", f"/api/v1/namespaces/{name}")


@pytest.fixture
def stepper(control_plane, namespace, capsys, lws_simulator, api_client) -> Stepper:
    """Runs `rollout step` in-process against the test's namespace (tests/support/stepping.py)."""
    return Stepper(control_plane, namespace, capsys, lws_simulator, api_client)


@pytest.fixture
def accounts(control_plane, namespace, tmp_path) -> Accounts:
    """Service accounts with exactly the RBAC a verb needs (tests/support/privilege.py)."""
    return Accounts(control_plane, namespace, tmp_path)


@pytest.fixture(scope="module")
def exporter():
    """A local latency exporter, one per test module."""
    exporter = LatencyExporter()
    yield exporter
    exporter.close()


@pytest.fixture(scope="module")
def prometheus(exporter):
    """A real Prometheus scraping the module's exporter."""
    server = PrometheusServer(require("prometheus"), [exporter.address])
    yield server
    server.close()


@pytest.fixture
def prometheus_in_a_namespace(exporter):
    """A Prometheus inside a network namespace of the test's own, reached through a veth pair (root only)."""
    if os.geteuid() != 0:
        message = "the service proxy test creates a network namespace and a veth pair: needs root"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; CI must run it")
        pytest.skip(message)
    binary = require("prometheus")
    netns = NetworkNamespace(f"kdp{secrets.token_hex(3)}", f"10.{200 + secrets.randbelow(50)}.{secrets.randbelow(250)}.0")
    inner = LatencyExporter(host=netns.outside)  # reachable from inside through the veth pair
    try:
        server = PrometheusServer(binary, [inner.address], host=netns.inside, netns=netns)
    except BaseException:
        inner.close()
        netns.close()
        raise
    yield server, inner, netns
    server.close()
    inner.close()
    netns.close()


@pytest.fixture
def repo(tmp_path, control_plane, namespace, lws_simulator, api_client, capsys) -> GitopsRepo:
    """A git repository of sets that Argo CD's harness syncs, with a reader user (tests/support/git_repo.py)."""
    control_plane.kubectl("create", "role", "lws-reader", "-n", namespace, "--verb=get,list,watch",
                          "--resource=leaderworkersets.leaderworkerset.x-k8s.io",
                          "--resource=rolloutstates.kubectl-disagg.x-k8s.io")
    control_plane.kubectl("create", "rolebinding", "lws-reader", "-n", namespace, "--role=lws-reader",
                          f"--user={READER}")
    return GitopsRepo(tmp_path / "repo", control_plane, namespace, lws_simulator, Live(api_client, namespace), capsys)
