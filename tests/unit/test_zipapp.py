"""The krew route: the manifest, and the self-contained zipapp `make zipapp` builds.

The pyz is built once per module (pip fetches the dependencies' wheels, as `make unit` does
for the venv) and then run with python's -S, so nothing outside the zip can be imported, on a
minimal PATH with HOME and the XDG directories an empty directory nobody may write: it must
need no network, no virtual environment and no cache.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest
import yaml

from kubectl_disagg.cli import main
from tests.support.paths import EXAMPLES, REPO

BUILD = REPO / "hack" / "build_zipapp.py"
EXAMPLE = EXAMPLES / "prefill-decode.yaml"


def build(dist) -> None:
    subprocess.run([sys.executable, str(BUILD), "--dist", str(dist)], check=True, capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    where = tmp_path_factory.mktemp("dist")
    build(where)
    (where / "kubectl_complete-disagg").symlink_to(where / "kubectl-disagg.pyz")
    return where


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    empty = tmp_path_factory.mktemp("home")
    empty.chmod(0o555)
    yield empty
    assert list(empty.iterdir()) == [], "a run wrote into HOME"
    empty.chmod(0o755)


def run(program, home, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CACHE_HOME": str(home),
           "XDG_CONFIG_HOME": str(home), "XDG_DATA_HOME": str(home), "XDG_STATE_HOME": str(home)}
    return subprocess.run([sys.executable, "-S", str(program), *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_krew_manifest():
    manifest = yaml.safe_load((REPO / "deploy" / "krew" / "disagg.yaml").read_text())
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "disagg"
    assert manifest["spec"]["version"] == "v0.1.0"  # pyproject's version
    (platform,) = manifest["spec"]["platforms"]
    assert platform["bin"] == "kubectl-disagg"
    assert {"linux", "darwin"} <= set(platform["selector"]["matchExpressions"][0]["values"])
    assert len(platform["sha256"]) == 64
    assert 'version = "0.1.0"' in (REPO / "pyproject.toml").read_text()


def test_the_archive_holds_pure_python_and_no_kubernetes_client(dist):
    names = zipfile.ZipFile(dist / "kubectl-disagg.pyz").namelist()
    tops = {name.split("/")[0] for name in names}
    assert {"__main__.py", "kubectl_disagg", "click", "yaml", "jinja2", "markupsafe", "jsonpatch.py",
            "jsonpointer.py"} <= tops
    assert not {"kubernetes", "urllib3"} & tops  # the API server is reached with the standard library
    assert [n for n in names if n.endswith((".so", ".pyd", ".dylib"))] == []
    assert "kubectl_disagg/data/revision-table.json" in names
    sources = {n for n in names if n.endswith(".py")}
    assert {n + "c" for n in sources} == {n for n in names if n.endswith(".pyc")}  # bytecode beside each module
    assert {"kubectl_disagg/templates/plan.txt.j2", "kubectl_disagg/crd_yaml/disaggregatedsets.yaml"} <= set(names)


def test_render_from_the_zip_is_render_in_process(dist, home, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["render", "-f", str(EXAMPLE)])
    in_process = capsys.readouterr().out
    assert exited.value.code == 0 and in_process.startswith("apiVersion: leaderworkerset.x-k8s.io/v1")
    zipped = run(dist / "kubectl-disagg.pyz", home, "render", "-f", str(EXAMPLE))
    assert (zipped.returncode, zipped.stderr) == (0, "")
    assert zipped.stdout == in_process


def test_validate_crds_completion_and_plan_from_the_zip(dist, home):
    pyz = dist / "kubectl-disagg.pyz"
    validated = run(pyz, home, "validate", "-f", str(EXAMPLE))  # the revision table and the type checks
    assert validated.returncode == 0 and ": valid (revision " in validated.stdout, validated.stderr
    crds = run(pyz, home, "crds")  # CRD YAML shipped as package data
    assert crds.returncode == 0, crds.stderr
    assert [d["kind"] for d in yaml.safe_load_all(crds.stdout)] == ["CustomResourceDefinition"] * 4
    completion = run(pyz, home, "completion", "bash")  # a Jinja2 template
    assert completion.returncode == 0 and "_kubectl_disagg_complete()" in completion.stdout, completion.stderr
    plan = run(pyz, home, "rollout", "plan", "-f", str(EXAMPLE), "--from", "1,1")  # offline, a Jinja2 table
    assert plan.returncode == 0, plan.stderr
    assert "disaggregatedset/llama" in plan.stdout and "final drain" in plan.stdout


def test_the_completion_link_answers_kubectl(dist, home):
    answered = run(dist / "kubectl_complete-disagg", home, "rollout", "")
    assert answered.returncode == 0, answered.stderr
    lines = answered.stdout.splitlines()
    assert {line.split("\t")[0] for line in lines[:-1]} == {"abort", "history", "pause", "plan", "promote", "restart", "resume",
                                                             "retry", "state", "status", "step", "undo", "dashboard"}
    assert lines[-1] == ":4"  # Cobra's ShellCompDirectiveNoFileComp


def test_two_builds_are_byte_identical(dist, tmp_path):
    build(tmp_path)
    for name in ("kubectl-disagg.pyz", "kubectl-disagg.tar.gz", "disagg.yaml"):
        assert (tmp_path / name).read_bytes() == (dist / name).read_bytes(), name
