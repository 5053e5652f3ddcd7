"""Argo CD's health-check sandbox in Python: a real Lua 5.1 (lupa) with only the base, table
and package libraries, as gopher-lua gives `health.lua` scripts without useOpenLibs."""

from __future__ import annotations

from pathlib import Path

from lupa import lua51

from tests.conftest import REPO

CUSTOMIZATIONS = REPO / "argocd" / "resource_customizations"
SCRIPTS = sorted(CUSTOMIZATIONS.glob("*/*/health.lua"))
# What gopher-lua does not open without useOpenLibs, and what lupa adds of its own.
REMOVED = ("string", "math", "os", "io", "debug", "coroutine", "python")
SANDBOX = """
getmetatable("").__index = nil  -- no ("x"):upper() either: strings have no methods
for _, name in ipairs({%s}) do
  _G[name] = nil
  package.loaded[name] = nil
end
""" % ", ".join(f'"{name}"' for name in REMOVED)


def restricted_runtime():
    runtime = lua51.LuaRuntime(register_eval=False, register_builtins=False)
    runtime.execute(SANDBOX)
    return runtime


def to_lua(runtime, value):
    """Plain data as Lua values: dicts as tables, lists as 1-based arrays, None as nil."""
    if isinstance(value, dict):
        table = runtime.table()
        for key, item in value.items():
            if item is not None:
                table[key] = to_lua(runtime, item)
        return table
    if isinstance(value, list):
        return runtime.table(*[to_lua(runtime, item) for item in value])
    return value


def health(script: Path, obj: dict) -> dict:
    runtime = restricted_runtime()
    runtime.globals().obj = to_lua(runtime, obj)
    result = runtime.execute(script.read_text())
    return {"status": result["status"], "message": result["message"]}
