"""The scripts of hack/ as modules, for the tests of what they make (they are not a package)."""

from __future__ import annotations

import functools
import importlib.util
import pathlib

HACK = pathlib.Path(__file__).resolve().parents[2] / "hack"


@functools.lru_cache(maxsize=None)
def hack_module(relative: str):
    """hack/<relative> (a Python script) loaded as a module."""
    path = HACK / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
