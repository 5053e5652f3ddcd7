"""The house by concern: each package imports only the packages below it, and none imports in a cycle.

The layers, lowest first: `errors` (problems for people), `manifests` (reading and writing YAML/JSON,
the document source type), `core` (the pure domain: model, validation, revision, planner, render,
reconcile, status), `kube` (the API server: kubeconfig, credentials, transport, REST, lease, wait),
`rollout` (passes against a cluster: stepper, write scheduling, a run of steps, events, live plan,
hand-over), `gitops` (the rollout state in git), `argocd` (the config management plugin), `views`
(printers and templates), `commands` (flags → one library call → one view, each under 150 lines).
`cli` is the process entry on top.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "kubectl_disagg"
LAYERS = ["errors", "manifests", "core", "kube", "rollout", "gitops", "argocd", "views", "commands", "cli"]


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kubectl_disagg"):
            if node.module == "kubectl_disagg":
                found.update(f"kubectl_disagg.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("kubectl_disagg"))
    return found


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


MODULES = {_module_name(path): _imports(path) for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_lives_in_a_layer():
    """No module floats beside the packages: the folder names say where every rule lives."""
    homeless = sorted(m for m in MODULES if _layer(m) not in LAYERS + ["__main__", None])
    assert homeless == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_upward(module):
    mine = _layer(module)
    if mine not in LAYERS:
        return
    upward = sorted(target for target in MODULES[module]
                    if _layer(target) in LAYERS and LAYERS.index(_layer(target)) > LAYERS.index(mine))
    assert upward == [], f"{module} imports a higher layer"


def test_no_import_cycle():
    graph = {m: {t for t in targets if t in MODULES and t != m} for m, targets in MODULES.items()}
    done: set[str] = set()

    def visit(module: str, stack: list[str]) -> None:
        if module in stack:
            raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(module):] + [module]))
        if module in done:
            return
        for target in sorted(graph[module]):
            visit(target, stack + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


COMMAND_LINES = 150


@pytest.mark.parametrize("path", sorted((PACKAGE / "commands").glob("*.py")), ids=lambda path: path.name)
def test_commands_are_thin(path):
    """A command is flags → one library call → one view: anything longer holds rules that
    belong to a library package (and its tests) or to views/."""
    lines = len(path.read_text().splitlines())
    assert lines < COMMAND_LINES, f"commands/{path.name} has {lines} lines"
