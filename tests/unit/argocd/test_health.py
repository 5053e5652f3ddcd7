"""The Argo CD health checks, run in Argo CD's own Lua VM (tests/oracles/argocd_harness.py).

First the harness earns trust: it must reproduce every case of Argo CD's own
resource_customizations/**/health_test.yaml (read from the argo-cd module in the Go module
cache, never copied here), run as Argo CD's test runner runs them. Then it judges ours:
`health_test.yaml` next to each of our scripts, in the argocd-cm sandbox (no useOpenLibs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.oracles.argocd_harness import (CUSTOMIZATIONS, SCRIPTS, LuaError, health, health_of_code, resource_health,
                                  upstream_health_cases)

# Argo CD v3.5.1 ships 1,100 live health cases (commented-out ones excluded); fewer means the
# harness or the download lost some, more means the pinned release changed.
UPSTREAM_CASES = 1100


def test_the_harness_reproduces_every_argo_cd_health_case():
    cases = upstream_health_cases()
    assert len(cases) == UPSTREAM_CASES
    wrong = [case for case in cases if case.get("error") or case["got"] != case["expected"]]
    assert wrong == []
    assert {case["expected"]["status"] for case in cases} >= {"Healthy", "Progressing", "Degraded", "Suspended"}


def cases():
    for script in SCRIPTS:
        directory = script.parent
        for test in yaml.safe_load((directory / "health_test.yaml").read_text())["tests"]:
            kind = directory.relative_to(CUSTOMIZATIONS).as_posix()
            yield pytest.param(script, directory / test["inputPath"], test["healthStatus"],
                               id=f"{kind}:{Path(test['inputPath']).stem}")


def test_both_kinds_have_a_health_check():
    assert [s.parent.relative_to(CUSTOMIZATIONS).as_posix() for s in SCRIPTS] == [
        "disaggregatedset.x-k8s.io/DisaggregatedSet", "kubectl-disagg.x-k8s.io/RolloutState",
        "leaderworkerset.x-k8s.io/LeaderWorkerSet"]


@pytest.mark.parametrize("script, input_path, expected", list(cases()))
def test_health(script, input_path, expected):
    obj = yaml.safe_load(input_path.read_text())
    assert health(script, obj) == {"status": expected["status"], "message": expected["message"]}
    # Argo CD's built-in scripts run with every library open: ours behave the same there.
    assert health(script, obj, open_libs=True) == {"status": expected["status"], "message": expected["message"]}


def test_every_testdata_file_is_tested():
    for script in SCRIPTS:
        listed = {t["inputPath"] for t in yaml.safe_load((script.parent / "health_test.yaml").read_text())["tests"]}
        present = {p.relative_to(script.parent).as_posix() for p in (script.parent / "testdata").glob("*.yaml")}
        assert listed == present


def test_every_status_is_covered():
    for script in SCRIPTS:
        tests = yaml.safe_load((script.parent / "health_test.yaml").read_text())["tests"]
        # A git rollout's position waits for a commit (Suspended, as a paused Argo Rollout); the
        # position `rollout step` keeps in the cluster progresses (RolloutPolicy, design §9).
        expected = {"Healthy", "Progressing", "Degraded"} | ({"Suspended"} if script.parent.name == "RolloutState"
                                                            else set())
        assert {t["healthStatus"]["status"] for t in tests} == expected


@pytest.mark.parametrize("code", [
    'return {status = string.format("%d", 1)}',
    "return {status = math.floor(1.5)}",
    'return {status = ("x"):upper()}',
    "return {status = os.time()}",
    "return {status = table.date()}",
    'return {status = require("string").len("x")}',
    'return {status = io.read()}',
])
def test_the_sandbox_refuses_what_argo_cd_does_not_give(code):
    with pytest.raises(LuaError):
        health_of_code(code)


def test_the_sandbox_gives_base_table_and_require_os():
    assert health_of_code('return {status = "Healthy", message = table.concat({"a", tostring(2)}, "/") .. #"xy"}') == {
        "status": "Healthy", "message": "a/22"}
    assert health_of_code('local os = require("os"); return {status = "Healthy", message = os.date("!%Y", 0)}') == {
        "status": "Healthy", "message": "1970"}


def test_argo_cd_rules_for_what_a_script_returns():
    assert health_of_code("return nil") == {"status": "", "message": ""}
    assert health_of_code("return {}") == {"status": "", "message": ""}  # an empty table encodes as []
    assert health_of_code('return {status = "Fine"}') == {"status": "Unknown", "message": "Lua returned an invalid health status"}
    with pytest.raises(LuaError, match="context deadline exceeded"):
        health_of_code("while true do end")  # Argo CD gives a script one second


@pytest.mark.parametrize("script, input_path, expected", list(cases()))
def test_the_installed_argocd_cm_gives_each_object_our_check(script, input_path, expected):
    """deploy/argocd/argocd-cm.yaml read as Argo CD's settings read it: its keys reach our kinds."""
    obj = yaml.safe_load(input_path.read_text())
    assert resource_health(obj) == {"status": expected["status"], "message": expected["message"]}


def test_argo_cd_rules_before_any_script():
    """gitops-engine GetResourceHealth: deletion first (unless a hook finalizer holds the
    object); Argo CD's built-in Service check; no health for kinds without a check."""
    deleting = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                "metadata": {"name": "x", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert resource_health(deleting) == {"status": "Progressing", "message": "Pending deletion"}
    held = {**deleting, "metadata": {**deleting["metadata"], "finalizers": ["argocd.argoproj.io/hook-finalizer"]}}
    assert resource_health(held)["message"] == "Waiting for the LeaderWorkerSet controller to report status"
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "LoadBalancer"}}
    assert resource_health(service) == {"status": "Progressing"}
    assert resource_health({**service, "spec": {"clusterIP": "None"}}) == {"status": "Healthy"}
    assert resource_health({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}) is None
