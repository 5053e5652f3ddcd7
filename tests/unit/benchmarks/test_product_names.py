"""Every name a benchmark imports from kubectl_disagg still exists: the benchmarks run only in
`make bench`, so a module moved or a function renamed would otherwise break them unseen (as
status_phases.py once imported `sets_from_files` from where it no longer was)."""

import ast
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import step_writes  # noqa: E402


def product_imports():
    for script in sorted(BENCHMARKS.glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text(), str(script))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kubectl_disagg"):
                yield pytest.param(node.module, [a.name for a in node.names], id=f"{script.name}:{node.lineno}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("kubectl_disagg"):
                        yield pytest.param(alias.name, [], id=f"{script.name}:{node.lineno}")


@pytest.mark.parametrize("module, names", list(product_imports()))
def test_every_imported_name_exists(module, names):
    imported = importlib.import_module(module)
    for name in names:
        assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), f"{module}.{name} is gone"


def test_step_writes_wraps_a_transport_that_exists():
    """step_writes.py records the step's writes at the transport: the first of its places that
    imports must have `Transport.request(method, url, body, headers, ...)`."""
    for name in step_writes.TRANSPORTS:
        try:
            transport = importlib.import_module(name).Transport
        except ImportError:
            continue
        assert list(inspect.signature(transport.request).parameters)[:5] == ["self", "method", "url", "body", "headers"]
        return
    pytest.fail(f"no transport among {step_writes.TRANSPORTS}")
