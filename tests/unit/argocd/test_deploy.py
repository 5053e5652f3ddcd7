"""The sidecar recipe agrees with itself: image, repo-server patch, argocd-cm, Application."""

from __future__ import annotations

import yaml

from tests.support.paths import REPO

DEPLOY = REPO / "deploy" / "argocd"
PLUGIN = yaml.safe_load((REPO / "plugin.yaml").read_text())
CONFIG_PATH = "/home/argocd/cmp-server/config/plugin.yaml"
ENTRYPOINT = "/var/run/argocd/argocd-cmp-server"


def load(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text())


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined."""
    text = "\n".join(line for line in (REPO / "Dockerfile").read_text().splitlines() if not line.lstrip().startswith("#"))
    joined = text.replace("\\\n", " ")
    return [tuple(line.split(None, 1)) for line in joined.splitlines() if line.strip()]


def test_image_carries_plugin_yaml_and_runs_as_999_with_home_in_tmp():
    instructions = dockerfile()
    assert ("COPY", f"plugin.yaml {CONFIG_PATH}") in instructions
    assert ("USER", "999:999") in instructions
    assert ("ENTRYPOINT", f'["{ENTRYPOINT}"]') in instructions
    env = " ".join(value for op, value in instructions if op == "ENV")
    assert "HOME=/tmp" in env and "XDG_CACHE_HOME=/tmp/" in env
    ignored = (REPO / ".dockerignore").read_text().splitlines()
    assert "!plugin.yaml" in ignored and "!kubectl_disagg" in ignored


def test_repo_server_sidecar():
    patch = load("repo-server-sidecar.yaml")
    assert patch["metadata"]["name"] == "argocd-repo-server"
    pod = patch["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == [ENTRYPOINT]
    assert container["securityContext"]["runAsUser"] == 999 and container["securityContext"]["runAsNonRoot"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts["/var/run/argocd"] == "var-files"
    assert mounts["/home/argocd/cmp-server/plugins"] == "plugins"
    assert mounts["/tmp"] in {v["name"] for v in pod["volumes"]}
    kustomization = load("kustomization.yaml")
    assert {p["path"] for p in kustomization["patches"]} == {
        "repo-server-sidecar.yaml", "argocd-cm.yaml", "argocd-cmd-params-cm.yaml"}


def test_argocd_cm_holds_the_tested_health_checks():
    data = load("argocd-cm.yaml")["data"]
    scripts = sorted((REPO / "argocd" / "resource_customizations").glob("*/*/health.lua"))
    assert len(data) == len(scripts) == 3
    for script in scripts:
        key = f"resource.customizations.health.{script.parent.parent.name}_{script.parent.name}"
        assert data[key] == script.read_text(), f"copy {script.relative_to(REPO)} into deploy/argocd/argocd-cm.yaml"


def test_both_repo_server_timeouts_are_raised_together():
    data = load("argocd-cmd-params-cm.yaml")["data"]
    assert set(data) == {"controller.repo.server.timeout.seconds", "server.repo.server.timeout.seconds"}
    assert len(set(data.values())) == 1 and int(next(iter(data.values()))) > 60


def test_application_names_the_plugin():
    plugin = load("application.yaml")["spec"]["source"]["plugin"]
    version = PLUGIN["spec"].get("version")
    expected = PLUGIN["metadata"]["name"] + (f"-{version}" if version else "")
    assert plugin["name"] == expected
    announced = {p["name"] for p in PLUGIN["spec"]["parameters"]["static"]}
    assert {p["name"] for p in plugin.get("parameters", [])} <= announced
