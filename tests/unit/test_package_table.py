"""The README's package table is the one `hack/package_table.py` makes from the docstrings."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("package_table", ROOT / "hack" / "package_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_package_table_is_made_from_the_docstrings():
    generator = _generator()
    readme = (ROOT / "README.md").read_text()
    assert generator.readme_with(generator.table(), readme) == readme, \
        "README.md's package table is stale: run `make readme`"


def test_every_module_of_every_layer_has_a_row():
    generator = _generator()
    rows = generator.table()
    for path in sorted((ROOT / "kubectl_disagg").rglob("*.py")):
        if path.name == "__init__.py" or "templates" in path.parts or path.parent.name == "kubectl_disagg":
            continue
        assert f"| `{path.relative_to(ROOT / 'kubectl_disagg').as_posix()}` |" in rows, path
