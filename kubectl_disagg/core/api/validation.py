"""Every validation rule of design §1, reported all at once with file, line and field path."""

from __future__ import annotations

from kubectl_disagg.core.api import apirules, naming, schema
from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests.source import Document, FieldPath, JsonObject, dotted
from kubectl_disagg.core.api.model import PLACEMENT_NONE, SCALING_EXTERNAL
from kubectl_disagg.core.api.typeschema import ShapeMessage
from kubectl_disagg.core.api.rollout_config import (
    API_DEFAULT_MAX_SURGE, API_DEFAULT_MAX_UNAVAILABLE, IntOrPercentError, scale_int_or_percent, unless_null,
)

MIN_ROLES, MAX_ROLES = 2, 10
MIN_SLICES, MAX_SLICES = 1, 100
MAX_REPLICAS = 1_000_000


class _Collector:
    """Turns (path, message) pairs into Problems carrying the file and line of the value."""

    def __init__(self, document: Document):
        self.document = document
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []

    def _problem(self, path: FieldPath, message: str) -> Problem:
        return Problem(self.document.file, self.document.line(path), dotted(path), message)

    def error(self, path: FieldPath, message: str) -> None:
        self.errors.append(self._problem(path, message))

    def warn(self, path: FieldPath, message: str) -> None:
        self.warnings.append(self._problem(path, message))


def validate_document(document: Document) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) for one DisaggregatedSet document; no errors means it can be built."""
    out = _Collector(document)
    data = document.data
    schema.check(data, schema.DISAGGREGATED_SET, (), out.error)
    if any(isinstance(p.message, ShapeMessage) for p in out.errors):
        # Semantic rules assume the right shapes: with a wrong type, report the types first.
        # Other problems (unknown fields, bad labels, quantities) change no shape, so every
        # other rule still runs alongside them.
        return _in_file_order(out.errors), out.warnings
    _check_type_meta(data, out)
    _check_metadata(data.get("metadata"), out)
    spec = data.get("spec")
    if spec is None:
        out.error(("spec",), "Required value")
        return out.errors, out.warnings
    _check_spec(data, spec, out)
    return _in_file_order(out.errors), out.warnings


def _in_file_order(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda problem: problem.line)  # stable: same line keeps rule order


def _check_type_meta(data: JsonObject, out: _Collector) -> None:
    if data.get("apiVersion") != naming.SET_API_VERSION:
        out.error(("apiVersion",),
                  f'Unsupported value: "{data.get("apiVersion")}": supported values: "{naming.SET_API_VERSION}"')
    if data.get("kind") != naming.SET_KIND:
        out.error(("kind",), f'Unsupported value: "{data.get("kind")}": supported values: "{naming.SET_KIND}"')


def _check_metadata(given: JsonObject | None, out: _Collector) -> None:
    metadata = given or {}
    apirules.check_object_meta(metadata, ("metadata",), out.error)
    name = metadata.get("name")
    if not name:
        out.error(("metadata", "name"), "Required value: name is required")
        return
    if len(name) > 253 or not apirules.DNS1123_SUBDOMAIN.fullmatch(name):
        out.error(("metadata", "name"), f'Invalid value: "{name}": must be a lowercase RFC 1123 subdomain')
    elif not apirules.DNS1035_LABEL.fullmatch(name):
        out.error(("metadata", "name"), f'Invalid value: "{name}": must start with a letter and contain no dots, '
                                        "because it prefixes the generated Service names (RFC 1035 labels)")
    services = (metadata.get("annotations") or {}).get(naming.REVISION_SERVICES_ANNOTATION)
    if services is not None and services not in ("true", "false"):
        out.error(("metadata", "annotations", naming.REVISION_SERVICES_ANNOTATION),
                  f'Unsupported value: "{services}": supported values: "true", "false"')
    namespace = metadata.get("namespace")
    if namespace is not None and not apirules.DNS1123_LABEL.fullmatch(namespace or "-"):
        out.error(("metadata", "namespace"), f'Invalid value: "{namespace}": must be a lowercase RFC 1123 label')
    elif namespace is not None and not apirules.is_namespace_name(namespace):
        out.error(("metadata", "namespace"), f'Invalid value: "{namespace}": must be no more than '
                                             f"{apirules.MAX_LABEL_LENGTH} characters (an RFC 1123 label)")


def _check_spec(data: JsonObject, spec: JsonObject, out: _Collector) -> None:
    slices = spec.get("slices")
    if slices is not None and not MIN_SLICES <= slices <= MAX_SLICES:
        out.error(("spec", "slices"), f"Invalid value: {slices}: must be between {MIN_SLICES} and {MAX_SLICES}")
    _check_placement(spec, out)
    roles = spec.get("roles")
    if roles is None:
        out.error(("spec", "roles"), "Required value")
        return
    if not MIN_ROLES <= len(roles) <= MAX_ROLES:
        out.error(("spec", "roles"), f"Invalid value: {len(roles)} roles: must have between {MIN_ROLES} and {MAX_ROLES}")
    seen: dict[str, int] = {}
    set_name = (data.get("metadata") or {}).get("name") or ""
    for index, role in enumerate(roles):
        path = ("spec", "roles", index)
        if not isinstance(role, dict):
            out.error(path, "Invalid value: must be an object")
            continue
        name = _check_role_name(role, path, seen, index, out)
        if name and set_name:
            _check_name_length(set_name, slices or 1, name, path, out)
        _check_role_spec(role, path, spec, out)
    _check_all_or_nothing(roles, out)


def _check_role_name(role: JsonObject, path: FieldPath, seen: dict[str, int], index: int,
                     out: _Collector) -> str | None:
    name = role.get("name")
    if not name:
        out.error(path + ("name",), "Required value")
        return None
    if len(name) > 63 or not apirules.DNS1123_LABEL.fullmatch(name):
        out.error(path + ("name",), f'Invalid value: "{name}": must be a lowercase RFC 1123 label '
                                    "(a-z, 0-9 and '-', starting and ending alphanumeric, at most 63 characters)")
        return None
    if name in seen:
        out.error(path + ("name",), f'Duplicate value: "{name}" (also spec.roles[{seen[name]}])')
        return None
    seen[name] = index
    return str(name)  # a string: the label check above matched it


def _check_name_length(set_name: str, slices: int, role: str, path: FieldPath, out: _Collector) -> None:
    length = naming.longest_name_length(set_name, slices, role)
    if length > naming.MAX_NAME_LENGTH:
        example = naming.service_name(set_name, max(slices - 1, 0), "x" * naming.REVISION_LENGTH, role)
        out.error(path + ("name",), f'Invalid value: "{role}": generated Service name "{example}" would be '
                                    f"{length} characters, more than {naming.MAX_NAME_LENGTH}; "
                                    "shorten metadata.name or the role name")


def _check_role_spec(role: JsonObject, path: FieldPath, set_spec: JsonObject, out: _Collector) -> None:
    # The role's metadata becomes each rendered LWS's metadata.
    apirules.check_object_meta(role.get("metadata") or {}, path + ("metadata",), out.error)
    spec = role.get("spec") or {}
    spec_path = path + ("spec",)
    template = spec.get("leaderWorkerTemplate") or {}
    if spec.get("leaderWorkerTemplate") and template.get("workerTemplate") is None:
        pass  # reported as a missing required field by the type check
    elif not template.get("workerTemplate"):
        missing = "workerTemplate" if spec.get("leaderWorkerTemplate") else "leaderWorkerTemplate"
        where = spec_path + (("leaderWorkerTemplate", "workerTemplate") if missing == "workerTemplate" else ("leaderWorkerTemplate",))
        out.error(where, "Required value: every role needs a worker pod template")
    replicas = spec.get("replicas")
    replicas = 1 if replicas is None else replicas
    if not 0 <= replicas <= MAX_REPLICAS:
        out.error(spec_path + ("replicas",), f"Invalid value: {replicas}: must be between 0 and {MAX_REPLICAS}")
    for key in ("workerTemplate", "leaderTemplate"):
        if template.get(key) or (key == "leaderTemplate" and template.get(key) == {}):
            # `leaderTemplate: {}` is a leader template all the same: the LWS controller makes the
            # leader StatefulSet of it, and a pod without containers is refused.
            _check_containers(template[key], spec_path + ("leaderWorkerTemplate", key), out)
    size = template.get("size")
    if size is not None and size < 1:
        out.error(spec_path + ("leaderWorkerTemplate", "size"), f"Invalid value: {size}: must be at least 1")
    _check_rollout_strategy(spec.get("rolloutStrategy") or {}, replicas, spec_path + ("rolloutStrategy",), out)
    _check_group_identity(spec, spec_path, out)
    _check_scaling(role, spec, path, set_spec, out)
    placement_type = (set_spec.get("placementPolicy") or {}).get("type") or PLACEMENT_NONE
    if placement_type != PLACEMENT_NONE:
        _check_exclusive_annotations(role, path, placement_type, out)


def _check_group_identity(spec: JsonObject, spec_path: FieldPath, out: _Collector) -> None:
    """groupIdentity Hash (lws#987) runs leaders as a Deployment: what needs ordinal leader names
    is refused, as the LWS admission webhook refuses it, before any LWS is written."""
    if spec.get("groupIdentity") != "Hash":
        return
    template = spec.get("leaderWorkerTemplate") or {}
    rolling = (spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {}
    clashes = (
        (template.get("subGroupPolicy") is not None, "subGroupPolicy"),
        (bool(template.get("volumeClaimTemplates")), "volumeClaimTemplates"),
        ((spec.get("networkConfig") or {}).get("subdomainPolicy") == "UniquePerReplica",
         "networkConfig.subdomainPolicy UniquePerReplica"),
        (rolling.get("partition") not in (None, 0), "rollingUpdateConfiguration.partition"),
    )
    for clash, what in clashes:
        if clash:
            out.error(spec_path + ("groupIdentity",), f"Invalid value: \"Hash\": {what} is not supported with "
                                                      "groupIdentity Hash (its leaders have no ordinal names)")


def _check_containers(pod_template: JsonObject, path: FieldPath, out: _Collector) -> None:
    """What the API server requires of a pod, checked here so a step never fails halfway."""
    containers = (pod_template.get("spec") or {}).get("containers")
    if not containers:
        out.error(path + ("spec", "containers"), "Required value: a pod needs at least one container")
        return
    for index, container in enumerate(containers):
        if container.get("name") == "":  # a missing name is reported by the type check
            out.error(path + ("spec", "containers", index, "name"), "Required value")


def _check_rollout_strategy(strategy: JsonObject, replicas: int, path: FieldPath, out: _Collector) -> None:
    if strategy.get("type") not in (None, "RollingUpdate"):
        return  # already reported by the schema's enum check
    rolling = strategy.get("rollingUpdateConfiguration")
    if rolling is None:
        return
    rolling_path = path + ("rollingUpdateConfiguration",)
    if rolling.get("partition") not in (None, 0):
        out.error(rolling_path + ("partition",), "Forbidden: DisaggregatedSet coordinates rollouts across roles; "
                                                 "partition must not be set")
    scaled = {}
    for key, default, round_up in (("maxSurge", API_DEFAULT_MAX_SURGE, True),
                                   ("maxUnavailable", API_DEFAULT_MAX_UNAVAILABLE, False)):
        value = unless_null(rolling.get(key), default)
        try:
            scaled[key] = scale_int_or_percent(value, replicas, round_up)
        except IntOrPercentError as err:
            out.error(rolling_path + (key,), f"Invalid value: {value!r}: {err}")
    if replicas > 0 and scaled.get("maxSurge") == 0 and scaled.get("maxUnavailable") == 0:
        out.error(rolling_path, f"Invalid value: maxSurge and maxUnavailable must not both be 0 "
                                f"(resolved against {replicas} replicas)")


def _check_scaling(role: JsonObject, spec: JsonObject, path: FieldPath, set_spec: JsonObject, out: _Collector) -> None:
    if (role.get("scaling") or {}).get("mode") != SCALING_EXTERNAL:
        return
    if (set_spec.get("slices") or 1) > 1:
        out.error(path + ("scaling", "mode"), "Forbidden: External scaling cannot be combined with slices > 1")
    if (spec.get("replicas") or 0) > 1:
        out.warn(path + ("spec", "replicas"), "ignored: an External role's replicas come from its "
                                              "DisaggregatedSetRoleScaler")


def _check_exclusive_annotations(role: JsonObject, path: FieldPath, placement_type: str, out: _Collector) -> None:
    template = ((role.get("spec") or {}).get("leaderWorkerTemplate")) or {}
    places = [(path + ("metadata", "annotations"), (role.get("metadata") or {}).get("annotations"))]
    for key in ("workerTemplate", "leaderTemplate"):
        pod_metadata = (template.get(key) or {}).get("metadata") or {}
        places.append((path + ("spec", "leaderWorkerTemplate", key, "metadata", "annotations"),
                       pod_metadata.get("annotations")))
    for where, present in places:
        for annotation in naming.EXCLUSIVE_TOPOLOGY_ANNOTATIONS:
            if annotation in (present or {}):
                out.error(where + (annotation,),
                          f"Forbidden: cannot be combined with spec.placementPolicy.type {placement_type}")


def _check_placement(spec: JsonObject, out: _Collector) -> None:
    placement = spec.get("placementPolicy")
    if not placement:
        return
    topology = placement.get("topology")
    if (placement.get("type") or PLACEMENT_NONE) != PLACEMENT_NONE and not topology:
        out.error(("spec", "placementPolicy", "topology"),
                  f"Required value: a node label key is required for type {placement['type']}")
    elif (placement.get("type") or PLACEMENT_NONE) != PLACEMENT_NONE and isinstance(topology, str):
        error = apirules.qualified_name_error(topology)  # it becomes the affinity terms' topologyKey
        if error:
            out.error(("spec", "placementPolicy", "topology"), f'Invalid value: "{topology}": must be a node '
                                                               f"label key, the pod affinity's topologyKey: {error}")


def _check_all_or_nothing(roles: list[object], out: _Collector) -> None:
    counted = [
        (role.get("name"), _replicas(role)) for role in roles
        if isinstance(role, dict) and (role.get("scaling") or {}).get("mode") != SCALING_EXTERNAL
    ]
    zero = [name for name, replicas in counted if replicas == 0]
    if zero and len(zero) != len(counted):
        detail = ", ".join(f"{name}={replicas}" for name, replicas in counted)
        out.error(("spec", "roles"), "Invalid value: replicas must be zero for all non-External roles or "
                                     f"non-zero for all of them ({detail})")


def _replicas(role: JsonObject) -> int:
    replicas = (role.get("spec") or {}).get("replicas")
    return 1 if replicas is None else replicas
