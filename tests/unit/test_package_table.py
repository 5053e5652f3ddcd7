"""CONTRIBUTING.md's package table is the one `hack/package_table.py` makes from the docstrings."""

from __future__ import annotations

import pathlib

from tests.support.hack_modules import hack_module

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _generator():
    return hack_module("package_table.py")


def test_the_contributing_package_table_is_made_from_the_docstrings():
    generator = _generator()
    contributing = generator.TARGET.read_text()
    assert generator.TARGET == ROOT / "CONTRIBUTING.md"
    assert generator.document_with(generator.table(), contributing) == contributing, \
        "CONTRIBUTING.md's package table is stale: run `make package-table`"


def test_every_module_of_every_layer_has_a_row():
    generator = _generator()
    rows = generator.table()
    for path in sorted((ROOT / "kubectl_disagg").rglob("*.py")):
        if path.name == "__init__.py" or "templates" in path.parts or path.parent.name == "kubectl_disagg":
            continue
        assert f"| `{path.relative_to(ROOT / 'kubectl_disagg').as_posix()}` |" in rows, path

