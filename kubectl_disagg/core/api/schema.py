"""The shape of a DisaggregatedSet document: field names and types, checked structurally.

The DisaggregatedSet's own fields are spelled out here, so a typo such as `replcas` is refused
with its path instead of being silently pruned; everything under `leaderWorkerTemplate` (pod
templates, containers, volumes, claim templates) is checked against the Kubernetes Go types
themselves, to any depth, by `typeschema`.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

from kubectl_disagg.core.api import typeschema
from kubectl_disagg.manifests.source import FieldPath, JsonObject, dotted

@dataclass(frozen=True)
class Scalar:
    kind: str  # "string" | "integer" | "boolean" | "int-or-string" | "any"
    enum: tuple[str, ...] = ()  # allowed strings


@dataclass(frozen=True)
class MapOf:
    value: object  # string keys, every value of schema `value`


@dataclass(frozen=True)
class ListOf:
    item: object


@dataclass(frozen=True)
class Obj:
    fields: JsonObject  # known field name → schema; any other field is refused
    required: tuple[str, ...] = ()  # fields that must be set (null is unset), as the CRD's `required`


@dataclass(frozen=True)
class Generated:
    struct: str  # a Go struct of the generated type table (typeschema)


STRING = Scalar("string")
INTEGER = Scalar("integer")
INT_OR_STRING = Scalar("int-or-string")
ANY = Scalar("any")
STRING_MAP = MapOf(STRING)


def enum(*values: str) -> Scalar:
    return Scalar("string", tuple(values))


TEMPLATE_METADATA = Obj({
    "labels": STRING_MAP,
    "annotations": STRING_MAP,
    "name": STRING,
    "namespace": STRING,
    "finalizers": ListOf(STRING),
})

LWS_SPEC = Obj({
    "replicas": INTEGER,
    "startupPolicy": enum("LeaderCreated", "LeaderReady"),
    "rolloutStrategy": Obj({
        "type": enum("RollingUpdate"),  # absent means RollingUpdate; "" is refused as the CRD enum does
        "rollingUpdateConfiguration": Obj({
            "maxSurge": INT_OR_STRING,
            "maxUnavailable": INT_OR_STRING,
            "partition": INTEGER,
        }),
    }),
    "networkConfig": Obj({"subdomainPolicy": enum("Shared", "UniquePerReplica")}, required=("subdomainPolicy",)),
    "groupIdentity": enum("Ordinal", "Hash"),  # lws#987: how the LWS names its groups; absent is Ordinal
    # Pod templates and claim templates: the Kubernetes types themselves, generated from Go.
    "leaderWorkerTemplate": Generated(typeschema.LEADER_WORKER_TEMPLATE),
})

ROLE = Obj({
    "name": STRING,
    "metadata": TEMPLATE_METADATA,
    "scaling": Obj({"mode": enum("Static", "External")}),
    "spec": LWS_SPEC,
})

OBJECT_META = Obj({
    "name": STRING,
    "namespace": STRING,
    "labels": STRING_MAP,
    "annotations": STRING_MAP,
    "generateName": STRING,
    "finalizers": ListOf(STRING),
    "uid": STRING,
    "resourceVersion": STRING,
    "generation": INTEGER,
    "creationTimestamp": ANY,
    "deletionTimestamp": ANY,
    "deletionGracePeriodSeconds": INTEGER,
    "ownerReferences": ListOf(ANY),
    "managedFields": ListOf(ANY),
    "selfLink": STRING,
})

DISAGGREGATED_SET = Obj({
    "apiVersion": STRING,
    "kind": STRING,
    "metadata": OBJECT_META,
    "spec": Obj({
        "slices": INTEGER,
        "placementPolicy": Obj({
            "type": enum("None", "ExclusiveSlice", "ExclusiveTopology"),
            "topology": STRING,
        }),
        "roles": ListOf(ROLE),
    }),
    "status": ANY,
})


def _type_error(kind: str, value: object, path: FieldPath) -> str | None:
    if kind == "any":
        return None
    if kind in ("string", "integer", "boolean"):
        got = typeschema.json_type(value)
        if got == kind:
            return None
        # The CRD's schema check, in the API server's words (`replicas: 1:0` is a string to kubectl).
        return typeschema.ShapeMessage(f'Invalid value: "{got}": {dotted(path)} in body must be of type {kind}: '
                                       f'"{got}"')
    if kind == "string":
        ok = isinstance(value, str)
    elif kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "boolean":
        ok = isinstance(value, bool)
    else:  # int-or-string
        ok = isinstance(value, (int, str)) and not isinstance(value, bool)
    if ok:
        return None
    return typeschema.wrong_type(value, f"{'an ' if kind[0] in 'aeiou' else 'a '}{kind}")




Report = Callable[[FieldPath, str], None]


UNKNOWN_FIELD = "unknown field"


def check(value: object, schema: object, path: FieldPath, report: Report) -> None:
    """Walk `value` against `schema`, calling report(path, message) for each mismatch.

    Null means "unset", as the API server reads it, except as an item of a list of objects.
    """
    if value is None:
        return
    if isinstance(schema, Scalar):
        message = _type_error(schema.kind, value, path)
        if message:
            report(path, message)
        elif schema.enum and value not in schema.enum:
            supported = ", ".join(f'"{v}"' for v in schema.enum)
            report(path, f'Unsupported value: "{value}": supported values: {supported}')
        return
    if isinstance(schema, Generated):
        typeschema.check(value, schema.struct, path, report)
        return
    if isinstance(schema, Obj):
        if not isinstance(value, dict):
            report(path, typeschema.wrong_type(value, "an object"))
            return
        for key, item in value.items():
            sub = schema.fields.get(key)
            if sub is None:
                report(path + (key,), UNKNOWN_FIELD)
            else:
                check(item, sub, path + (key,), report)
        for key in schema.required:
            if value.get(key) is None:
                report(path + (key,), "Required value")
    elif isinstance(schema, MapOf):
        if not isinstance(value, dict):
            report(path, typeschema.wrong_type(value, "an object"))
            return
        for key, item in value.items():
            check(item, schema.value, path + (key,), report)
    elif isinstance(schema, ListOf):
        if not isinstance(value, list):
            report(path, typeschema.wrong_type(value, "an array"))
            return
        for index, item in enumerate(value):
            if item is None and isinstance(schema.item, (Obj, MapOf, Generated)):
                report(path + (index,), typeschema.wrong_type(None, "an object"))
            elif item is None and isinstance(schema.item, Scalar) and schema.item.kind != "any":
                report(path + (index,), typeschema.wrong_type(None, f"a {schema.item.kind}"))
            else:
                check(item, schema.item, path + (index,), report)
