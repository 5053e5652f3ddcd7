"""The Argo CD health checks, run by a real Lua 5.1 with only what Argo CD gives them.

Argo CD runs `resource_customizations/<group>/<Kind>/health.lua` in gopher-lua with the base,
table and package libraries only (unless useOpenLibs is set), and tests them with the
`health_test.yaml` next to each script. This runner reads the same files, gives the scripts
the same restricted globals and compares status and message exactly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.argocd_lua import CUSTOMIZATIONS, SCRIPTS, health, lua51, restricted_runtime


def cases():
    for script in SCRIPTS:
        directory = script.parent
        for test in yaml.safe_load((directory / "health_test.yaml").read_text())["tests"]:
            kind = directory.relative_to(CUSTOMIZATIONS).as_posix()
            yield pytest.param(script, directory / test["inputPath"], test["healthStatus"],
                               id=f"{kind}:{Path(test['inputPath']).stem}")


def test_both_kinds_have_a_health_check():
    assert [s.parent.relative_to(CUSTOMIZATIONS).as_posix() for s in SCRIPTS] == [
        "disaggregatedset.x-k8s.io/DisaggregatedSet", "leaderworkerset.x-k8s.io/LeaderWorkerSet"]


@pytest.mark.parametrize("script, input_path, expected", list(cases()))
def test_health(script, input_path, expected):
    obj = yaml.safe_load(input_path.read_text())
    assert health(script, obj) == {"status": expected["status"], "message": expected["message"]}


def test_every_testdata_file_is_tested():
    for script in SCRIPTS:
        listed = {t["inputPath"] for t in yaml.safe_load((script.parent / "health_test.yaml").read_text())["tests"]}
        present = {p.relative_to(script.parent).as_posix() for p in (script.parent / "testdata").glob("*.yaml")}
        assert listed == present


def test_every_status_is_covered():
    for script in SCRIPTS:
        tests = yaml.safe_load((script.parent / "health_test.yaml").read_text())["tests"]
        assert {t["healthStatus"]["status"] for t in tests} == {"Healthy", "Progressing", "Degraded"}


@pytest.mark.parametrize("code", [
    'return string.format("%d", 1)',
    "return math.floor(1.5)",
    'return ("x"):upper()',
    'return require("string").len("x")',
    "return os.time()",
    'return python.eval("1")',
])
def test_the_sandbox_refuses_what_argo_cd_does_not_give(code):
    with pytest.raises(lua51.LuaError):
        restricted_runtime().execute(code)


def test_the_sandbox_keeps_base_and_table():
    runtime = restricted_runtime()
    assert runtime.execute('return table.concat({"a", tostring(2)}, "/") .. #"xy"') == "a/22"
    assert runtime.execute("return _VERSION") == "Lua 5.1"
