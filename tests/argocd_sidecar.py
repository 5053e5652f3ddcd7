"""Runs plugin.yaml's commands the way Argo CD's sidecar does, for the contract tests.

The commands run from their argv (no shell) with the application's path inside a copy of the
repository as working directory, Argo CD's variables, and nothing else the sidecar would not
have: HOME cannot be written, there is no kubeconfig, and any network connection fails
(a sitecustomize refuses sockets and the wall clock, and records which modules were
imported).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO

PLUGIN = yaml.safe_load((REPO / "plugin.yaml").read_text())
BIN = Path(sys.executable).parent  # where `kubectl-disagg` is installed with this Python

_GUARD = '''
import atexit, json, os, socket, sys

def _refuse(*args, **kwargs):
    raise OSError("network access from the plugin")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse

import time

def _no_clock(*args, **kwargs):
    raise RuntimeError("the plugin read the clock: its output must depend on the commit only")

time.time = time.time_ns = time.localtime = time.gmtime = _no_clock

@atexit.register
def _record():
    with open(os.environ["CMP_TEST_MODULES"], "w") as handle:
        json.dump(sorted(sys.modules), handle)
'''


class Sidecar:
    """A copied repository, read-only, and the environment of Argo CD's sidecar."""

    def __init__(self, tmp_path: Path, app_files: dict[str, str | bytes], app_path: str = "apps/llama",
                 steady_only: bool = True):
        """`steady_only`: the Application sets `require-rollout-state: "false"` in its plugin.env
        (a directory deploying steady states alone); tests of the rollout state pass False."""
        self.repo = tmp_path / "repo"
        self.app_dir = self.repo / app_path
        self.app_dir.mkdir(parents=True)
        for name, content in app_files.items():
            target = self.app_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode() if isinstance(content, str) else content)
        shutil.copy(REPO / "plugin.yaml", self.repo / "plugin.yaml")
        self.guard = tmp_path / "guard"
        self.guard.mkdir()
        (self.guard / "sitecustomize.py").write_text(_GUARD)
        self.modules_file = tmp_path / "modules.json"
        blocker = tmp_path / "not-a-directory"
        blocker.write_text("")
        self.environ = {
            "PATH": f"{BIN}:/usr/bin:/bin",
            "HOME": str(blocker / "home"),  # nothing can be created below a file, not even by root
            "KUBECONFIG": str(blocker / "kubeconfig"),
            "PYTHONPATH": str(self.guard),
            "PYTHONDONTWRITEBYTECODE": "1",
            "CMP_TEST_MODULES": str(self.modules_file),
            "ARGOCD_APP_NAME": "llama",
            "ARGOCD_APP_NAMESPACE": "serving",
            "ARGOCD_APP_PROJECT_NAME": "default",
            "ARGOCD_APP_REVISION": "4f1c2b7e9a0d3c5b8e6f1a2d4c7b9e0f3a5d8c1b",
            "ARGOCD_APP_REVISION_SHORT": "4f1c2b7",
            "ARGOCD_APP_REVISION_SHORT_8": "4f1c2b7e",
            "ARGOCD_APP_SOURCE_REPO_URL": "https://git.example.com/inference.git",
            "ARGOCD_APP_SOURCE_PATH": app_path,
            "ARGOCD_APP_SOURCE_TARGET_REVISION": "main",
            "KUBE_VERSION": "1.36.3",
            "KUBE_API_VERSIONS": "v1,v1/Service,apps/v1,apps/v1/Deployment,"
                                 "leaderworkerset.x-k8s.io/v1,leaderworkerset.x-k8s.io/v1/LeaderWorkerSet",
        }
        if steady_only:
            self.environ["ARGOCD_ENV_REQUIRE_ROLLOUT_STATE"] = "false"
        self._make_read_only()
        self.before = self.snapshot()

    def _make_read_only(self) -> None:
        for root, dirs, files in os.walk(self.repo):
            for name in files:
                os.chmod(os.path.join(root, name), stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            os.chmod(root, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)

    def snapshot(self) -> dict[str, bytes]:
        """Every path and content of the copied repository (root ignores modes: compare)."""
        found = {}
        for root, dirs, files in os.walk(self.repo):
            found[root] = b"<dir>"
            for name in files:
                path = os.path.join(root, name)
                found[path] = Path(path).read_bytes()
        return found

    def with_parameters(self, parameters: list[dict]) -> dict[str, str]:
        """The variables Argo CD sets for an Application's plugin parameters."""
        environ = {"ARGOCD_APP_PARAMETERS": json.dumps(parameters)}
        for parameter in parameters:
            name = "PARAM_" + "".join(c if c.isalnum() or c == "_" else "_" for c in parameter["name"].upper())
            if "string" in parameter:
                environ[name] = parameter["string"]
            for index, item in enumerate(parameter.get("array", [])):
                environ[f"{name}_{index}"] = item
            for key, item in parameter.get("map", {}).items():
                environ[f"{name}_{key}"] = item
        return environ

    def run(self, section: str, extra_env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        """Run plugin.yaml's `init`, `generate` or `discover.find` command."""
        spec = PLUGIN["spec"]
        command = spec["discover"]["find"] if section == "discover" else spec[section]
        argv = list(command["command"]) + list(command.get("args", []))
        result = subprocess.run(argv, cwd=cwd or self.app_dir, env={**self.environ, **(extra_env or {})},
                                capture_output=True, timeout=60, check=False)
        assert self.snapshot() == self.before, "the plugin changed the source tree"
        return result

    def generate(self, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        if "init" in PLUGIN["spec"]:
            init = self.run("init", extra_env)
            assert init.returncode == 0, init.stderr
        return self.run("generate", extra_env)

    def imported_modules(self) -> list[str]:
        return json.loads(self.modules_file.read_text())
