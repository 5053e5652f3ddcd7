"""docs/reference/fields.md, made from the openAPIV3Schema of the CRDs in config/crd (which carry
the descriptions of hack/crd/api's doc comments): one table per kind, a row per field.

    python3 hack/field_reference.py           # print it
    python3 hack/field_reference.py --write   # rewrite docs/reference/fields.md (`make docs`)

`tests/unit/test_field_reference.py` fails when the committed file is stale.
"""

from __future__ import annotations

import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
CRDS = ROOT / "config" / "crd"
TARGET = ROOT / "docs" / "reference" / "fields.md"
sys.path[:0] = [str(ROOT / "hack"), str(ROOT / "hack" / "crd")]
from trim_descriptions import TEMPLATES  # noqa: E402  (a script beside this one, not a package)

STANDARD = {"apiVersion", "kind", "metadata"}


def _type(node: dict) -> str:
    if node.get("x-kubernetes-int-or-string"):
        return "integer or string"
    kind = node.get("type", "object")
    if kind == "array":
        return "[]" + _type(node.get("items") or {})
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        return "map[string]" + _type(node["additionalProperties"])
    return kind


def _constraints(node: dict, required: bool) -> str:
    notes = ["required"] if required else []
    for key, word in (("default", "default"), ("minimum", "min"), ("maximum", "max"),
                      ("minLength", "min length"), ("maxLength", "max length"),
                      ("minItems", "min items"), ("maxItems", "max items"), ("pattern", "pattern")):
        if key in node:
            notes.append(f"{word} `{node[key]}`")
    if "enum" in node:
        notes.append("one of " + ", ".join(f"`{v}`" for v in node["enum"]))
    return "; ".join(notes)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _rows(node: dict, path: str):
    required = set(node.get("required", []))
    for key, child in sorted((node.get("properties") or {}).items()):
        if not path and key in STANDARD:
            continue
        where = f"{path}.{key}" if path else key
        description = child.get("description", "")
        if key in TEMPLATES:
            description += " A pod template (claim templates: claims) as Kubernetes types it: `kubectl explain pod.spec`."
        yield (f"`{where}`", _type(child), _cell(description), _cell(_constraints(child, key in required)))
        if key in TEMPLATES or key == "metadata":
            continue
        item = child.get("items") if child.get("type") == "array" else None
        if isinstance(item, dict) and item.get("properties"):
            yield from _rows(item, f"{where}[]")
        elif child.get("properties"):
            yield from _rows(child, where)


def reference() -> str:
    out = ["# Field reference",
           "",
           "<!-- made by hack/field_reference.py from config/crd (make docs); do not edit -->",
           "",
           "Every field of the project's kinds, as `kubectl explain` shows them once",
           "`kubectl disagg crds | kubectl apply --server-side -f -` installed them.",
           ""]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=loader)
        (version,) = crd["spec"]["versions"]
        schema = version["schema"]["openAPIV3Schema"]
        names = crd["spec"]["names"]
        out += [f"## {names['kind']}", "",
                f"`{crd['spec']['group']}/{version['name']}`, `kubectl explain {names['singular']}`", "",
                _cell(schema.get("description", "")), "",
                "| field | type | description | constraints |", "| --- | --- | --- | --- |"]
        out += ["| " + " | ".join(row) + " |" for row in _rows(schema, "")]
        out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    from generated_text import print_or_write

    def write(text: str) -> None:
        TARGET.parent.mkdir(parents=True, exist_ok=True)
        TARGET.write_text(text)

    return print_or_write(argv, "hack/field_reference.py", reference(), write)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
