"""The layout of the tests themselves (CONTRIBUTING.md, "Tests"): test modules share nothing by
importing each other. Fixtures shared by several modules live in conftest.py files, helpers in
plain modules under tests/support/, the in-memory stand-ins under tests/fakes/, the runners of
real systems under tests/oracles/, data files under tests/data/."""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from tests.support.paths import REPO

TESTS = REPO / "tests"
# What the tests/ folder holds at its root: the tiers and the shared folders, no loose modules.
ROOT_ENTRIES = {"__init__.py", "conftest.py", "unit", "integration", "support", "fakes", "oracles", "data"}


def modules(tests: Path = TESTS) -> list[Path]:
    return sorted(p for p in tests.rglob("*.py") if "__pycache__" not in p.parts)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file, at any depth (imports inside functions count)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def imports_of_test_modules(tests: Path = TESTS) -> list[str]:
    """`file:line: module` for each import of a test module or a conftest, anywhere under tests/."""
    wrong = []
    for path in modules(tests):
        for line, module in imported_modules(path):
            last = module.rsplit(".", 1)[-1]
            if module.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
                wrong.append(f"{path.relative_to(tests.parent)}:{line}: {module}")
    return sorted(set(wrong))


FIXTURE_IMPORT = re.compile(r"\s*(from|import)\s.*#\s*noqa\b.*F401")


def fixture_imports(tests: Path = TESTS) -> list[str]:
    """Imports kept only so that pytest finds a fixture (`# noqa: F401`)."""
    return [f"{path.relative_to(tests.parent)}:{number}"
            for path in modules(tests)
            for number, text in enumerate(path.read_text().splitlines(), 1)
            if FIXTURE_IMPORT.match(text)]


def fixtures_outside_conftest_and_tests(tests: Path = TESTS) -> list[str]:
    """Fixtures defined in helper modules: only a conftest.py or the test module using it may hold one."""
    wrong = []
    for path in modules(tests):
        if path.name == "conftest.py" or path.name.startswith("test_"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef) and any(
                    ast.unparse(d).startswith(("pytest.fixture", "fixture")) for d in node.decorator_list):
                wrong.append(f"{path.relative_to(tests.parent)}:{node.lineno}: {node.name}")
    return wrong


def stray_tests(tests: Path = TESTS) -> list[str]:
    """Test functions in modules pytest does not collect (helpers, fakes, oracles)."""
    return [f"{path.relative_to(tests.parent)}:{node.lineno}: {node.name}"
            for path in modules(tests) if not path.name.startswith("test_") and path.name != "conftest.py"
            for node in ast.parse(path.read_text(), str(path)).body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def test_no_test_module_imports_another_test_module_or_a_conftest():
    assert imports_of_test_modules() == []


def test_no_import_is_kept_only_for_its_fixture():
    assert fixture_imports() == []


def test_fixtures_live_in_conftest_files_or_the_module_that_uses_them():
    assert fixtures_outside_conftest_and_tests() == []


def test_helper_modules_hold_no_tests():
    assert stray_tests() == []


def loose_root_entries(tests: Path = TESTS) -> list[str]:
    entries = {p.name for p in tests.iterdir() if p.name != "__pycache__" and not p.name.startswith(".")}
    return sorted(entries - ROOT_ENTRIES)


def test_the_tests_root_holds_only_the_tiers_and_the_shared_folders():
    assert loose_root_entries() == []


# Each rule on a tests/ folder planted with one violation beside files keeping it: the rule, the
# planted files (path under tests/: text) and what the rule must name.
PLANTED = {
    "test module imported": (imports_of_test_modules, {
        "unit/test_a.py": "from tests.support import paths\n",
        "unit/test_b.py": "def test_b():\n    from tests.unit.test_a import helper\n"},
        ["tests/unit/test_b.py:2: tests.unit.test_a"]),
    "fixture import": (fixture_imports, {
        "unit/test_a.py": "import os  # noqa: E401\n", "unit/test_b.py": "from tests.fakes import cluster  # noqa: F401\n"},
        ["tests/unit/test_b.py:1"]),
    "fixture in a helper": (fixtures_outside_conftest_and_tests, {
        "conftest.py": "@pytest.fixture\ndef repo(): ...\n", "unit/test_a.py": "@pytest.fixture\ndef a(): ...\n",
        "support/git.py": "def plain(): ...\n\n@pytest.fixture()\ndef repo(): ...\n"},
        ["tests/support/git.py:4: repo"]),
    "test in a helper": (stray_tests, {
        "unit/test_a.py": "def test_a(): ...\n", "fakes/cluster.py": "def helper(): ...\ndef test_fake(): ...\n"},
        ["tests/fakes/cluster.py:2: test_fake"]),
    "loose root entry": (loose_root_entries, {"unit/test_a.py": "", "conftest.py": "", "helpers.py": ""},
                         ["helpers.py"]),
}


@pytest.mark.parametrize("rule", sorted(PLANTED))
def test_each_rule_finds_its_planted_violation(rule, tmp_path):
    check, files, named = PLANTED[rule]
    tests = tmp_path / "tests"
    for name, text in files.items():
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text(textwrap.dedent(text))
    assert check(tests) == named
