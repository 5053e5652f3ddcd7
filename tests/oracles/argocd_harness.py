"""Argo CD v3.5 as its own code runs our plugin and our health checks: the harness of
hack/argocd (every function cites the Argo CD file it follows), built on first use by
hack/build-argocd-harness.sh from the Go module proxy into the per-user cache.

Entry points, for any test:

- `health(script, obj)`: run a health.lua on one object in Argo CD's Lua VM, as argocd-cm's
  `resource.customizations.health.<group>_<Kind>` key runs it (`useOpenLibs` false unless
  `open_libs=True`); returns {"status", "message"}; a script error raises `LuaError` with
  the text Argo CD would show. The same from a shell:
  `argocd-harness health [--open-libs] SCRIPT.lua OBJECT.yaml`.
- `resource_health(obj)`: the health Argo CD gives a live object of any kind, with the
  argocd-cm of deploy/argocd (None when Argo CD has none for the kind).
- `upstream_health_cases()`: Argo CD's own resource_customizations/**/health_test.yaml cases,
  read from the argo-cd module in the Go module cache, run by the harness.
- `generate_manifests(...)`: one repo-server manifest generation for an Application whose
  source uses the plugin (discovery, the plugin's variables, generate in a sidecar, the
  output split and flattened): the objects Argo CD would apply, or the error it would show.
- `sync_targets(pairs, ignore_differences)`: what a sync with `RespectIgnoreDifferences=true`
  applies, given each (live, target) pair (live None: not created yet): Argo CD's
  normalizeTargetResources over the Application's ignoreDifferences and the resource
  overrides in force (by default Argo CD's own: `/status` ignored on every kind). From a
  shell: `argocd-harness sync-targets < REQUEST.json`.

Without a Go toolchain these tests skip, except in CI (CI=true) where they must run.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from pathlib import Path

from tests.oracles.go_tools import require_go
from tests.support.paths import REPO

ARGOCD_MODULE = "github.com/argoproj/argo-cd/v3"
ARGOCD_VERSION = "v3.5.1"  # the release hack/argocd follows (hack/build-argocd-harness.sh)
CUSTOMIZATIONS = REPO / "argocd" / "resource_customizations"
SCRIPTS = sorted(CUSTOMIZATIONS.glob("*/*/health.lua"))
PLUGIN_DIR = REPO  # plugin.yaml, as the sidecar image places it in its config directory


class LuaError(Exception):
    """A health script that fails in Argo CD's VM (Argo CD shows the resource's health as
    an error with this text)."""


@functools.cache
def harness() -> Path:
    """The harness binary (built when missing or stale; about a minute from a cold module cache)."""
    require_go()
    built = subprocess.run([str(REPO / "hack" / "build-argocd-harness.sh")], capture_output=True, text=True,
                           timeout=1800, check=False)
    if built.returncode != 0:
        raise RuntimeError(f"hack/build-argocd-harness.sh failed:\n{built.stderr}")
    return Path(built.stdout.strip()) / "argocd-harness"


@functools.cache
def argocd_source() -> Path:
    """Argo CD's module as the Go module proxy serves it (about 56 MB, once per machine):
    its files, not its packages, which do not compile as a dependency."""
    go = require_go()
    downloaded = subprocess.run([go, "mod", "download", "-json", f"{ARGOCD_MODULE}@{ARGOCD_VERSION}"],
                                cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=1800,
                                check=False, env={**os.environ, "GOFLAGS": "-mod=mod"})
    info = json.loads(downloaded.stdout or "{}")
    if downloaded.returncode != 0 or "Dir" not in info:
        raise RuntimeError(f"go mod download {ARGOCD_MODULE}@{ARGOCD_VERSION} failed:\n"
                           f"{info.get('Error') or downloaded.stderr}")
    return Path(info["Dir"])


def check_state_testdata(request, name: str, obj: dict) -> None:
    """The RolloutState health check's testdata file `name` is `obj` as YAML (rewritten with
    pytest --update-golden): what the plugin or `rollout step` emits, never written by hand."""
    from kubectl_disagg.manifests.writer import to_yaml

    path = CUSTOMIZATIONS / "kubectl-disagg.x-k8s.io" / "RolloutState" / "testdata" / f"{name}.yaml"
    if request.config.getoption("--update-golden"):
        path.write_text(to_yaml(obj))
    assert path.read_text() == to_yaml(obj), "run pytest --update-golden"


def health(script: Path, obj: dict, *, open_libs: bool = False) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(obj, handle)
        handle.flush()
        argv = [str(harness()), "health", *(["--open-libs"] if open_libs else []), str(script), handle.name]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if result.returncode != 0:
        raise LuaError(result.stderr.strip())
    return json.loads(result.stdout)


def health_of_code(code: str, obj: dict | None = None, *, open_libs: bool = False) -> dict:
    """`health` for a script given as text."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as handle:
        handle.write(code)
        handle.flush()
        return health(Path(handle.name), obj or {}, open_libs=open_libs)


ARGOCD_CM = REPO / "deploy" / "argocd" / "argocd-cm.yaml"  # the health checks as installed


def resource_health(obj: dict, *, argocd_cm: Path = ARGOCD_CM) -> dict | None:
    """The health Argo CD gives a live object: argocd-cm's customizations (ours, as
    deploy/argocd installs them), else Argo CD's built-in scripts, else its built-in Go check
    (of the kinds the plugin writes: Service); None when Argo CD has no health for the kind.
    From a shell: `argocd-harness resource-health --argocd-cm CM.yaml [--built-in DIR] OBJECT.yaml`."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(obj, handle)
        handle.flush()
        argv = [str(harness()), "resource-health", "--argocd-cm", str(argocd_cm),
                "--built-in", str(argocd_source() / "resource_customizations"), handle.name]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip())
    return json.loads(result.stdout)


def upstream_health_cases() -> list[dict]:
    """Every case of Argo CD's own health_test.yaml files: name, expected, got or error."""
    result = subprocess.run([str(harness()), "health-tests", str(argocd_source() / "resource_customizations")],
                            capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return [json.loads(line) for line in result.stdout.splitlines()]


def plugin_config(directory: Path = PLUGIN_DIR) -> dict:
    """plugin.yaml as the cmp-server reads and validates it."""
    result = subprocess.run([str(harness()), "plugin-config", str(directory)], capture_output=True, text=True,
                            timeout=60, check=False)
    if result.returncode != 0:
        raise ValueError(result.stderr.strip())
    return json.loads(result.stdout)


def generate_manifests(repo_root: Path, app_path: str, *, plugin: dict | None, sidecar_env: dict[str, str],
                       work_dir: Path, app_name: str = "llama", namespace: str = "serving",
                       revision: str = "4f1c2b7e9a0d3c5b8e6f1a2d4c7b9e0f3a5d8c1b",
                       kube_version: str = "1.36.3", api_versions: list[str] | None = None,
                       timeout_seconds: float = 60, plugin_dir: Path = PLUGIN_DIR) -> dict:
    """What the repo-server produces for an Application with `source.plugin` = `plugin`
    (None: no plugin block, so discovery decides). Returns {"sourceType", "env",
    "manifests", "error"}: `env` is what the plugin received from the repo-server,
    `manifests` the objects Argo CD would apply, `error` what the Application would show."""
    source = {"repoURL": "https://git.example.com/inference.git", "path": app_path, "targetRevision": "main"}
    if plugin is not None:
        source["plugin"] = plugin
    request = {
        "request": {"appName": app_name, "namespace": namespace, "projectName": "default",
                    "repoURL": source["repoURL"], "revision": revision, "kubeVersion": kube_version,
                    "apiVersions": LWS_API_VERSIONS if api_versions is None else api_versions,
                    "source": source},
        "repoRoot": str(repo_root), "pluginDir": str(plugin_dir), "workDir": str(work_dir),
        "sidecarEnv": [f"{name}={value}" for name, value in sidecar_env.items()],
        "timeoutSeconds": timeout_seconds,
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(request, handle)
        handle.flush()
        result = subprocess.run([str(harness()), "manifests", handle.name], capture_output=True, text=True,
                                timeout=timeout_seconds + 30, check=False)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    answer = json.loads(result.stdout)
    answer["manifests"] = answer.get("manifests") or []
    return answer


LWS_API_VERSIONS = ["v1", "v1/ConfigMap", "v1/Service", "apps/v1", "apps/v1/Deployment",
                    "leaderworkerset.x-k8s.io/v1", "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"]


# What SettingsManager.GetResourceOverrides gives with argocd-cm's compare options unset
# (ignoreResourceStatusField defaults to "all"): /status ignored on every group and kind.
DEFAULT_RESOURCE_OVERRIDES = {"*/*": {"ignoreDifferences": {"jsonPointers": ["/status"]}}}


class SyncError(Exception):
    """Argo CD's normalization refused the sync (a bad jq expression or JSON pointer, ...)."""


def sync_targets(pairs: list[tuple[dict | None, dict]], ignore_differences: list[dict], *,
                 resource_overrides: dict | None = None, tracking_method: str = "annotation",
                 app_label_key: str = "app.kubernetes.io/instance") -> list[dict | None]:
    """The target Argo CD applies for each (live, target) pair in a sync with
    RespectIgnoreDifferences=true (controller/sync.go normalizeTargetResources): the
    Application's `ignore_differences`, the `resource_overrides` of argocd-cm
    (DEFAULT_RESOURCE_OVERRIDES when None), annotation tracking (Argo CD 3's default)."""
    request = {"ignoreDifferences": ignore_differences,
               "resourceOverrides": DEFAULT_RESOURCE_OVERRIDES if resource_overrides is None else resource_overrides,
               "trackingMethod": tracking_method, "appLabelKey": app_label_key,
               "pairs": [{"live": live, "target": target} for live, target in pairs]}
    result = subprocess.run([str(harness()), "sync-targets"], input=json.dumps(request), capture_output=True,
                            text=True, timeout=60, check=False)
    if result.returncode == 1:
        raise SyncError(result.stderr.strip())
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return json.loads(result.stdout)["targets"]
