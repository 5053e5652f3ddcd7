"""The package table of CONTRIBUTING.md, made from the packages' own docstrings.

Each package of `kubectl_disagg/` says what it holds in its `__init__.py` docstring and each
module in its first paragraph; the layers (which package may import which) are the list
`tests/unit/test_architecture.py` checks. This writes them into CONTRIBUTING.md between the
two markers, so the table cannot drift from the code: `tests/unit/test_package_table.py` fails
when that copy is stale.

    python3 hack/package_table.py           # print the table
    python3 hack/package_table.py --write   # rewrite CONTRIBUTING.md's copy (`make package-table`)
"""

from __future__ import annotations

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kubectl_disagg"
TARGET = ROOT / "CONTRIBUTING.md"
BEGIN = "<!-- package table: made by hack/package_table.py from the docstrings (make package-table) -->"
END = "<!-- end of the package table -->"


def layers() -> list[str]:
    """The layers, lowest first, as the architecture test lists them."""
    tree = ast.parse((ROOT / "tests/unit/test_architecture.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "LAYERS" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise SystemExit("tests/unit/test_architecture.py has no LAYERS list")


def summary(path: pathlib.Path) -> str:
    """The first paragraph of a module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(), str(path))) or ""
    first = doc.strip().split("\n\n")[0]
    text = " ".join(line.strip() for line in first.splitlines())
    if not text:
        raise SystemExit(f"{path.relative_to(ROOT)}: no docstring: every module says what it holds")
    return text.replace("|", "\\|")


def modules(package: pathlib.Path) -> list[pathlib.Path]:
    """The modules of a package, its subpackages' after its own, `__init__` left out."""
    own = sorted(p for p in package.glob("*.py") if p.name != "__init__.py")
    subpackages = sorted(p for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    return own + [m for sub in subpackages for m in [sub / "__init__.py", *modules(sub)]]


def table() -> str:
    order = layers()
    rows = ["| module | what it holds |", "| --- | --- |"]
    for index, layer in enumerate(order):
        below = ", ".join(f"`{name}`" for name in order[:index]) or "nothing of ours"
        path = PACKAGE / layer
        if path.is_dir():
            rows.append(f"| **`{layer}/`** | {summary(path / '__init__.py')} *May import:* {below}. |")
            for module in modules(path):
                name = module.relative_to(PACKAGE).as_posix()
                if module.name == "__init__.py":
                    name = module.parent.relative_to(PACKAGE).as_posix() + "/"
                rows.append(f"| `{name}` | {summary(module)} |")
        else:
            rows.append(f"| **`{layer}.py`** | {summary(PACKAGE / f'{layer}.py')} *May import:* {below}. |")
    return "\n".join(rows) + "\n"


def document_with(text: str, document: str) -> str:
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)
    if not pattern.search(document):
        raise SystemExit(f"{TARGET.name} has no package table markers")
    return pattern.sub(lambda _: f"{BEGIN}\n{text}{END}", document)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT / "hack"))
    from generated_text import print_or_write

    return print_or_write(argv, "hack/package_table.py", table(),
                          lambda text: TARGET.write_text(document_with(text, TARGET.read_text())))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
