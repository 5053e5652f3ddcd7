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

from testenv.controlplane import PROJECT_CRDS, ControlPlane, ensure_binaries, upstream_crds_dir
from testenv.lws_simulator import LWSSimulator
from testenv.upstream import UpstreamStack, ensure_upstream, unavailable_reason

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    # This hook sees the whole session's items: mark only ours.
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.integration)


def session_crds() -> tuple[Path, ...]:
    """The upstream CRDs when present (the conformance reference), else the project's.

    CI has the upstream ones and must not silently fall back to ours.
    """
    upstream = upstream_crds_dir()
    if upstream is not None:
        if not upstream.is_dir():
            pytest.fail(f"KUBECTL_DISAGG_CRDS={upstream} is not a directory")
        return (upstream,)
    if os.environ.get("CI") == "true":
        pytest.fail("upstream CRDs not found in ../shared/crds (set KUBECTL_DISAGG_CRDS); "
                    "CI must run the integration tier against them")
    return PROJECT_CRDS


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
