"""The controller's revision, byte for byte (issue #13, design §2).

The upstream controller's `ComputeRevision` marshals `[{name, template}]` (the roles in spec
order, each template a typed `LeaderWorkerTemplate` as read back from the API server) with Go's
`encoding/json`, hashes it with SHA-256 and keeps 8 hex digits. To hash a file the same way,
this module reproduces the two steps between a manifest and those bytes:

1. the API server: CRD defaults filled in (`fill_defaults`) and unknown fields pruned;
2. Go: decoding into the typed structs and encoding them again — fields in declaration order,
   `omitempty`/`omitzero`, nil slices and maps as `null`, structs always written (`{}`), map keys
   sorted, `<` `>` `&` U+2028 U+2029 escaped, quantities canonical, IntOrString as number or
   string, `metav1.Time` as RFC 3339 seconds or `null`.

Field order, omit rules, shapes and defaults come from `data/revision-table.json`, generated
from k8s.io/api v0.36.3 by `hack/revision/cmd/revision-table` (`make generate`).
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from hashlib import sha256
from typing import Any

from kubectl_disagg.core.api import quantity
from kubectl_disagg.core.api.naming import REVISION_LENGTH
from kubectl_disagg.manifests.source import JsonObject

# Inside the zipapp this path points into the zip file: read it through the module's loader.
TABLE_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "data",
                          "revision-table.json")

_MISSING = object()  # a field the document leaves out: Go's zero value
_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_INT64 = (-(1 << 63), (1 << 63) - 1)


class RevisionInputError(ValueError):
    """A value Go could not decode into its field (a string for an integer, a bad quantity)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message
        self.path: list[str | int] = []  # from the template down to the value, filled on the way up


# --- the table ------------------------------------------------------------------------------

# A Go type as the table spells it: (scalar,), ("ptr" | "list" | "map", element shape), ("struct", name).
# Typed loosely after the kind: the code tells the three forms apart by shape[0], which a union of
# tuple types cannot be narrowed by.
Shape = tuple[Any, ...]
Field = tuple[str, Shape, bool, bool]  # json name, shape, omitempty, omitzero


class _Struct:
    """One Go struct: flattened fields (json name, shape, omitempty, omitzero), its defaults,
    and the shapes of the fields that hold structs (where defaults can sit deeper down)."""

    __slots__ = ("fields", "defaults", "nested")

    def __init__(self, fields: tuple[Field, ...], defaults: JsonObject, nested: dict[str, Shape]):
        self.fields = fields
        self.defaults = defaults
        self.nested = nested


class _Table:
    def __init__(self, raw: JsonObject):
        self._raw_structs: JsonObject = raw["structs"]
        self._raw_defaults: JsonObject = raw["defaults"]
        self._structs: dict[str, _Struct] = {}
        self._shapes: dict[str, Shape] = {}
        self.root = self.shape("@" + raw["root"])

    def shape(self, text: str) -> Shape:
        """'*[]@core/v1.Container' → ('ptr', ('list', ('struct', 'core/v1.Container')))."""
        parsed: Shape | None = self._shapes.get(text)
        if parsed is None:
            if text.startswith("*"):
                parsed = ("ptr", self.shape(text[1:]))
            elif text.startswith("[]"):
                parsed = ("list", self.shape(text[2:]))
            elif text.startswith("map[]"):
                parsed = ("map", self.shape(text[5:]))
            elif text.startswith("@"):
                if text[1:] not in self._raw_structs:
                    raise KeyError(f"revision table: unknown struct {text[1:]}")
                parsed = ("struct", text[1:])
            elif text in _SCALARS:
                parsed = (text,)
            else:
                raise KeyError(f"revision table: unsupported shape {text!r}")
            self._shapes[text] = parsed
        return parsed

    def struct(self, name: str) -> _Struct:
        """Compiled on first use: a render only pays for the types its documents use."""
        compiled = self._structs.get(name)
        if compiled is None:
            fields: list[Field] = []
            defaults: JsonObject = {}
            nested: dict[str, Shape] = {}
            self._flatten(name, fields, defaults, nested)
            compiled = self._structs[name] = _Struct(tuple(fields), defaults, nested)
        return compiled

    def _flatten(self, name: str, fields: list[Field], defaults: JsonObject, nested: dict[str, Shape]) -> None:
        """encoding/json puts an embedded struct's fields where the embedding field stands."""
        defaults.update(self._raw_defaults.get(name, ()))
        for entry in self._raw_structs[name]:
            json_name, shape_text, flags = entry[0], entry[1], entry[2:]
            if "inline" in flags:
                self._flatten(shape_text[1:], fields, defaults, nested)
                continue
            shape = self.shape(shape_text)
            fields.append((json_name, shape, "omitempty" in flags, "omitzero" in flags))
            if "@" in shape_text:
                nested[json_name] = shape


_SCALARS = frozenset({"string", "bool", "int", "uint", "quantity", "intorstring", "time"})
_table: _Table | None = None


def table() -> _Table:
    """The generated table, read on first use (hashing needs it, importing this module not)."""
    global _table
    if _table is None:
        _table = _Table(read_table())
    return _table


@functools.cache
def read_table() -> JsonObject:
    """The generated table as data, read once per process and shared (typeschema checks
    against it too): nobody changes it. Read through the loader that imported this module: a
    file beside it in a regular install, an entry of the zip in the zipapp. (importlib.resources
    reads the same way but costs more to import than the whole table takes to parse.)"""
    # __loader__ is a module global the import system sets; the checker does not know it.
    loaded: JsonObject = json.loads(__loader__.get_data(TABLE_PATH))  # type: ignore[name-defined]
    return loaded


# --- defaults -------------------------------------------------------------------------------

def fill_defaults(template: JsonObject) -> JsonObject:
    """Fill in, in place, the CRD defaults the API server adds to a LeaderWorkerTemplate
    (every `+default` reachable from it: port protocol TCP, size 1, …) and return it.
    Only absent fields are filled, so filling twice changes nothing."""
    _fill(table().root, template)
    return template


def _fill(shape: Shape, value: object) -> None:
    kind = shape[0]
    if kind == "ptr":
        _fill(shape[1], value)
    elif kind == "list" and isinstance(value, list):
        for item in value:
            _fill(shape[1], item)
    elif kind == "map" and isinstance(value, dict):
        for item in value.values():
            _fill(shape[1], item)
    elif kind == "struct" and isinstance(value, dict):
        compiled = table().struct(shape[1])
        for key, default in compiled.defaults.items():
            if value.get(key) is None:
                value[key] = default
        for key, child in value.items():  # only what the document holds: no walk of the types
            field_shape = compiled.nested.get(key)
            if field_shape is not None and child is not None:
                _fill(field_shape, child)


# --- Go's encoding/json over the table ------------------------------------------------------

def encode_roles(roles: Iterable[tuple[str, Mapping[str, object]]],
                 group_identities: Mapping[str, object] | None = None) -> bytes:
    """The bytes ComputeRevision hashes for (name, defaulted template) pairs in spec order.

    `group_identities` maps a role's name to its `spec.groupIdentity` (lws#987): the controller
    writes it between the name and the template, left out when empty or `Ordinal`
    (`normal_group_identity`), so a set that never names it keeps its revision."""
    root = table().root
    payload = []
    for index, (name, template) in enumerate(roles):
        try:
            entry: JsonObject = {"name": _string(name)}
            identity = normal_group_identity((group_identities or {}).get(name))
            if identity:
                entry["groupIdentity"] = identity
            entry["template"] = _encode(root, template)
            payload.append(entry)
        except RevisionInputError as error:
            error.path[:0] = [index]
            raise
    return go_json(payload)


GROUP_IDENTITY_ORDINAL = "Ordinal"


def normal_group_identity(value: object) -> str:
    """A role's groupIdentity as the revision hashes it: absent, empty and the default `Ordinal`
    are all "" (lws#987 normalises them alike, so defaulting on read changes no revision)."""
    if value is None or value == GROUP_IDENTITY_ORDINAL:
        return ""
    return _string(value)


def encode_template(template: JsonObject) -> bytes:
    """One LeaderWorkerTemplate as the controller's revision encodes it, defaults filled in (in
    place): two templates the API server stores alike encode alike (see `provenance`)."""
    return go_json(_encode(table().root, fill_defaults(template)))


def compute_revision(roles: Iterable[tuple[str, Mapping[str, object]]],
                     group_identities: Mapping[str, object] | None = None) -> str:
    """First 8 hex digits of SHA-256 over `encode_roles(...)`: the controller's revision."""
    return sha256(encode_roles(roles, group_identities)).hexdigest()[:REVISION_LENGTH]


def spec_revision(roles: Iterable[tuple[str, Mapping[str, Any]]]) -> str:
    """The revision of roles as a document writes them, (name, role spec) in spec order: the
    spec's `leaderWorkerTemplate` with the defaults filled in (on a copy) and its `groupIdentity`.
    What a recorded revision is checked against (a state file's records, a RolloutState's history)."""
    pairs = list(roles)
    return compute_revision([(name, fill_defaults(copy.deepcopy(dict(spec.get("leaderWorkerTemplate") or {}))))
                             for name, spec in pairs], {name: spec.get("groupIdentity") for name, spec in pairs})


def go_json(value: object) -> bytes:
    """json.Marshal's bytes for data already in Go's order and shapes (see _encode)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), check_circular=False)
    for char, escape in _HTML_ESCAPES.items():
        if char in text:
            text = text.replace(char, escape)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: Go decodes them as U+FFFD
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text).encode("utf-8")


def _encode(shape: Shape, value: object) -> object:
    """`value` decoded into a Go value of `shape` and re-encoded, as plain data in Go's order."""
    kind = shape[0]
    if kind == "struct":
        if value is _MISSING:
            value = {}
        elif not isinstance(value, dict):
            raise RevisionInputError(f"expected an object, got {_describe(value)}")
        out = {}
        for name, field_shape, omitempty, omitzero in table().struct(shape[1]).fields:
            field = value.get(name, _MISSING)
            if field is None:
                field = _MISSING  # the API server drops nulls
            if omitempty and _empty(field_shape, field):
                continue
            if omitzero and _zero(field_shape, field):
                continue
            try:
                out[name] = _encode(field_shape, field)
            except RevisionInputError as error:
                error.path.insert(0, name)
                raise
        return out
    if kind == "string":
        return "" if value is _MISSING else _string(value)
    if kind == "ptr":
        return None if value is _MISSING or value is None else _encode(shape[1], value)
    if kind == "list":
        if value is _MISSING or value is None:
            return None
        if not isinstance(value, list):
            raise RevisionInputError(f"expected a list, got {_describe(value)}")
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_encode(shape[1], _MISSING if item is None else item))
            except RevisionInputError as error:
                error.path.insert(0, index)
                raise
        return items
    if kind == "map":
        if value is _MISSING or value is None:
            return None
        if not isinstance(value, dict):
            raise RevisionInputError(f"expected a map, got {_describe(value)}")
        out = {}
        for key in sorted(value):
            try:
                out[_string(key)] = _encode(shape[1], _MISSING if value[key] is None else value[key])
            except RevisionInputError as error:
                error.path.insert(0, key)
                raise
        return out
    if kind == "int" or kind == "uint":
        return 0 if value is _MISSING else _integer(value, kind)
    if kind == "bool":
        if value is _MISSING:
            return False
        if not isinstance(value, bool):
            raise RevisionInputError(f"expected a boolean, got {_describe(value)}")
        return value
    if kind == "quantity":
        if value is _MISSING:
            return "0"
        try:
            return quantity.canonical(value)
        except quantity.QuantityError as error:
            raise RevisionInputError(str(error)) from None
    if kind == "intorstring":
        if value is _MISSING:
            return 0
        if isinstance(value, str):
            return value
        return _integer(value, "int")
    if kind == "time":
        return None if value is _MISSING else _time(value)
    raise RevisionInputError(f"unsupported shape {shape!r}")


def _empty(shape: Shape, value: object) -> bool:
    """omitempty: false, 0, "", nil pointer, empty slice or map. Never a struct."""
    if value is _MISSING:
        return shape[0] not in ("struct", "quantity", "intorstring", "time")
    kind = shape[0]
    if kind in ("list", "map", "string"):
        return len(value) == 0 if isinstance(value, (list, dict, str)) else False
    if kind in ("int", "uint"):
        return value == 0 and not isinstance(value, bool)
    if kind == "bool":
        return value is False
    return False


def _zero(shape: Shape, value: object) -> bool:
    """omitzero: the zero value (nil, not empty, for slices and maps; IsZero where Go has one)."""
    if value is _MISSING:
        return True
    kind = shape[0]
    if kind in ("ptr", "list", "map"):
        return False
    if kind == "struct":
        return isinstance(value, dict) and all(
            _zero(field_shape, value.get(name, _MISSING)) for name, field_shape, _, _ in table().struct(shape[1]).fields)
    if kind == "quantity":
        try:
            return quantity.canonical(value) == "0"
        except quantity.QuantityError:
            return False
    if kind == "time":
        return _time(value) is None
    if kind == "intorstring":
        return value == 0 and not isinstance(value, bool)
    return _empty(shape, value)


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise RevisionInputError(f"expected a string, got {_describe(value)}")
    return value


def _integer(value: object, kind: str) -> int:
    """A JSON number into an integer field: 2 and 2.0 are 2 (kubectl writes 2.0 as 2)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RevisionInputError(f"expected an integer, got {_describe(value)}")
    if not _INT64[0] <= value <= _INT64[1] or (kind == "uint" and value < 0):
        raise RevisionInputError(f"integer {value} is out of range")
    return value


def _time(value: object) -> str | None:
    """metav1.Time: RFC 3339 in, whole seconds in UTC out; the zero time is null."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise RevisionInputError(f"expected an RFC 3339 time, got {_describe(value)}")
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise RevisionInputError(f"{value!r} is not an RFC 3339 time") from None
    if parsed.tzinfo is None or "T" not in value.upper():
        raise RevisionInputError(f"{value!r} is not an RFC 3339 time")
    utc = parsed.astimezone(timezone.utc)
    if utc.replace(microsecond=0) == datetime(1, 1, 1, tzinfo=timezone.utc):
        return None
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
