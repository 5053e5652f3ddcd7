"""The shape of a DisaggregatedSet document: field names and types, checked structurally.

This is the part of the API the tool reads or rewrites, spelled out so a typo such as
`replcas` or `workerTemplat` is refused with its path instead of being silently pruned.
Deep pod-spec internals (probes, volumes, affinity terms …) are typed as "any value":
the API server checks those, and they pass through render untouched.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable


# kind: "string" | "integer" | "boolean" | "int-or-string" | "any"; enum: allowed strings.
Scalar = namedtuple("Scalar", "kind enum", defaults=((),))
MapOf = namedtuple("MapOf", "value")  # string keys, every value of schema `value`
ListOf = namedtuple("ListOf", "item")
Obj = namedtuple("Obj", "fields")  # known field name → schema; any other field is refused


STRING = Scalar("string")
INTEGER = Scalar("integer")
BOOLEAN = Scalar("boolean")
INT_OR_STRING = Scalar("int-or-string")
ANY = Scalar("any")
STRING_MAP = MapOf(STRING)


def _any_fields(*names: str) -> dict:
    return {name: ANY for name in names}


def enum(*values: str) -> Scalar:
    return Scalar("string", tuple(values))


TEMPLATE_METADATA = Obj({
    "labels": STRING_MAP,
    "annotations": STRING_MAP,
    "name": STRING,
    "namespace": STRING,
    "finalizers": ListOf(STRING),
})

CONTAINER_PORT = Obj({
    "containerPort": INTEGER,
    "hostIP": STRING,
    "hostPort": INTEGER,
    "name": STRING,
    "protocol": enum("TCP", "UDP", "SCTP"),
})

CONTAINER = Obj({
    "name": STRING,
    "image": STRING,
    "command": ListOf(STRING),
    "args": ListOf(STRING),
    "workingDir": STRING,
    "ports": ListOf(CONTAINER_PORT),
    "imagePullPolicy": enum("Always", "IfNotPresent", "Never"),
    "stdin": BOOLEAN,
    "stdinOnce": BOOLEAN,
    "tty": BOOLEAN,
    "terminationMessagePath": STRING,
    "terminationMessagePolicy": enum("File", "FallbackToLogsOnError"),
    "restartPolicy": STRING,
    **_any_fields(
        "env", "envFrom", "lifecycle", "livenessProbe", "readinessProbe", "startupProbe",
        "resizePolicy", "resources", "restartPolicyRules", "securityContext",
        "volumeDevices", "volumeMounts", "targetContainerName",
    ),
})

# Only the shape render extends (placement terms are appended to these lists).
_POD_AFFINITY = Obj({
    "requiredDuringSchedulingIgnoredDuringExecution": ListOf(MapOf(ANY)),
    "preferredDuringSchedulingIgnoredDuringExecution": ListOf(MapOf(ANY)),
})
AFFINITY = Obj({"nodeAffinity": MapOf(ANY), "podAffinity": _POD_AFFINITY, "podAntiAffinity": _POD_AFFINITY})

POD_SPEC = Obj({
    "affinity": AFFINITY,
    "containers": ListOf(CONTAINER),
    "initContainers": ListOf(CONTAINER),
    "ephemeralContainers": ListOf(CONTAINER),
    "nodeSelector": STRING_MAP,
    "serviceAccountName": STRING,
    "serviceAccount": STRING,
    "schedulerName": STRING,
    "priorityClassName": STRING,
    "runtimeClassName": STRING,
    "hostname": STRING,
    "subdomain": STRING,
    "nodeName": STRING,
    "restartPolicy": enum("Always", "OnFailure", "Never"),
    "dnsPolicy": STRING,
    "hostNetwork": BOOLEAN,
    "hostPID": BOOLEAN,
    "hostIPC": BOOLEAN,
    "hostUsers": BOOLEAN,
    "shareProcessNamespace": BOOLEAN,
    "automountServiceAccountToken": BOOLEAN,
    "enableServiceLinks": BOOLEAN,
    "setHostnameAsFQDN": BOOLEAN,
    "terminationGracePeriodSeconds": INTEGER,
    "activeDeadlineSeconds": INTEGER,
    "priority": INTEGER,
    **_any_fields(
        "dnsConfig", "hostAliases", "hostnameOverride", "imagePullSecrets", "os",
        "overhead", "preemptionPolicy", "readinessGates", "resourceClaims", "resources",
        "schedulingGates", "schedulingGroup", "securityContext", "tolerations",
        "topologySpreadConstraints", "volumes",
    ),
})

POD_TEMPLATE = Obj({"metadata": TEMPLATE_METADATA, "spec": POD_SPEC})

LWS_SPEC = Obj({
    "replicas": INTEGER,
    "startupPolicy": enum("LeaderCreated", "LeaderReady"),
    "rolloutStrategy": Obj({
        "type": enum("RollingUpdate", ""),  # empty means the default
        "rollingUpdateConfiguration": Obj({
            "maxSurge": INT_OR_STRING,
            "maxUnavailable": INT_OR_STRING,
            "partition": INTEGER,
        }),
    }),
    "networkConfig": Obj({"subdomainPolicy": enum("Shared", "UniquePerReplica")}),
    "leaderWorkerTemplate": Obj({
        "size": INTEGER,
        "restartPolicy": enum("Default", "RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None"),
        "leaderTemplate": POD_TEMPLATE,
        "workerTemplate": POD_TEMPLATE,
        "subGroupPolicy": Obj({
            "subGroupPolicyType": enum("LeaderWorker", "LeaderExcluded"),
            "subGroupSize": INTEGER,
        }),
        "volumeClaimTemplates": ListOf(ANY),
        "persistentVolumeClaimRetentionPolicy": Obj({"whenDeleted": STRING, "whenScaled": STRING}),
    }),
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


def _type_error(kind: str, value: object) -> str | None:
    if kind == "any":
        return None
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
    return f"Invalid value: {_describe(value)}: must be {'an ' if kind[0] in 'aeiou' else 'a '}{kind}"


def _describe(value: object) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value).lower() if isinstance(value, bool) else repr(value)


Report = Callable[[tuple, str], None]


UNKNOWN_FIELD = "unknown field"


def check(value: object, schema: object, path: tuple, report: Report) -> None:
    """Walk `value` against `schema`, calling report(path, message) for each mismatch.

    Null means "unset", as the API server reads it, except as an item of a list of objects.
    """
    if value is None:
        return
    if isinstance(schema, Scalar):
        message = _type_error(schema.kind, value)
        if message:
            report(path, message)
        elif schema.enum and value not in schema.enum:
            supported = ", ".join(f'"{v}"' for v in schema.enum)
            report(path, f'Unsupported value: "{value}": supported values: {supported}')
        return
    if isinstance(schema, Obj):
        if not isinstance(value, dict):
            report(path, f"Invalid value: {_describe(value)}: must be an object")
            return
        for key, item in value.items():
            sub = schema.fields.get(key)
            if sub is None:
                report(path + (key,), UNKNOWN_FIELD)
            else:
                check(item, sub, path + (key,), report)
    elif isinstance(schema, MapOf):
        if not isinstance(value, dict):
            report(path, f"Invalid value: {_describe(value)}: must be an object")
            return
        for key, item in value.items():
            check(item, schema.value, path + (key,), report)
    elif isinstance(schema, ListOf):
        if not isinstance(value, list):
            report(path, f"Invalid value: {_describe(value)}: must be an array")
            return
        for index, item in enumerate(value):
            if item is None and isinstance(schema.item, (Obj, MapOf)):
                report(path + (index,), "Invalid value: null: must be an object")
            else:
                check(item, schema.item, path + (index,), report)
