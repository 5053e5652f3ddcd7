"""`kubectl disagg version`: the plugin's version, as `kubectl version --client` (issue 39)."""

from __future__ import annotations

import json

import pytest

from kubectl_disagg import __version__
from tests.support.cli import run


def test_version_is_a_verb(capsys):
    code, out, err = run(["version"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"Plugin Version: v{__version__}"
    assert out.splitlines()[1].startswith("Python Version: 3.")


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_version_as_data(capsys, output):
    code, out, _ = run(["version", "-o", output], capsys)
    assert code == 0
    document = json.loads(out) if output == "json" else dict(line.split(": ", 1) for line in out.splitlines())
    assert document["pluginVersion"] == __version__ and set(document) == {"pluginVersion", "pythonVersion"}


def test_the_flag_stays(capsys):
    assert run(["--version"], capsys)[1] == f"kubectl-disagg, version {__version__}\n"
