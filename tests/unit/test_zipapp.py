"""The krew route: the manifest, and the zipapp launcher handing runs to its installed wheel."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipapp

import yaml

from tests.conftest import REPO

LAUNCHER = REPO / "hack" / "zipapp" / "__main__.py"


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


def launcher_with_installed_wheel(tmp_path):
    """A pyz holding the launcher and a (dummy) wheel, and the cache as a first run leaves it."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text(LAUNCHER.read_text())
    wheel = b"not really a wheel"
    (app / "kubectl_disagg-0.1.0-py3-none-any.whl").write_bytes(wheel)
    pyz = tmp_path / "kubectl-disagg"
    zipapp.create_archive(app, pyz, interpreter=sys.executable)
    (tmp_path / "kubectl_complete-disagg").symlink_to(pyz)
    home = tmp_path / "cache" / "kubectl-disagg" / "launcher" / hashlib.sha256(wheel).hexdigest()[:16]
    (home / "venv" / "bin").mkdir(parents=True)
    for program in ("kubectl-disagg", "kubectl_complete-disagg"):
        script = home / "venv" / "bin" / program
        script.write_text(f'#!/bin/sh\necho "{program} $*"\n')
        script.chmod(0o755)
    (home / "ready").touch()
    return tmp_path, {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}


def test_the_launcher_runs_the_installed_plugin(tmp_path):
    where, env = launcher_with_installed_wheel(tmp_path)
    out = subprocess.run([sys.executable, str(where / "kubectl-disagg"), "render", "-f", "x y.yaml"], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out == "kubectl-disagg render -f x y.yaml\n"


def test_the_launcher_completes_under_the_helper_name(tmp_path):
    where, env = launcher_with_installed_wheel(tmp_path)
    out = subprocess.run([sys.executable, str(where / "kubectl_complete-disagg"), "rollout", ""], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out == "kubectl_complete-disagg rollout \n"
