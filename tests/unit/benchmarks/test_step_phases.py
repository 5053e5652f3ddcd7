"""benchmarks/step_phases.py wraps the stepper's functions by name: every name must still exist,
or the breakdown bench_reaction.py prints fails only when someone runs it."""

import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import step_phases  # noqa: E402


@pytest.mark.parametrize("module, path, label", step_phases.WRAPPED, ids=[w[2] for w in step_phases.WRAPPED])
def test_every_wrapped_function_exists(module, path, label):
    owner = importlib.import_module(module)
    for name in path.split("."):
        assert hasattr(owner, name), f"{module}.{path} ({label}) no longer exists"
        owner = getattr(owner, name)
    assert callable(owner)
