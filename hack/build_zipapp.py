"""Build the self-contained zipapp and the krew archive: `make zipapp`.

  dist/kubectl-disagg.pyz     one executable file (#!/usr/bin/env python3, python3 >= 3.11) that
                              carries kubectl_disagg and its runtime dependencies (click, PyYAML,
                              Jinja2, MarkupSafe, jsonpatch, jsonpointer) as pure Python
                              and runs straight from the zip: no network, no virtual environment,
                              no cache directory. Started through a link named
                              kubectl_complete-disagg it answers kubectl's completion requests.
  dist/kubectl-disagg.tar.gz  the krew archive: that file as kubectl-disagg
  dist/disagg.yaml            deploy/krew/disagg.yaml with the archive's sha256 and URL

The wheel and its dependencies are installed with `pip install --target` (binary wheels only,
so no compiler runs), then the compiled speedups of PyYAML and MarkupSafe are dropped: both fall
back to their pure-Python code, and a zip file cannot import compiled modules anyway. Installer
metadata (*.dist-info, scripts in bin/) is dropped too: nothing reads it at run time. Beside
each module goes its bytecode for the Python that builds (hash-based, unchecked), which zipimport
loads instead of compiling the module on every run; other Python versions compile the source.
Every file gets one fixed mtime and mode and the entries are sorted, so building the same
sources with the same dependency versions and Python twice gives byte-identical files (the krew
manifest's sha256 depends on it).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipapp
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "deploy" / "krew" / "disagg.yaml"
MAIN = REPO / "hack" / "zipapp" / "__main__.py"

# The files pyproject.toml builds the wheel from (its packages and package-dir entries, its readme).
PACKAGED = ("pyproject.toml", "README.md", "kubectl_disagg", "templates", "config/crd")
# 1980-01-01 00:00:00 UTC + 2 s: the earliest time a zip entry can record (and an even second).
FIXED_MTIME = 315532802
# Left out of the archive: compiled modules (a zip cannot import them), stray bytecode (compiled
# again below), installer metadata.
DROPPED_SUFFIXES = (".so", ".pyd", ".pyc", ".dist-info", ".egg-info")
DROPPED_DIRS = ("bin", "__pycache__")


def build(dist: Path, release_url: str | None) -> Path:
    dist.mkdir(parents=True, exist_ok=True)
    pyz = dist / "kubectl-disagg.pyz"
    with tempfile.TemporaryDirectory(prefix="kubectl-disagg-zipapp-") as scratch:
        source, wheels, app = Path(scratch) / "source", Path(scratch) / "wheel", Path(scratch) / "app"
        copy_sources(source)
        pip = [sys.executable, "-m", "pip", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "wheel", "--no-deps", "--wheel-dir", str(wheels), str(source)], check=True)
        (wheel,) = wheels.glob("*.whl")
        subprocess.run([*pip, "install", "--no-compile", "--only-binary", ":all:", "--target", str(app), str(wheel)],
                       check=True)
        prune(app)
        shutil.copy(MAIN, app / "__main__.py")
        compile_beside_sources(app)
        normalise(app)
        zipapp.create_archive(app, pyz, interpreter="/usr/bin/env python3", compressed=True)
    os.utime(pyz, (FIXED_MTIME, FIXED_MTIME))
    archive = dist / "kubectl-disagg.tar.gz"
    # gzip records a time and a file name in its header: fix the one, leave out the other.
    with archive.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tar.gettarinfo(str(pyz), arcname="kubectl-disagg")
        info.mode, info.uid, info.gid, info.uname, info.gname, info.mtime = 0o755, 0, 0, "", "", 0
        with pyz.open("rb") as handle:
            tar.addfile(info, handle)
    manifest = yaml.safe_load(MANIFEST.read_text())
    for platform in manifest["spec"]["platforms"]:
        platform["sha256"] = hashlib.sha256(archive.read_bytes()).hexdigest()
        if release_url:
            platform["uri"] = release_url
    from kubectl_disagg.manifests.writer import to_yaml

    (dist / "disagg.yaml").write_text(to_yaml(manifest))
    return pyz


def copy_sources(source: Path) -> None:
    """What pyproject.toml packages, copied: the wheel is built from these alone, never from a
    stale build/ directory in the repository (setuptools would package what is left there)."""
    for name in PACKAGED:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / name, source / name)


def prune(app: Path) -> None:
    """Drop what the zip does not run: compiled modules, installer metadata, scripts."""
    for path in sorted(app.rglob("*"), reverse=True):  # children before their directories
        if path.name.endswith(DROPPED_SUFFIXES) or (path.parent == app and path.name in DROPPED_DIRS) \
                or path.name == "__pycache__":
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def compile_beside_sources(app: Path) -> None:
    """module.pyc beside each module.py, where zipimport looks for bytecode: without it every run
    compiles every module it imports (a zip is never written to). The bytecode is this Python's
    and hash-based, unchecked (no timestamps, so the build stays reproducible); another Python
    version finds a magic number it does not know and compiles the source instead. A fixed hash
    seed (marshal writes set constants in hash order), and file names inside the archive rather
    than in the scratch directory."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-b", "--invalidation-mode", "unchecked-hash",
                    "-s", str(app), "-p", "kubectl-disagg.pyz", str(app)],
                   check=True, env={**os.environ, "PYTHONHASHSEED": "0"})


def normalise(app: Path) -> None:
    """One mtime and mode for every entry, whatever the clock and umask of the build."""
    for path in [app, *app.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
        os.utime(path, (FIXED_MTIME, FIXED_MTIME))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, default=REPO / "dist")
    parser.add_argument("--release-url", help="where the release serves kubectl-disagg.tar.gz")
    args = parser.parse_args()
    try:
        pyz = build(args.dist, args.release_url)
    except subprocess.CalledProcessError as err:
        print(f"build_zipapp: error: {' '.join(err.cmd[:6])} ... exited {err.returncode}", file=sys.stderr)
        return 1
    size = pyz.stat().st_size / 1e6
    print(f"{pyz.relative_to(Path.cwd()) if pyz.is_relative_to(Path.cwd()) else pyz} ({size:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
