"""Turn a CRD's openAPIV3Schema into a JSON Schema that is as strict as the API server.

Structural schemas prune unknown fields on the server; for tests we reject them instead
(additionalProperties: false), so a rendered field the CRD does not know is a failure.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

_COPIED = ("type", "enum", "required", "minimum", "maximum", "minLength", "maxLength", "minItems",
           "maxItems", "pattern", "format")


def to_json_schema(node: dict) -> dict:
    out = {key: node[key] for key in _COPIED if key in node}
    if node.get("format") in ("int32", "int64", "date-time", "byte", "quantity", "int-or-string"):
        out.pop("format")
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    elif "anyOf" in node:
        out["anyOf"] = [to_json_schema(option) for option in node["anyOf"]]
    if "required" in node:
        # The server defaults before it validates: a required field with a default is never missing.
        defaulted = {k for k, v in node.get("properties", {}).items() if "default" in v}
        out["required"] = [k for k in node["required"] if k not in defaulted]
    if "properties" in node:
        out["properties"] = {key: to_json_schema(value) for key, value in node["properties"].items()}
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = to_json_schema(node["additionalProperties"])
    if "items" in node:
        out["items"] = to_json_schema(node["items"])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


@lru_cache(maxsize=None)
def load_crd(path: Path) -> dict:
    """A CRD file, read once per process, by LibYAML where PyYAML has it (the DisaggregatedSet
    and LeaderWorkerSet CRDs are half a megabyte each: PyYAML's own Python reads one in seconds).
    Shared: callers do not change it."""
    with open(path, "rb") as handle:
        return yaml.load(handle, Loader=LOADER)


LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=None)
def crd_validator(path: Path):
    import jsonschema

    crd = load_crd(path)
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    schema = to_json_schema(version["schema"]["openAPIV3Schema"])
    return jsonschema.Draft7Validator(schema)


def schema_errors(path: Path, obj: dict) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in crd_validator(path).iter_errors(obj)]
