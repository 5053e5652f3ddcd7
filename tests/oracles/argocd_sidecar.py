"""Argo CD running the plugin, for the contract tests: a git repository holding applications,
plugin.yaml in a sidecar, and the repo-server's manifest generation done by Argo CD's own
logic (tests/oracles/argocd_harness.py): discovery, the plugin's variables, generate in a fresh copy
of the repository, the output split and flattened.

The sidecar's own environment has nothing the real one would not: HOME cannot be written,
there is no kubeconfig, and any network connection or read of the wall clock fails (a
sitecustomize refuses them and records which modules were imported).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.oracles.argocd_harness import generate_manifests

BIN = Path(sys.executable).parent  # where `kubectl-disagg` is installed with this Python
PLUGIN = {"name": "kubectl-disagg"}  # the usual Application: the plugin named, nothing else

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


def sidecar_environment(tmp_path: Path) -> dict[str, str]:
    """The sidecar container's own environment (what the cmp-server's os.Environ() holds)."""
    guard = tmp_path / "guard"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(_GUARD)
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    return {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(blocker / "home"),  # nothing can be created below a file, not even by root
        "KUBECONFIG": str(blocker / "kubeconfig"),
        "PYTHONPATH": str(guard),
        "PYTHONDONTWRITEBYTECODE": "1",
        "CMP_TEST_MODULES": str(tmp_path / "modules.json"),
    }


class ArgoCD:
    """A repository (files by path from its root) and Argo CD with the plugin's sidecar."""

    def __init__(self, tmp_path: Path, files: dict[str, str | bytes], steady_only: bool = True):
        """`steady_only`: the sidecar runs with `require-rollout-state` off (its environment's
        ARGOCD_ENV_REQUIRE_ROLLOUT_STATE=false): the applications here deploy steady states;
        tests of the rollout state pass False."""
        self.tmp_path = tmp_path
        self.repo = tmp_path / "repo"
        for name, content in files.items():
            target = self.repo / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode() if isinstance(content, str) else content)
        self.sidecar_env = sidecar_environment(tmp_path)
        if steady_only:
            self.sidecar_env["ARGOCD_ENV_REQUIRE_ROLLOUT_STATE"] = "false"
        self.work_dir = tmp_path / "cmp-server"

    def manifests(self, app_path: str = "apps/llama", plugin: dict | None = PLUGIN, **request) -> dict:
        """The repo-server's answer for an Application at `app_path` with `source.plugin` =
        `plugin` (None: no plugin block)."""
        return generate_manifests(self.repo, app_path, plugin=plugin, sidecar_env=self.sidecar_env,
                                  work_dir=self.work_dir, **request)

    def objects(self, app_path: str = "apps/llama", plugin: dict | None = PLUGIN, **request) -> list[dict]:
        """The objects Argo CD would apply; fails the test with Argo CD's error if there is one."""
        answer = self.manifests(app_path, plugin, **request)
        assert not answer.get("error"), answer["error"]
        assert answer["sourceType"] == "Plugin"
        return answer["manifests"]

    def imported_modules(self) -> list[str]:
        return json.loads(Path(self.sidecar_env["CMP_TEST_MODULES"]).read_text())
