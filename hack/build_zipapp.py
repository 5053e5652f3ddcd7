"""Build the zipapp launcher and the krew archive: `make zipapp`.

  dist/kubectl-disagg.pyz     one executable file (#!/usr/bin/env python3): the launcher in
                              hack/zipapp/ and the kubectl-disagg wheel, which it installs into
                              a virtual environment of its own on first use (the Kubernetes
                              client's compiled dependencies cannot run from a zip file)
  dist/kubectl-disagg.tar.gz  the krew archive: that file as kubectl-disagg
  dist/disagg.yaml            deploy/krew/disagg.yaml with the archive's sha256 and URL

Only the standard library's zipapp and pip (to build the wheel) are used.
"""

from __future__ import annotations

import argparse
import hashlib
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

LAUNCHER = REPO / "hack" / "zipapp" / "__main__.py"


def build(dist: Path, release_url: str | None) -> Path:
    dist.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kubectl-disagg-zipapp-") as scratch:
        app = Path(scratch) / "app"
        app.mkdir()
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
                        "--no-deps", "--wheel-dir", str(app), str(REPO)], check=True)
        shutil.copy(LAUNCHER, app / "__main__.py")
        pyz = dist / "kubectl-disagg.pyz"
        zipapp.create_archive(app, pyz, interpreter="/usr/bin/env python3")
    archive = dist / "kubectl-disagg.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tar.gettarinfo(str(pyz), arcname="kubectl-disagg")
        info.mode, info.uid, info.gid, info.uname, info.gname, info.mtime = 0o755, 0, 0, "", "", 0
        with pyz.open("rb") as handle:
            tar.addfile(info, handle)
    manifest = yaml.safe_load(MANIFEST.read_text())
    for platform in manifest["spec"]["platforms"]:
        platform["sha256"] = hashlib.sha256(archive.read_bytes()).hexdigest()
        if release_url:
            platform["uri"] = release_url
    from kubectl_disagg.output import to_yaml

    (dist / "disagg.yaml").write_text(to_yaml(manifest))
    return pyz


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
