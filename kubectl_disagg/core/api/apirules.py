"""Rules the API server applies beyond types: names, labels, annotations, quantities, ports.

The same rules as k8s.io/apimachinery's validation and the pod validation the StatefulSets of
an LWS go through (k8s.io/kubernetes pkg/apis/core/validation and pkg/apis/apps/validation,
v1.36: each rule names the function it follows), so a set we accept renders objects the API
server accepts, and templates the LWS controller can make StatefulSets of. Each `STRUCT_RULES`
entry runs after `typeschema` has checked that struct's field types.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation, localcontext
from typing import TypeGuard

from kubectl_disagg.manifests.source import FieldPath, JsonObject

Report = Callable[[FieldPath, str], None]

DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
# The pattern of the Quantity fields in every CRD schema (resource.Quantity's grammar).
_QUANTITY = re.compile(r"[+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                       r"([eE][+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?")
# Compiled on first use (re caches them): a set without labels, annotations or named ports
# needs none of these.
_QUALIFIED_NAME_PART = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_IANA_SVC_NAME = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
QUANTITY_MESSAGE = ("must be a quantity: a number with an optional suffix "
                    "(Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent), e.g. 500m, 1.5Gi, 8")
MAX_LABEL_LENGTH = 63
MAX_SUBDOMAIN_LENGTH = 253
MAX_ANNOTATIONS_BYTES = 256 * 1024


NAMESPACE_MESSAGE = (f"must be a lowercase RFC 1123 label (letters, digits and '-', starting and ending with a "
                     f"letter or digit) of at most {MAX_LABEL_LENGTH} characters")


def is_namespace_name(name: str) -> bool:
    return len(name) <= MAX_LABEL_LENGTH and bool(DNS1123_LABEL.fullmatch(name))


def is_quantity(text: str) -> bool:
    return bool(_QUANTITY.fullmatch(text))


_SUFFIXES: dict[str, int | Decimal] = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
             "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": 10**3, "M": 10**6, "G": 10**9,
             "T": 10**12, "P": 10**15, "E": 10**18}


def _quantity_value(text: object) -> Decimal | None:
    """The exact value of a quantity (None: not one), to compare signs and sizes and to tell
    whole numbers."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return Decimal(str(text))
    if not isinstance(text, str) or not is_quantity(text) or len(text) > 64:  # longer: the type check's
        return None
    number: str = text
    factor: int | Decimal = 1
    for suffix in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"):
        if text.endswith(suffix):
            number, factor = text[: -len(suffix)], _SUFFIXES[suffix]
            break
    try:
        with localcontext() as context:
            context.prec = 100
            return Decimal(number) * factor
    except (InvalidOperation, ValueError):
        return None


def qualified_name_error(key: str) -> str | None:
    """Why `key` is not a Kubernetes qualified name (`[prefix/]name`), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return "prefix part must be non-empty"
    if prefix and (len(prefix) > MAX_SUBDOMAIN_LENGTH or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return "prefix part must be a lowercase RFC 1123 subdomain (e.g. example.com)"
    if not name:
        return "name part must be non-empty"
    if len(name) > MAX_LABEL_LENGTH:
        return f"name part must be no more than {MAX_LABEL_LENGTH} characters"
    if not re.fullmatch(_QUALIFIED_NAME_PART, name):
        return ("name part must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character")
    return None


def label_value_error(value: str) -> str | None:
    if len(value) > MAX_LABEL_LENGTH:
        return f"must be no more than {MAX_LABEL_LENGTH} characters"
    if not re.fullmatch(_LABEL_VALUE, value):
        return ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character")
    return None


def check_labels(labels: object, path: FieldPath, report: Report) -> None:
    if not isinstance(labels, dict):
        return  # the type check reports it
    for key, value in labels.items():
        error = qualified_name_error(key)
        if error:
            report(path + (key,), f'Invalid value: "{key}": {error}')
        if isinstance(value, str):
            error = label_value_error(value)
            if error:
                report(path + (key,), f'Invalid value: "{value}": {error}')


def check_annotations(annotations: object, path: FieldPath, report: Report) -> None:
    if not isinstance(annotations, dict):
        return
    total = 0
    for key, value in annotations.items():
        error = qualified_name_error(key.lower())
        if error:
            report(path + (key,), f'Invalid value: "{key}": {error}')
        total += len(key.encode()) + (len(value.encode()) if isinstance(value, str) else 0)
    if total > MAX_ANNOTATIONS_BYTES:
        report(path, f"Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes")


def check_object_meta(meta: JsonObject, path: FieldPath, report: Report) -> None:
    check_labels(meta.get("labels"), path + ("labels",), report)
    check_annotations(meta.get("annotations"), path + ("annotations",), report)


def _check_label_selector(selector: JsonObject, path: FieldPath, report: Report) -> None:
    check_labels(selector.get("matchLabels"), path + ("matchLabels",), report)
    for index, requirement in enumerate(selector.get("matchExpressions") or ()):
        key = requirement.get("key") if isinstance(requirement, dict) else None
        if isinstance(key, str):
            error = qualified_name_error(key)
            if error:
                report(path + ("matchExpressions", index, "key"), f'Invalid value: "{key}": {error}')


def _check_port(port: JsonObject, path: FieldPath, report: Report) -> None:
    number = port.get("containerPort")
    if _is_int(number) and not 1 <= number <= 65535:
        report(path + ("containerPort",), f"Invalid value: {number}: must be between 1 and 65535, inclusive")
    host = port.get("hostPort")
    if _is_int(host) and host != 0 and not 1 <= host <= 65535:
        report(path + ("hostPort",), f"Invalid value: {host}: must be between 1 and 65535, inclusive")
    name = port.get("name")
    if isinstance(name, str) and name:
        error = iana_service_name_error(name)
        if error:
            report(path + ("name",), f'Invalid value: "{name}": {error}')


def _check_action_port(action: JsonObject, path: FieldPath, report: Report) -> None:
    """A probe's or lifecycle handler's port: a number from 1 to 65535 or a named port (pod
    validation's ValidatePortNumOrName)."""
    port = action.get("port")
    if _is_int(port) and not 1 <= port <= 65535:
        report(path + ("port",), f"Invalid value: {port}: must be between 1 and 65535, inclusive")
    elif isinstance(port, str):
        error = iana_service_name_error(port) if port else "must be a port number or a port name"
        if error:
            report(path + ("port",), f'Invalid value: "{port}": {error}')


def iana_service_name_error(name: str) -> str | None:
    if len(name) > 15:
        return "must be no more than 15 characters"
    if not re.fullmatch(_IANA_SVC_NAME, name) or "--" in name:
        return "must contain only lowercase alphanumeric characters or '-', start and end with one, and no '--'"
    if not any(c.isalpha() for c in name):
        return "must contain at least one letter (a-z)"
    return None


def _check_container(container: JsonObject, path: FieldPath, report: Report) -> None:
    name = container.get("name")
    if isinstance(name, str) and name and (len(name) > MAX_LABEL_LENGTH or not DNS1123_LABEL.fullmatch(name)):
        report(path + ("name",), f'Invalid value: "{name}": must be a lowercase RFC 1123 label')
    if not container.get("image"):  # validateContainerCommon
        report(path + ("image",), "Required value: a container needs an image")
    for key in ("livenessProbe", "startupProbe"):  # validateLivenessProbe, validateStartupProbe
        threshold = (container.get(key) or {}).get("successThreshold") if isinstance(container.get(key), dict) else None
        if _is_int(threshold) and threshold not in (0, 1):  # 0 is defaulted to 1
            report(path + (key, "successThreshold"), f"Invalid value: {threshold}: must be 1")
    for index, variable in enumerate(container.get("env") or ()):  # ValidateEnv, IsRelaxedEnvVarName
        env_name = variable.get("name") if isinstance(variable, dict) else None
        if isinstance(env_name, str) and env_name and not all(" " <= c <= "~" and c != "=" for c in env_name):
            report(path + ("env", index, "name"), f'Invalid value: "{env_name}": a valid environment variable name '
                                                  "must consist only of printable ASCII characters other than '='")
    seen: dict[str, int] = {}
    for index, port in enumerate(container.get("ports") or ()):
        port_name = port.get("name") if isinstance(port, dict) else None
        if isinstance(port_name, str) and port_name:
            if port_name in seen:
                report(path + ("ports", index, "name"), f'Duplicate value: "{port_name}"')
            seen[port_name] = index


def _check_resources(resources: JsonObject, path: FieldPath, report: Report) -> None:
    """A container's requests and limits (validateResourceRequirements)."""
    values: dict[str, dict[str, Decimal]] = {}
    for kind in ("limits", "requests"):
        for name, quantity in (resources.get(kind) or {}).items():
            error = container_resource_name_error(name)
            if error:
                report(path + (kind, name), f'Invalid value: "{name}": {error}')
            number = _quantity_value(quantity)
            if number is None:
                continue  # malformed: the type check reports it
            if number < 0:
                report(path + (kind, name), f"Invalid value: {quantity!r}: must be greater than or equal to 0")
            elif _is_extended_resource(name) and (number * 1000).to_integral_value(rounding="ROUND_CEILING") % 1000:
                # ValidateResourceQuantityValue: IsIntegerResourceName, judged on MilliValue()
                report(path + (kind, name), f"Invalid value: {quantity!r}: must be an integer")
            values.setdefault(kind, {})[name] = number
    limits = resources.get("limits") or {}
    named = {*limits, *(resources.get("requests") or {})}
    if any(name.startswith("hugepages-") for name in named) and not named & {"cpu", "memory"}:
        report(path, "Forbidden: HugePages require cpu or memory")
    for name, request in values.get("requests", {}).items():
        limit = values.get("limits", {}).get(name)
        overcommit = _is_native_resource(name) and not name.startswith("hugepages-")  # IsOvercommitAllowed
        if name not in limits and not overcommit:
            report(path + ("limits",), f"Required value: Limit must be set for non overcommitable resources "
                                       f"({name} is requested)")
        elif limit is not None and request != limit and not overcommit:
            report(path + ("requests", name), f"Invalid value: {resources['requests'][name]!r}: "
                                              f"must be equal to {name} limit of {limits[name]}")
        elif limit is not None and request > limit:
            report(path + ("requests", name), f"Invalid value: {resources['requests'][name]!r}: "
                                              f"must be less than or equal to {name} limit of {limits[name]}")


def container_resource_name_error(name: str) -> str | None:
    """validateContainerResourceName: a qualified name; without a domain one of the standard
    container resources (cpu, memory, ephemeral-storage, hugepages-*); with one, a native
    (kubernetes.io/) or extended resource name."""
    error = qualified_name_error(name)
    if error:
        return error
    if "/" not in name:
        if name not in ("cpu", "memory", "ephemeral-storage") and not name.startswith("hugepages-"):
            return "must be a standard resource for containers (cpu, memory, ephemeral-storage, hugepages-<size>)"
    elif not _is_native_resource(name) and not _is_extended_resource(name):
        return "doesn't follow extended resource name standard"
    return None


def _is_native_resource(name: str) -> bool:
    """helper.IsNativeResource: no domain, or the kubernetes.io one."""
    return "/" not in name or "kubernetes.io/" in name


def _is_extended_resource(name: str) -> bool:
    """helper.IsExtendedResourceName: another domain's, and a qualified name as quota would spell it."""
    return not _is_native_resource(name) and not name.startswith("requests.") and \
        qualified_name_error(f"requests.{name}") is None


def _check_handler(handler: JsonObject, path: FieldPath, report: Report) -> None:
    """A probe's or lifecycle hook's action: exactly one (validateProbe, validateLifecycle ->
    validateHandler)."""
    given = [key for key in ("exec", "httpGet", "tcpSocket", "grpc", "sleep") if handler.get(key) is not None]
    if not given:
        report(path, "Required value: must specify a handler type (exec, httpGet, tcpSocket, grpc or sleep)")
    for key in given[1:]:
        report(path + (key,), "Forbidden: may not specify more than 1 handler type")


def _check_probe(probe: JsonObject, path: FieldPath, report: Report) -> None:
    """validateProbe: one handler, counts not negative, a grace period above 0."""
    _check_handler(probe, path, report)
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        value = probe.get(key)
        if _is_int(value) and value < 0:
            report(path + (key,), f"Invalid value: {value}: must be greater than or equal to 0")
    grace = probe.get("terminationGracePeriodSeconds")
    if _is_int(grace) and grace <= 0:
        report(path + ("terminationGracePeriodSeconds",), f"Invalid value: {grace}: must be greater than 0")


def _check_exec(action: JsonObject, path: FieldPath, report: Report) -> None:
    if not action.get("command"):  # validateExecAction
        report(path + ("command",), "Required value")


def _check_env_var(variable: JsonObject, path: FieldPath, report: Report) -> None:
    if variable.get("value") and variable.get("valueFrom") is not None:  # validateEnvVarValueFrom
        report(path + ("valueFrom",), "Invalid value: may not be specified when `value` is not empty")


def _check_toleration(toleration: JsonObject, path: FieldPath, report: Report) -> None:
    if toleration.get("operator") == "Exists" and toleration.get("value"):  # ValidateTolerations
        report(path + ("operator",), f'Invalid value: "{toleration["value"]}": value must be empty when '
                                     "`operator` is 'Exists'")


def _check_node_selector(selector: JsonObject, path: FieldPath, report: Report) -> None:
    if not selector.get("nodeSelectorTerms"):  # ValidateNodeSelector
        report(path + ("nodeSelectorTerms",), "Required value: must have at least one node selector term")


def _check_spread(constraint: JsonObject, path: FieldPath, report: Report) -> None:
    skew = constraint.get("maxSkew")
    if _is_int(skew) and skew <= 0:  # validateTopologySpreadConstraints
        report(path + ("maxSkew",), f"Invalid value: {skew}: must be greater than zero")


def _check_security_context(context: JsonObject, path: FieldPath, report: Report) -> None:
    for key in ("runAsUser", "runAsGroup"):  # ValidateNonnegativeField on user and group IDs
        value = context.get(key)
        if _is_int(value) and value < 0:
            report(path + (key,), f"Invalid value: {value}: must be between 0 and 2147483647, inclusive")


def _check_claim_template(claim: JsonObject, path: FieldPath, report: Report) -> None:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    if "storage" not in requests:  # ValidatePersistentVolumeClaimSpec: a claim asks for storage
        report(path + ("spec", "resources", "requests", "storage"), "Required value: a claim template needs "
                                                                     "resources.requests.storage")


def _check_affinity_term(term: JsonObject, path: FieldPath, report: Report) -> None:
    """validatePodAffinityTerm: the topologyKey is a label key."""
    key = term.get("topologyKey")
    if isinstance(key, str):
        error = qualified_name_error(key) if key else "can not be empty"
        if error:
            report(path + ("topologyKey",), f'Invalid value: "{key}": {error}')


def _check_pod_spec(spec: JsonObject, path: FieldPath, report: Report) -> None:
    # Duplicates within one list are the list-map check's (typeschema); pod validation also
    # wants container names unique across the three lists.
    seen: dict[str, str] = {}
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for index, container in enumerate(spec.get(kind) or ()):
            name = container.get("name") if isinstance(container, dict) else None
            if isinstance(name, str) and name:
                if seen.get(name, kind) != kind:
                    report(path + (kind, index, "name"), f'Duplicate value: "{name}"')
                seen.setdefault(name, kind)
    for index, volume in enumerate(spec.get("volumes") or ()):
        name = volume.get("name") if isinstance(volume, dict) else None
        if isinstance(name, str) and name and (len(name) > MAX_LABEL_LENGTH or not DNS1123_LABEL.fullmatch(name)):
            report(path + ("volumes", index, "name"), f'Invalid value: "{name}": must be a lowercase RFC 1123 label')
    check_labels(spec.get("nodeSelector"), path + ("nodeSelector",), report)
    policy = spec.get("restartPolicy")
    if policy not in (None, "", "Always"):  # "" is defaulted to Always first  # apps ValidateStatefulSetSpec: a StatefulSet's pods always restart
        report(path + ("restartPolicy",), f'Unsupported value: "{policy}": supported values: "Always" '
                                          "(the LWS controller runs pods in StatefulSets)")
    if spec.get("activeDeadlineSeconds") is not None:  # apps ValidatePodTemplateSpecForStatefulSet
        report(path + ("activeDeadlineSeconds",), "Forbidden: activeDeadlineSeconds in StatefulSet is not Supported")
    for key in ("serviceAccountName", "nodeName", "priorityClassName"):  # ValidatePodSpec: DNS subdomains
        value = spec.get(key)
        if isinstance(value, str) and value and (len(value) > MAX_SUBDOMAIN_LENGTH or
                                                 not DNS1123_SUBDOMAIN.fullmatch(value)):
            report(path + (key,), f'Invalid value: "{value}": must be a lowercase RFC 1123 subdomain')
    if spec.get("dnsPolicy") == "None" and not spec.get("dnsConfig"):  # validateDNSPolicy
        report(path + ("dnsConfig",), "Required value: must provide `dnsConfig` when `dnsPolicy` is None")
    volumes = {volume.get("name") for volume in spec.get("volumes") or () if isinstance(volume, dict)}
    for kind in ("initContainers", "containers"):  # ValidateVolumeMounts: a mount names a volume
        for index, container in enumerate(spec.get(kind) or ()):
            for position, mount in enumerate((container.get("volumeMounts") or ()) if isinstance(container, dict)
                                             else ()):
                name = mount.get("name") if isinstance(mount, dict) else None
                if isinstance(name, str) and name not in volumes:
                    report(path + (kind, index, "volumeMounts", position, "name"), f'Not found: "{name}"')


def _check_sub_group_policy(policy: JsonObject, path: FieldPath, report: Report) -> None:
    """The LWS CRD's `Minimum=1` on subGroupSize (0 would divide a group into nothing)."""
    size = policy.get("subGroupSize")
    if _is_int(size) and size < 1:
        report(path + ("subGroupSize",), f"Invalid value: {size}: should be greater than or equal to 1")


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


STRUCT_RULES: dict[str, Callable[[JsonObject, FieldPath, Report], None]] = {
    "meta/v1.ObjectMeta": check_object_meta,
    "meta/v1.LabelSelector": _check_label_selector,
    "core/v1.ContainerPort": _check_port,
    "core/v1.Container": _check_container,
    "core/v1.ResourceRequirements": _check_resources,
    "core/v1.PodSpec": _check_pod_spec,
    "core/v1.HTTPGetAction": _check_action_port,
    "core/v1.TCPSocketAction": _check_action_port,
    "core/v1.GRPCAction": _check_action_port,
    "core/v1.Probe": _check_probe,
    "core/v1.LifecycleHandler": _check_handler,
    "core/v1.ExecAction": _check_exec,
    "core/v1.EnvVar": _check_env_var,
    "core/v1.Toleration": _check_toleration,
    "core/v1.NodeSelector": _check_node_selector,
    "core/v1.TopologySpreadConstraint": _check_spread,
    "core/v1.SecurityContext": _check_security_context,
    "core/v1.PodSecurityContext": _check_security_context,
    "core/v1.PersistentVolumeClaim": _check_claim_template,
    "core/v1.PodAffinityTerm": _check_affinity_term,
    "lws.SubGroupPolicy": _check_sub_group_policy,
}
