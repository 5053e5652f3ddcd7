"""The harness's plugin path (hack/argocd) on small stand-in plugins, for the behaviours of
Argo CD v3.5.1 our plugin relies on; each test names the Argo CD code it holds the harness to.
(The Lua VM is proven on Argo CD's own health test cases: test_health.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.oracles.argocd_sidecar import ArgoCD

# A stand-in generate command: the variables it was given and where it ran, as a ConfigMap.
SHOW_ENV = """
import json, os
names = [n for n in os.environ if n.startswith(("ARGOCD_", "PARAM_", "KUBE_", "SIDECAR_"))]
data = {n: os.environ[n] for n in names}
data["cwd"] = os.getcwd()
print(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "env"}, "data": data}))
"""


def plugin_dir(tmp_path: Path, spec: dict) -> Path:
    directory = tmp_path / "plugin"
    directory.mkdir(parents=True)
    config = {"apiVersion": "argoproj.io/v1alpha1", "kind": "ConfigManagementPlugin",
              "metadata": {"name": "stand-in"}, "spec": spec}
    (directory / "plugin.yaml").write_text(yaml.safe_dump(config))
    return directory


def show_env(tmp_path: Path, files: dict[str, str], plugin: dict | None, **request) -> dict:
    argocd = ArgoCD(tmp_path, files, steady_only=False)
    argocd.sidecar_env["SIDECAR_ONLY"] = "kept"
    argocd.sidecar_env["ARGOCD_APP_NAME"] = "overridden"
    directory = plugin_dir(tmp_path, {"generate": {"command": ["python3", "-c", SHOW_ENV]}})
    answer = argocd.manifests(plugin=plugin, plugin_dir=directory, **request)
    assert answer.get("error") is None, answer["error"]
    (configmap,) = answer["manifests"]
    return configmap["data"]


def test_the_variables_a_plugin_receives(tmp_path):
    """reposerver/repository/repository.go newEnv, getPluginEnvs, getPluginParamEnvs;
    types.go ApplicationSourcePluginParameters.Environ, Env.Envsubst; cmpserver/plugin
    generateManifest (the sidecar's environment first, the repo-server's after it)."""
    plugin = {"name": "stand-in",
              "env": [{"name": "GREETING", "value": "$ARGOCD_APP_NAME in $$HOME"}],
              "parameters": [{"name": "include", "array": ["a", "b"]}, {"name": "labels", "map": {"team-x": "ml"}},
                             {"name": "rollout-state", "string": "s.yaml"}]}
    data = show_env(tmp_path, {"apps/llama/x.yaml": ""}, plugin, kube_version="v1.36.3+k3s1")
    assert data.pop("cwd").endswith("/apps/llama") and not data.get("cwd")
    assert json.loads(data.pop("ARGOCD_APP_PARAMETERS")) == [
        {"name": "include", "array": ["a", "b"]}, {"name": "labels", "map": {"team-x": "ml"}},
        {"name": "rollout-state", "string": "s.yaml"}]
    assert data == {
        "SIDECAR_ONLY": "kept",
        "ARGOCD_APP_NAME": "llama", "ARGOCD_APP_NAMESPACE": "serving", "ARGOCD_APP_PROJECT_NAME": "default",
        "ARGOCD_APP_REVISION": "4f1c2b7e9a0d3c5b8e6f1a2d4c7b9e0f3a5d8c1b", "ARGOCD_APP_REVISION_SHORT": "4f1c2b7",
        "ARGOCD_APP_REVISION_SHORT_8": "4f1c2b7e", "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/inference.git",
        "ARGOCD_APP_SOURCE_PATH": "apps/llama", "ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
        "KUBE_VERSION": "1.36.3",  # apimachinery's ParseGeneric keeps major.minor.patch
        "KUBE_API_VERSIONS": "v1,v1/ConfigMap,v1/Service,apps/v1,apps/v1/Deployment,"
        "leaderworkerset.x-k8s.io/v1,leaderworkerset.x-k8s.io/v1/LeaderWorkerSet",
        "ARGOCD_ENV_GREETING": "llama in $HOME",
        "PARAM_INCLUDE_0": "a", "PARAM_INCLUDE_1": "b", "PARAM_LABELS_TEAM_X": "ml", "PARAM_ROLLOUT_STATE": "s.yaml",
    }


def test_the_generate_command_runs_in_a_copy_of_the_repository(tmp_path):
    """util/cmp/stream.go and util/io/files/tar.go: the cmp-server works on its own copy."""
    data = show_env(tmp_path, {"apps/llama/x.yaml": ""}, {"name": "stand-in"})
    assert not data["cwd"].startswith(str(tmp_path / "repo"))
    assert "ARGOCD_APP_PARAMETERS" in data and data["ARGOCD_APP_PARAMETERS"] == "null"


def test_argocd_source_files_merge_into_the_source(tmp_path):
    """repository.go mergeSourceParameters: .argocd-source.yaml, then .argocd-source-<app>.yaml,
    as JSON merge patches (a list replaces the list)."""
    files = {"apps/llama/.argocd-source.yaml": "plugin:\n  env: [{name: A, value: one}, {name: B, value: two}]\n",
             "apps/llama/.argocd-source-llama.yaml": "plugin:\n  env: [{name: A, value: three}]\n"}
    data = show_env(tmp_path, files, {"name": "stand-in", "env": [{"name": "C", "value": "app"}]})
    assert (data["ARGOCD_ENV_A"], "ARGOCD_ENV_B" in data, "ARGOCD_ENV_C" in data) == ("three", False, False)


def test_output_is_split_and_lists_are_flattened(tmp_path):
    """gitops-engine kube.SplitYAMLToString / SplitYAML; repository.go GenerateManifests
    (List items, null lists dropped, the tracking annotation)."""
    output = ("---\n# only a comment\n---\nnull\n---\n"
              "apiVersion: v1\nkind: ConfigMapList\nitems:\n"
              "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"
              "- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: other}}\n"
              "---\napiVersion: v1\nkind: SecretList\nitems: null\n"
              '---\n{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}\n')
    argocd = ArgoCD(tmp_path, {"apps/llama/out.yaml": output})
    directory = plugin_dir(tmp_path, {"generate": {"command": ["cat", "out.yaml"]}})
    answer = argocd.manifests(plugin={"name": "stand-in"}, plugin_dir=directory)
    assert [(o["metadata"]["name"], o["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"])
            for o in answer["manifests"]] == [
        ("a", "llama:/ConfigMap:serving/a"), ("b", "llama:/ConfigMap:other/b"), ("c", "llama:/ConfigMap:serving/c")]


def test_discovery_forms(tmp_path):
    """cmpserver/plugin/plugin.go matchRepository (fileName, find.glob, find.command);
    util/app/discovery/discovery.go cmpSupports (a plugin without discovery matches only
    when named: `plugin: {}` does not reach it either)."""
    argocd = ArgoCD(tmp_path, {"apps/llama/deep/x.yaml": "", "apps/other/readme.md": ""})
    generate = {"command": ["python3", "-c", SHOW_ENV]}
    for number, (discover, unnamed, named) in enumerate([
        ({"fileName": "*.yaml"}, ("Directory", "Directory"), (False, False)),
        ({"find": {"glob": "**/*.yaml"}}, ("Plugin", "Directory"), (True, False)),
        ({"find": {"command": ["sh", "-c", "ls deep 2>/dev/null || true"]}}, ("Plugin", "Directory"), (True, False)),
        ({}, ("Directory", "Directory"), (True, True)),
    ]):
        directory = plugin_dir(tmp_path / str(number), {"generate": generate, "discover": discover})
        for app, want_type, want_named in zip(("apps/llama", "apps/other"), unnamed, named):
            assert argocd.manifests(app, plugin=None, plugin_dir=directory)["sourceType"] == want_type, (discover, app)
            answer = argocd.manifests(app, plugin={"name": "stand-in"}, plugin_dir=directory)
            assert (answer.get("error") is None) == want_named, (discover, app, answer)
            unnamed_block = argocd.manifests(app, plugin={}, plugin_dir=directory)
            assert (unnamed_block.get("error") is None) == (want_type == "Plugin"), (discover, app, unnamed_block)


def test_a_failing_command_shows_its_stderr(tmp_path):
    """plugin.go runCommand and CmdError: argv as logged (quoted when it has spaces), the
    cause, then stderr trimmed; stdout is not shown."""
    argocd = ArgoCD(tmp_path, {"apps/llama/x.yaml": ""})
    directory = plugin_dir(tmp_path, {"generate": {"command": ["sh", "-c", "echo out; echo '  bad\n' >&2; exit 3"]}})
    error = argocd.manifests(plugin={"name": "stand-in"}, plugin_dir=directory)["error"]
    assert error.endswith('error generating manifests: `sh -c "echo out; echo \'  bad\\n\' >&2; exit 3"` '
                          "failed exit status 3: bad")


def test_a_command_past_the_deadline_is_killed(tmp_path):
    """plugin.go runCommand: the deadline kills the command (its process group too)."""
    argocd = ArgoCD(tmp_path, {"apps/llama/x.yaml": ""})
    directory = plugin_dir(tmp_path, {"generate": {"command": ["sleep", "600"]}})
    error = argocd.manifests(plugin={"name": "stand-in"}, plugin_dir=directory, timeout_seconds=1)["error"]
    assert "`sleep 600` failed signal: " in error and error.rsplit(" ", 1)[1] in ("killed", "terminated")


def test_symbolic_links_travel_inside_the_repository_only(tmp_path):
    """util/app/path/path.go CheckOutOfBoundsSymlinks (the repo-server refuses a checkout with
    an absolute link or one leaving the repository); util/io/files/tar.go untar (links kept,
    made relative)."""
    shared = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n"
    argocd = ArgoCD(tmp_path, {"shared/cm.yaml": shared, "apps/llama/.keep": ""})
    (argocd.repo / "apps" / "llama" / "cm.yaml").symlink_to("../../shared/cm.yaml")
    directory = plugin_dir(tmp_path, {"generate": {"command": ["cat", "cm.yaml"]}})
    answer = argocd.manifests(plugin={"name": "stand-in"}, plugin_dir=directory)
    assert [o["metadata"]["name"] for o in answer["manifests"]] == ["shared"]
    escape = argocd.repo / "apps" / "llama" / "escape.yaml"
    for target in (tmp_path / "outside.yaml", "../../../outside.yaml"):
        escape.symlink_to(target)
        answer = argocd.manifests(plugin={"name": "stand-in"}, plugin_dir=directory)
        assert answer == {"manifests": [], "error": "repository contains out-of-bounds symlinks. file: apps/llama/escape.yaml"}
        escape.unlink()
