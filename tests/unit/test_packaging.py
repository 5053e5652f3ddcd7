"""The wheel carries what lives outside the package directory: the top-level templates/ and the
CRDs of config/crd/, and both console scripts (the editable install the tests run from finds
them through the same package names; see test_completion and test_project_crds)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from tests.support.paths import REPO


def test_the_wheel_ships_templates_crds_and_both_scripts(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--wheel-dir", str(tmp_path), str(REPO)], check=True, timeout=300)
    (wheel,) = tmp_path.glob("kubectl_disagg-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for template in (REPO / "templates").glob("*.j2"):
        assert f"kubectl_disagg/templates/{template.name}" in names
    for crd in (REPO / "config" / "crd").glob("*.yaml"):
        assert f"kubectl_disagg/crd_yaml/{crd.name}" in names
    assert not any(name.startswith(("testenv/", "tests/")) for name in names)
    (entry_points,) = [n for n in names if n.endswith("entry_points.txt")]
    scripts = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "kubectl-disagg = kubectl_disagg.cli:main" in scripts
    assert "kubectl_complete-disagg = kubectl_disagg.commands.complete:complete_main" in scripts
