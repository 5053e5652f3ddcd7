"""The plugin as Argo CD v3.5 runs it (tests/oracles/argocd_harness.py): the repo-server's variables,
discovery for named and unnamed plugins, generate in a copy of the repository in a sidecar with
no writable HOME, no kubeconfig, no network, and the output as Argo CD parses it."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from kubectl_disagg.argocd.contract import NO_API_VERSIONS_WARNING, REVISION_ANNOTATION
from tests.oracles.argocd_harness import plugin_config
from tests.oracles.argocd_sidecar import BIN, PLUGIN, ArgoCD, sidecar_environment
from tests.support.paths import EXAMPLES, REPO

EXAMPLE = (EXAMPLES / "prefill-decode.yaml").read_text()  # llama, namespace serving
UNNAMESPACED = EXAMPLE.replace("  namespace: serving\n", "")
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"
HOSTILE = "$(touch {pwned}); `touch {pwned}` && echo 'x\"y' | sh\nsecond line ${{HOME}}"
NO_PLUGIN = "could not find cmp-server plugin with name \"kubectl-disagg\" supporting the given repository"


def app(files: dict[str, str], path: str = "apps/llama") -> dict[str, str]:
    return {f"{path}/{name}": content for name, content in files.items()}


def refusal(answer: dict) -> str:
    """Argo CD's error for a generate that failed: our one line, after Argo CD's wrapping."""
    assert answer["manifests"] == []
    prefix = ('CMP processing failed for application "llama": error generating manifests in cmp: '
              "rpc error: code = Unknown desc = error generating manifests: "
              "`kubectl-disagg cmp generate` failed exit status 1: ")
    assert answer["error"].startswith(prefix), answer["error"]
    line = answer["error"][len(prefix):]
    assert "\n" not in line and "Traceback" not in line
    return line


def test_plugin_yaml_is_what_the_cmp_server_reads():
    config = plugin_config()
    spec = config["spec"]
    assert (config["kind"], config["metadata"]["name"], spec["version"]) == ("ConfigManagementPlugin", "kubectl-disagg", "")
    for command in (spec["generate"], spec["discover"]["find"]):
        assert command["command"] == ["kubectl-disagg"]
        assert not any(word in ("sh", "bash", "-c") or "$" in word for word in command["args"])
    raw = yaml.safe_load((REPO / "plugin.yaml").read_text())["spec"]
    assert list(raw["discover"]) == ["find"]  # fileName or find.glob would win over the command


def test_generate_renders_the_application(tmp_path):
    argocd = ArgoCD(tmp_path, app({"llama.yaml": EXAMPLE, "config/settings.yaml": CONFIGMAP, "z.yaml": CONFIGMAP}))
    answer = argocd.manifests()
    rendered = answer["manifests"]
    assert [(o["kind"], o["metadata"]["namespace"]) for o in rendered] == [
        ("LeaderWorkerSet", "serving"), ("Service", "serving")] * 2 + [("ConfigMap", "serving")]
    assert {o["metadata"]["annotations"][REVISION_ANNOTATION] for o in rendered[:4]} == {
        "4f1c2b7e9a0d3c5b8e6f1a2d4c7b9e0f3a5d8c1b"}
    assert rendered[0]["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"].startswith(
        "llama:leaderworkerset.x-k8s.io/LeaderWorkerSet:serving/llama-0-")
    assert argocd.manifests()["manifests"] == rendered
    imported = argocd.imported_modules()
    assert "kubernetes" not in imported  # no Kubernetes client: the plugin works offline
    assert "ARGOCD_APP_PARAMETERS=null" in answer["env"]  # what Argo CD sends without parameters


@pytest.mark.parametrize("plugin", [{}, {"name": "kubectl-disagg"}, {"env": [{"name": "STRICT", "value": "false"}]},
                                    None], ids=["empty-plugin-block", "name-only", "env-only", "no-plugin-block"])
def test_the_common_applications_render(tmp_path, plugin):
    argocd = ArgoCD(tmp_path, app({"llama.yaml": EXAMPLE}))
    answer = argocd.manifests(plugin=plugin)
    assert answer.get("error") is None and answer["sourceType"] == "Plugin"
    assert [o["kind"] for o in answer["manifests"]] == ["LeaderWorkerSet", "Service"] * 2
    parameters = [e for e in answer.get("env", []) if e.startswith("ARGOCD_APP_PARAMETERS=")]
    assert parameters == ([] if plugin is None else ["ARGOCD_APP_PARAMETERS=null"])


def test_discovery_for_unnamed_and_named_plugins(tmp_path):
    argocd = ArgoCD(tmp_path, {"a/llama.yaml": EXAMPLE, "b/settings.yaml": CONFIGMAP,
                               "c/notes.txt": "kind: DisaggregatedSet\n", "d/x/llama.yaml": EXAMPLE})
    assert argocd.manifests("a", plugin=None)["sourceType"] == "Plugin"
    for other in ("b", "c", "d"):
        # No plugin block: discovery says no, cleanly, and Argo CD reads the directory as plain YAML.
        assert argocd.manifests(other, plugin=None) == {"sourceType": "Directory", "manifests": []}
        # Named: the repo-server asks discovery too; "no" refuses without any plugin error.
        assert argocd.manifests(other)["error"] == f'CMP processing failed for application "llama": {NO_PLUGIN}'


def test_nested_directories_are_discovered_and_rendered_with_recurse(tmp_path):
    argocd = ArgoCD(tmp_path, app({"prefill-decode/llama.yaml": EXAMPLE, "config/settings.yaml": CONFIGMAP}))
    recurse = {"name": "recurse", "string": "true"}
    rendered = argocd.objects(plugin={"name": "kubectl-disagg", "parameters": [recurse]})
    assert [o["kind"] for o in rendered] == ["ConfigMap"] + ["LeaderWorkerSet", "Service"] * 2
    assert argocd.manifests()["error"].endswith(NO_PLUGIN)  # without recurse only the top level is read
    env = {"env": [{"name": "RECURSE", "value": "true"}, {"name": "INCLUDE", "value": "prefill-decode/*.yaml"}]}
    assert [o["kind"] for o in argocd.objects(plugin=env)] == ["LeaderWorkerSet", "Service"] * 2


@pytest.mark.parametrize("form", ["parameters", "plugin-env", "argocd-source-file"])
def test_parameters_in_each_form(tmp_path, form):
    pwned = tmp_path / "PWNED"
    hostile = HOSTILE.format(pwned=pwned)
    files = {"llama.yaml": UNNAMESPACED, "extra.json": json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})}
    parameters = [{"name": "namespace", "string": "prod"}, {"name": "include", "array": ["*.yaml"]},
                  {"name": "rollout-state", "string": hostile}]
    plugin = {"name": "kubectl-disagg"}
    if form == "parameters":
        plugin["parameters"] = parameters
    elif form == "plugin-env":
        plugin["env"] = [{"name": "NAMESPACE", "value": "prod"}, {"name": "INCLUDE", "value": "*.yaml"},
                         {"name": "ROLLOUT_STATE", "value": hostile}]
    else:  # Argo CD merges .argocd-source.yaml into the Application's source
        files[".argocd-source.yaml"] = yaml.safe_dump({"plugin": {"parameters": parameters}})
    rendered = ArgoCD(tmp_path, app(files)).objects(plugin=plugin)
    assert [o["kind"] for o in rendered] == ["LeaderWorkerSet", "Service"] * 2  # extra.json not included
    assert {o["metadata"]["namespace"] for o in rendered} == {"prod"}
    assert not pwned.exists()


def test_plugin_env_values_expand_argo_cd_variables(tmp_path):
    plugin = {"name": "kubectl-disagg", "env": [{"name": "NAMESPACE", "value": "$ARGOCD_APP_NAME-prod"}]}
    rendered = ArgoCD(tmp_path, app({"llama.yaml": UNNAMESPACED})).objects(plugin=plugin)
    assert {o["metadata"]["namespace"] for o in rendered} == {"llama-prod"}


def test_hostile_values_are_refused_as_data(tmp_path):
    pwned = tmp_path / "PWNED"
    argocd = ArgoCD(tmp_path, app({"llama.yaml": UNNAMESPACED}))
    plugin = {"name": "kubectl-disagg", "parameters": [{"name": "namespace", "string": HOSTILE.format(pwned=pwned)}]}
    error = argocd.manifests(plugin=plugin)["error"]
    # Discovery reads the parameters too, so the refusal comes from it, with the same one line.
    assert error.startswith(f'CMP processing failed for application "llama": {NO_PLUGIN}: error checking repository '
                            "support for plugin kubectl-disagg.sock:")
    line = error.split("`kubectl-disagg cmp discover` failed exit status 1: ", 1)[1]
    assert line.startswith(f'parameter namespace: Invalid value: "$(touch {pwned});') and "\\nsecond line" in line
    assert not pwned.exists()


def test_refusals_are_one_line(tmp_path):
    broken = EXAMPLE.replace("replicas: 2", "replicas: -2").replace("name: decode", "name: Decode")
    assert "llama.yaml:12: spec.roles[0].spec.replicas" in refusal(ArgoCD(tmp_path / "a", app({"llama.yaml": broken})).manifests())
    no_lws = ArgoCD(tmp_path / "c", app({"llama.yaml": EXAMPLE}))
    assert "does not serve leaderworkerset.x-k8s.io/v1/LeaderWorkerSet" in refusal(
        no_lws.manifests(api_versions=["v1", "apps/v1", "apps/v1/Deployment"]))
    contradicting = ArgoCD(tmp_path / "d", app({"llama.yaml": EXAMPLE}))
    plugin = {"name": "kubectl-disagg", "parameters": [{"name": "namespace", "string": "prod"}]}
    assert refusal(contradicting.manifests(plugin=plugin)) == (
        'llama.yaml:7: metadata.namespace: namespace "serving" contradicts the namespace parameter "prod"')


def test_the_source_hydrator_path_renders_without_cluster_information(tmp_path):
    argocd = ArgoCD(tmp_path, app({"llama.yaml": EXAMPLE}))
    answer = argocd.manifests(kube_version="", api_versions=[])
    assert "KUBE_VERSION=" in answer["env"] and "KUBE_API_VERSIONS=" in answer["env"]
    assert [o["kind"] for o in answer["manifests"]] == ["LeaderWorkerSet", "Service"] * 2


def test_a_rollout_state_next_to_the_set_is_read(tmp_path):
    argocd = ArgoCD(tmp_path, app({"llama.yaml": EXAMPLE, "disagg-rollout-state.yaml": "slices: []\n"}))
    assert "holds only RolloutState documents" in refusal(argocd.manifests())


def test_strict_mode(tmp_path):
    strict = {"name": "kubectl-disagg", "env": [{"name": "STRICT", "value": "true"}]}
    unknown = ArgoCD(tmp_path / "b", app({"llama.yaml": EXAMPLE}))
    plugin = {"name": "kubectl-disagg", "parameters": [{"name": "strict", "string": "true"}, {"name": "colour", "string": "red"}]}
    assert refusal(unknown.manifests(plugin=plugin)) == "strict: unknown parameter ARGOCD_APP_PARAMETERS: colour"
    assert "no rollout state" in refusal(unknown.manifests(plugin=strict))


# --- the commands themselves, in the sidecar's environment -----------------------------------

def run(tmp_path, argv: list[str], cwd, **env) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env={**sidecar_environment(tmp_path), **env}, capture_output=True, check=False)


def test_discover_says_no_with_exit_0_and_errors_with_one_line(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "settings.yaml").write_text(CONFIGMAP)
    no = run(tmp_path, ["kubectl-disagg", "cmp", "discover"], tmp_path / "app", ARGOCD_APP_PARAMETERS="null")
    assert (no.returncode, no.stdout, no.stderr) == (0, b"", b"")
    bad = run(tmp_path, ["kubectl-disagg", "cmp", "discover"], tmp_path / "app", PARAM_STRICT="maybe")
    assert bad.returncode == 1 and bad.stdout == b""
    assert bad.stderr.decode().splitlines() == ['parameter strict: Invalid value: "maybe": must be true or false']


def test_discover_loads_no_git_store_or_rollout_code(tmp_path):
    """Argo CD runs discover before every generate: it reads the parameters and finds a set, and
    loads neither the git store nor the rollout (they were a third of its start)."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "llama.yaml").write_text(EXAMPLE)
    found = run(tmp_path, ["kubectl-disagg", "cmp", "discover"], tmp_path / "app", ARGOCD_APP_PARAMETERS="null")
    assert (found.returncode, found.stdout) == (0, b"llama.yaml\n"), found.stderr
    modules = json.loads((tmp_path / "modules.json").read_text())
    assert [m for m in modules if m.startswith(("kubectl_disagg.gitops", "kubectl_disagg.rollout"))] == []


def test_empty_cluster_information_warns_once(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "llama.yaml").write_text(EXAMPLE)
    result = run(tmp_path, ["kubectl-disagg", "cmp", "generate"], tmp_path / "app", KUBE_VERSION="", KUBE_API_VERSIONS="",
                 ARGOCD_ENV_REQUIRE_ROLLOUT_STATE="false")
    assert result.returncode == 0 and result.stdout.count(b"kind: LeaderWorkerSet") == 2
    assert result.stderr.decode().splitlines() == [f"Warning: {NO_API_VERSIONS_WARNING}"]


def test_the_sidecar_environment_really_has_no_network_clock_or_home(tmp_path):
    for code in ("import socket; socket.create_connection(('127.0.0.1', 9))", "import time; time.time()",
                 "import os; os.makedirs(os.path.expanduser('~/.cache'))"):
        probe = run(tmp_path, [str(BIN / "python"), "-c", code], tmp_path)
        assert probe.returncode != 0, code


def test_plugin_block_reference():
    assert PLUGIN == {"name": yaml.safe_load((REPO / "plugin.yaml").read_text())["metadata"]["name"]}


def test_the_shipped_application_syncs_the_example(tmp_path):
    """deploy/argocd/application.yaml's source, as Argo CD sends it, on the bundled example
    with the rollout state that `rollout step --gitops` starts it with."""
    from kubectl_disagg.core.delivery.sets import load_sets
    from kubectl_disagg.gitops.state import state_document
    from kubectl_disagg.gitops.step import initial_state
    from kubectl_disagg.manifests.reader import parse_stream
    from kubectl_disagg.manifests.writer import to_yaml

    application = yaml.safe_load((REPO / "deploy" / "argocd" / "application.yaml").read_text())
    source = application["spec"]["source"]
    (ds,) = load_sets(parse_stream(EXAMPLE.encode(), "llama.yaml"))
    state = to_yaml(state_document(initial_state(ds, ds.namespace)))
    argocd = ArgoCD(tmp_path, {f"{source['path']}/llama.yaml": EXAMPLE,
                               f"{source['path']}/disagg-rollout-state.yaml": state})
    rendered = argocd.objects(source["path"], plugin=source["plugin"],
                              namespace=application["spec"]["destination"]["namespace"])
    assert [o["kind"] for o in rendered] == ["LeaderWorkerSet", "Service"] * 2


def test_a_directory_without_a_set(tmp_path):
    argocd = ArgoCD(tmp_path, {"apps/config/settings.yaml": CONFIGMAP})
    # Without a plugin block discovery says no, and Argo CD reads the directory as plain YAML.
    assert argocd.manifests("apps/config", plugin=None) == {"sourceType": "Directory", "manifests": []}
    # Naming the plugin there is refused before anything runs, with no plugin error in the message.
    assert argocd.manifests("apps/config")["error"] == (
        'CMP processing failed for application "llama": could not find cmp-server plugin with name '
        '"kubectl-disagg" supporting the given repository')
