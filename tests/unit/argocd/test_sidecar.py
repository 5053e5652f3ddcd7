"""The plugin as Argo CD's sidecar runs it: plugin.yaml's argv in a read-only copy of the
repository, Argo CD's variables, no writable HOME, no kubeconfig, no network."""

from __future__ import annotations

import json

import pytest
import yaml

from kubectl_disagg.argocd.contract import REVISION_ANNOTATION
from tests.argocd_sidecar import PLUGIN, Sidecar
from tests.conftest import EXAMPLES

EXAMPLE = (EXAMPLES / "prefill-decode.yaml").read_text()  # llama, namespace serving
UNNAMESPACED = EXAMPLE.replace("  namespace: serving\n", "")
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"
HOSTILE = "$(touch PWNED); `touch PWNED` && echo 'x\"y' | sh\nsecond line ${HOME}"


def objects(result) -> list[dict]:
    assert result.returncode == 0, result.stderr.decode()
    return list(yaml.safe_load_all(result.stdout))


def refused(result) -> str:
    """A refusal: non-zero, nothing on stdout, exactly one line on stderr."""
    assert result.returncode != 0
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    return lines[0]


def test_plugin_yaml_runs_argv_without_a_shell():
    spec = PLUGIN["spec"]
    assert (PLUGIN["apiVersion"], PLUGIN["kind"]) == ("argoproj.io/v1alpha1", "ConfigManagementPlugin")
    for command in (spec["generate"], spec["discover"]["find"]):
        assert command["command"] == ["kubectl-disagg"]
        assert not any(word in ("sh", "bash", "-c") or "$" in word for word in command["args"])
    assert list(spec["discover"]) == ["find"]  # only the first of fileName, find.glob, find.command counts
    assert "version" not in spec  # Applications name it plugin.yaml's metadata.name


def test_generate_renders_the_application(tmp_path):
    sidecar = Sidecar(tmp_path, {"llama.yaml": EXAMPLE, "config/settings.yaml": CONFIGMAP, "z.yaml": CONFIGMAP})
    rendered = objects(sidecar.generate())
    assert [(o["kind"], o["metadata"]["namespace"]) for o in rendered] == [
        ("LeaderWorkerSet", "serving"), ("Service", "serving")] * 2 + [("ConfigMap", "serving")]
    assert {o["metadata"].get("annotations", {}).get(REVISION_ANNOTATION) for o in rendered[:4]} == {
        sidecar.environ["ARGOCD_APP_REVISION"]}
    assert sidecar.generate().stdout == sidecar.generate().stdout
    imported = sidecar.imported_modules()
    assert "kubernetes" not in imported and "click" not in imported  # no client, no click: fast and offline


def test_discover_matches_directories_holding_a_set(tmp_path):
    sidecar = Sidecar(tmp_path, {"a/llama.yaml": EXAMPLE, "b/settings.yaml": CONFIGMAP, "c/notes.txt": "kind: DisaggregatedSet\n"})
    found = sidecar.run("discover", cwd=sidecar.app_dir / "a")
    assert found.returncode == 0 and found.stdout == b"llama.yaml\n"
    for other in ("b", "c"):
        missing = sidecar.run("discover", cwd=sidecar.app_dir / other)
        assert missing.returncode != 0 or missing.stdout.strip() == b""


@pytest.mark.parametrize("form", ["app-parameters", "param", "plugin-env"])
def test_parameters_in_each_form(tmp_path, form):
    sidecar = Sidecar(tmp_path, {"llama.yaml": UNNAMESPACED, "extra.json": json.dumps(json.loads(json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})))})
    parameters = [{"name": "namespace", "string": "prod"}, {"name": "include", "array": ["*.yaml"]},
                  {"name": "rollout-state", "string": HOSTILE}]
    if form == "plugin-env":
        environ = {"ARGOCD_ENV_NAMESPACE": "prod", "ARGOCD_ENV_INCLUDE": "*.yaml", "ARGOCD_ENV_ROLLOUT_STATE": HOSTILE}
    else:
        environ = sidecar.with_parameters(parameters)
        if form == "param":
            del environ["ARGOCD_APP_PARAMETERS"]
    rendered = objects(sidecar.generate(environ))
    assert [o["kind"] for o in rendered] == ["LeaderWorkerSet", "Service"] * 2  # extra.json not included
    assert {o["metadata"]["namespace"] for o in rendered} == {"prod"}
    assert not list(tmp_path.rglob("PWNED"))


def test_hostile_values_are_refused_as_data(tmp_path):
    sidecar = Sidecar(tmp_path, {"llama.yaml": UNNAMESPACED})
    line = refused(sidecar.generate(sidecar.with_parameters([{"name": "namespace", "string": HOSTILE}])))
    assert line.startswith('parameter namespace: Invalid value: "$(touch PWNED);') and "\\nsecond line" in line
    assert not list(tmp_path.rglob("PWNED"))


def test_refusals_are_one_line_and_nothing_on_stdout(tmp_path):
    broken = EXAMPLE.replace("replicas: 2", "replicas: -2").replace("name: decode", "name: Decode")
    assert "llama.yaml:12: spec.roles[0].spec.replicas" in refused(Sidecar(tmp_path / "a", {"llama.yaml": broken}).generate())
    assert refused(Sidecar(tmp_path / "b", {"README.md": "# nothing\n"}).generate()).startswith("no objects to render")
    no_lws = Sidecar(tmp_path / "c", {"llama.yaml": EXAMPLE})
    assert "does not serve leaderworkerset.x-k8s.io/v1/LeaderWorkerSet" in refused(
        no_lws.generate({"KUBE_API_VERSIONS": "v1,apps/v1,apps/v1/Deployment"}))
    contradicting = Sidecar(tmp_path / "d", {"llama.yaml": EXAMPLE})
    assert refused(contradicting.generate({"PARAM_NAMESPACE": "prod"})) == (
        'llama.yaml:7: metadata.namespace: namespace "serving" contradicts the namespace parameter "prod"')


def test_a_rollout_state_next_to_the_set_is_read(tmp_path):
    sidecar = Sidecar(tmp_path, {"llama.yaml": EXAMPLE, "disagg-rollout-state.yaml": "slices: []\n"})
    assert "holds only RolloutState documents" in refused(sidecar.generate())


def test_strict_mode(tmp_path):
    strict = {"ARGOCD_ENV_STRICT": "true"}
    assert refused(Sidecar(tmp_path / "a", {"cm.yaml": CONFIGMAP}).generate(strict)) == (
        "strict: no DisaggregatedSet in the application directory")
    unknown = Sidecar(tmp_path / "b", {"llama.yaml": EXAMPLE})
    environ = unknown.with_parameters([{"name": "strict", "string": "true"}, {"name": "colour", "string": "red"}])
    assert refused(unknown.generate(environ)) == "strict: unknown parameter ARGOCD_APP_PARAMETERS: colour"
    lenient = unknown.generate(unknown.with_parameters([{"name": "colour", "string": "red"}]))
    assert lenient.returncode == 0 and b"Warning: unknown parameter ARGOCD_APP_PARAMETERS: colour" in lenient.stderr


def test_the_sidecar_environment_really_has_no_network_clock_or_home(tmp_path):
    import subprocess

    from tests.argocd_sidecar import BIN

    sidecar = Sidecar(tmp_path, {"llama.yaml": EXAMPLE})
    for code in ("import socket; socket.create_connection(('127.0.0.1', 9))", "import time; time.time()",
                 "import os; os.makedirs(os.path.expanduser('~/.cache'))"):
        probe = subprocess.run([str(BIN / "python"), "-c", code], env=sidecar.environ, capture_output=True, check=False)
        assert probe.returncode != 0, code
