"""The Argo CD config management plugin contract, as pure functions.

Argo CD's sidecar runs `kubectl-disagg cmp generate` in the application's directory with its
parameters in the environment. Everything here works on plain data handed in by the shell
(`sidecar.py`): the environment as a mapping and the directory as read by
`inputs` (the one way every command reads a directory; the parameters say how). Nothing reads the network, the clock or
HOME, so the output depends on the commit and the parameters only, as Argo CD's cache
assumes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.apirules import DNS1123_LABEL
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.core.api.model import DEFAULT_NAMESPACE, is_disaggregated_set
from kubectl_disagg.core.controller.render import deep_copy_object, without_revision_services
from kubectl_disagg.inputs import tree as inputs

LWS_RESOURCE = f"{naming.LWS_API_VERSION}/{naming.LWS_KIND}"
REVISION_ANNOTATION = naming.SOURCE_REVISION_ANNOTATION

# Name → announced default. The same names and defaults are announced in plugin.yaml;
# Argo CD shows announced defaults but never sends them, so they are applied here.
DEFAULT_INCLUDE = inputs.DEFAULT_INCLUDE
DEFAULT_STATE_FILE = naming.STATE_FILE
PARAMETERS = ("namespace", "recurse", "include", "exclude", "strict", "rollout-state", "require-rollout-state",
              "revision-services")

# Built-in kinds that live outside namespaces: they never get the application's namespace.
CLUSTER_SCOPED_KINDS = frozenset({
    "APIService", "CertificateSigningRequest", "ClusterRole", "ClusterRoleBinding",
    "ComponentStatus", "CSIDriver", "CSINode", "CustomResourceDefinition", "FlowSchema",
    "IngressClass", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
    "MutatingWebhookConfiguration", "Namespace", "Node", "PersistentVolume",
    "PriorityClass", "PriorityLevelConfiguration", "RuntimeClass", "StorageClass",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration", "VolumeAttachment",
})


@dataclass(frozen=True)
class Parameters:
    """The plugin's parameters with defaults applied; `unknown` names what was not understood;
    `require_state`: a set without a rollout state is refused (design §8 rule 3)."""

    namespace: str | None
    include: tuple[str, ...]
    strict: bool
    state_file: str
    unknown: tuple[str, ...]
    require_state: bool = True
    recurse: bool = False
    exclude: tuple[str, ...] = ()
    revision_services: bool = True  # false: no per-revision -prv Services (design §3)

    @property
    def reading(self) -> inputs.Reading:
        """How the application directory is read (`inputs`)."""
        return inputs.Reading(self.recurse, self.include, self.exclude, self.state_file)


@dataclass(frozen=True)
class GeneratedManifests:
    objects: list[JsonObject]
    warnings: list[str]


# --- parameters -----------------------------------------------------------------------------

def env_name(name: str) -> str:
    """Argo CD's spelling of a parameter in the environment: upper case, others → `_`."""
    return re.sub(r"[^A-Z0-9_]", "_", name.upper())


def read_parameters(environ: Mapping[str, str]) -> Parameters:
    """The parameters, looked up in `ARGOCD_APP_PARAMETERS`, then `PARAM_*`, then
    `ARGOCD_ENV_*` (an Application's plugin.env); the first source naming one wins."""
    raw: dict[str, object] = {}
    unknown: list[str] = []
    for name, value in _from_json(environ.get("ARGOCD_APP_PARAMETERS")):
        if name not in PARAMETERS:
            unknown.append(f"ARGOCD_APP_PARAMETERS: {name}")
        raw.setdefault(name, value)
    for parameter, value, variable in _from_prefix(environ, "PARAM_"):
        if parameter is None:
            if "ARGOCD_APP_PARAMETERS" not in environ:  # else already named from there
                unknown.append(variable)
        else:
            raw.setdefault(parameter, value)
    for parameter, value, _ in _from_prefix(environ, "ARGOCD_ENV_"):
        if parameter is not None:  # plugin.env may carry other variables: not ours to judge
            raw.setdefault(parameter, value)
    problems: list[str] = []
    namespace = _string(raw, "namespace", "", problems)
    include = _globs(raw, "include", list(DEFAULT_INCLUDE), problems)
    exclude = _globs(raw, "exclude", [], problems)
    strict_text, require_text, recurse_text, services_text = (_flag(raw, name, default, problems)
                                                              for name, default in (
        ("strict", "false"), ("require-rollout-state", "true"), ("recurse", "false"), ("revision-services", "true")))
    state_file = _string(raw, "rollout-state", DEFAULT_STATE_FILE, problems)
    if state_file.startswith("/") or ".." in state_file.split("/"):
        problems.append(f"parameter rollout-state: Invalid value: {json.dumps(state_file)}: "
                        "must be a path inside the application directory")
    if namespace and (len(namespace) > 63 or not DNS1123_LABEL.fullmatch(namespace)):
        problems.append(f"parameter namespace: Invalid value: {json.dumps(namespace)}: "
                        "must be a lowercase RFC 1123 label")
    if not problems:
        problems.extend(inputs.check_globs(inputs.Reading(recurse_text == "true", include, exclude)))
    if problems:
        raise UserError(problems)
    return Parameters(namespace or None, tuple(include), strict_text == "true", state_file, tuple(unknown),
                      require_text != "false", recurse_text == "true", tuple(exclude), services_text != "false")


def _globs(raw: Mapping[str, object], name: str, default: list[str], problems: list[str]) -> tuple[str, ...]:
    """An array of globs, or one string with commas (outside `{a,b}`); relative to the
    application directory."""
    globs = raw.get(name, default)
    if isinstance(globs, str):
        globs = [part.strip() for part in re.split(r",(?![^{]*})", globs) if part.strip()]
    if not isinstance(globs, list) or not all(isinstance(g, str) and g for g in globs) or (
            name == "include" and not globs):
        problems.append(f"parameter {name}: needs one or more globs (comma-separated or an array)")
        return ()
    return tuple(glob.removeprefix("./") for glob in globs)


def _flag(raw: Mapping[str, object], name: str, default: str, problems: list[str]) -> str:
    text = _string(raw, name, default, problems).lower()
    if text not in ("true", "false"):
        problems.append(f"parameter {name}: Invalid value: {json.dumps(text)}: must be true or false")
    return text


def _from_json(text: str | None) -> list[tuple[str, object]]:
    """The parameters of `ARGOCD_APP_PARAMETERS`. Argo CD sends it whenever the Application
    has a `plugin` block, as the JSON of its parameter list: `null` when it sets none (a
    plugin block with only `name` or `env`, the most common Application), so null, like an
    absent or empty variable, means no parameters."""
    if not text:
        return []
    try:
        items = json.loads(text)
    except ValueError as err:
        raise UserError([f"ARGOCD_APP_PARAMETERS: not JSON: {err}"]) from None
    except RecursionError:  # Argo CD's parameter list is three levels deep: list, item, array or map
        raise UserError(["ARGOCD_APP_PARAMETERS: nested too deeply to be a list of {name, string|array|map}"]) \
            from None
    if items is None:
        return []
    if not isinstance(items, list):
        raise UserError(["ARGOCD_APP_PARAMETERS: expected a JSON list of {name, string|array|map}"])
    found = []
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise UserError([f"ARGOCD_APP_PARAMETERS[{index}]: expected an object with a name"])
        for kind in ("string", "array", "map"):
            if kind in item:
                found.append((item["name"], item[kind]))
                break
        else:
            found.append((item["name"], ""))
    return found


def _from_prefix(environ: Mapping[str, str], prefix: str) -> Iterable[tuple[str | None, object, str]]:
    """(parameter, value, variable) for every variable with the prefix, arrays (`_0`, `_1`…)
    gathered; parameter None when the variable names none of ours."""
    by_env = {env_name(name): name for name in PARAMETERS}
    arrays: dict[str, dict[int, str]] = {}
    for variable in sorted(environ):
        if not variable.startswith(prefix):
            continue
        rest = variable[len(prefix):]
        if rest in by_env:
            yield by_env[rest], environ[variable], variable
            continue
        base, _, index = rest.rpartition("_")
        if base in by_env and index.isascii() and index.isdigit():  # isdigit alone takes "²"
            arrays.setdefault(by_env[base], {})[int(index)] = environ[variable]
        else:
            yield None, environ[variable], variable
    for name, items in arrays.items():
        yield name, [items[i] for i in sorted(items)], f"{prefix}{env_name(name)}_0"


def _string(raw: Mapping[str, object], name: str, default: str, problems: list[str]) -> str:
    value = raw.get(name, default)
    if not isinstance(value, str):
        problems.append(f"parameter {name}: must be a string")
        return default
    return value


# --- discovery -----------------------------------------------------------------------------

def holds_set(text: bytes) -> bool:
    """Whether a file holds a DisaggregatedSet (for discovery): one that does not parse but
    names the kind counts too, so that generate can say what is wrong with it."""
    try:
        return any(is_disaggregated_set(document.data) for document in parse_stream(text, "-"))
    except UserError:
        return b"DisaggregatedSet" in text


# --- namespaces -----------------------------------------------------------------------------

def namespace_for(own: str | None, parameter: str | None, destination: str | None) -> str | None:
    """The namespace of one namespaced document: its own, else the namespace parameter, else
    the application's destination. A parameter may fill in a namespace, never contradict
    one (the rule `render -n` follows): ValueError then."""
    if parameter and own and own != parameter:
        raise ValueError(f'namespace "{own}" contradicts the namespace parameter "{parameter}"')
    return own or parameter or destination or None


# --- generate -------------------------------------------------------------------------------

def generate(tree: inputs.Tree, parameters: Parameters, environ: Mapping[str, str]) -> GeneratedManifests:
    """Every object of the directory (`tree`, read as the parameters say): DisaggregatedSets
    rendered, other documents passed through, namespaces settled. Each set renders as far as
    the rollout state beside it has rolled it (docs/gitops.md); a set without one is refused
    unless `require-rollout-state` is false (never in strict mode).
    Raises UserError for anything Argo CD must not apply."""
    # Imported here: `cmp discover`, which Argo CD runs before each generate, needs neither (a
    # third of its start).
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.gitops.served import SERVED_RESOURCE, served
    from kubectl_disagg.rollout.served import served_object

    destination = environ.get("ARGOCD_APP_NAMESPACE") or None
    revision = environ.get("ARGOCD_APP_REVISION") or None
    show_states = served(environ.get("KUBE_API_VERSIONS"))
    directory = directories.load(tree, parameters.reading, namespace=parameters.namespace,
                                 fallback=destination or DEFAULT_NAMESPACE, flag="namespace parameter")
    if parameters.strict and directory.empty:
        raise UserError([Problem(path, 0, "", "strict: file holds no document") for path in directory.empty])
    warnings = [str(w) for w in directory.warnings]
    warnings += [f"unknown parameter {name}" for name in parameters.unknown]
    if parameters.strict and warnings:
        raise UserError([f"strict: {warning}" for warning in warnings])
    if parameters.strict and not directory.sets:
        raise UserError(["strict: no DisaggregatedSet in the application directory"])
    rendered, problems = directories.render(directory, require_state=parameters.strict or parameters.require_state,
                                            namespace=parameters.namespace or destination, reading=parameters.reading)
    objects: list[JsonObject] = []
    for item, own in rendered:
        if isinstance(item, directories.SetEntry):
            objects.extend(_stamped(own if parameters.revision_services else without_revision_services(own), revision))
            if item.state is not None and show_states:  # where a git rollout stands, for Argo CD to show
                objects.extend(_stamped([served_object(item.ds, item.state)], revision))
            continue
        try:
            objects.append(_passthrough(item.data, parameters.namespace, destination))
        except ValueError as err:
            problems.append(Problem(item.file, item.line(("metadata", "namespace")), "metadata.namespace", str(err)))
    if problems:
        raise UserError(problems)
    if not objects:
        raise UserError(["no objects to render: the include globs matched no manifests "
                         f"({', '.join(parameters.include)}), and an empty render with prune "
                         "would delete every resource of the application"])
    if directory.sets:
        warnings += check_api_versions(environ.get("KUBE_API_VERSIONS"))
    if any(entry.state is not None for entry in directory.sets) and environ.get("KUBE_API_VERSIONS") \
            and not show_states:
        warnings.append(f"the destination cluster does not serve {SERVED_RESOURCE} (KUBE_API_VERSIONS): the "
                        "rollout state is not emitted, so Argo CD cannot show where a git rollout stands")
    return GeneratedManifests(objects, warnings)


NO_API_VERSIONS_WARNING = ("KUBE_API_VERSIONS is empty (Argo CD's source hydrator sends no cluster "
                           f"information): rendered without checking that the destination serves {LWS_RESOURCE}")


def check_api_versions(kube_api_versions: str | None) -> list[str]:
    """Refuse a destination cluster that cannot store the LWS we render, when Argo CD says
    what it serves; when it says nothing (its source hydrator renders for no particular
    cluster and sends KUBE_VERSION and KUBE_API_VERSIONS empty), render and warn once."""
    if not kube_api_versions or not kube_api_versions.strip():
        return [NO_API_VERSIONS_WARNING]
    if LWS_RESOURCE not in {part.strip() for part in kube_api_versions.split(",")}:
        raise UserError([f"the destination cluster does not serve {LWS_RESOURCE} (KUBE_API_VERSIONS): "
                         "install LeaderWorkerSet there first"])
    return []


def _stamped(objects: Iterable[JsonObject], revision: str | None) -> Iterable[JsonObject]:
    for obj in objects:
        if revision:
            metadata = obj["metadata"]
            metadata["annotations"] = {**(metadata.get("annotations") or {}), REVISION_ANNOTATION: revision}
        yield obj


def _passthrough(data: JsonObject, parameter: str | None, destination: str | None) -> JsonObject:
    if data.get("kind") in CLUSTER_SCOPED_KINDS:
        return data
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    own = metadata.get("namespace")
    namespace = namespace_for(own if isinstance(own, str) else None, parameter, destination)
    if namespace is None or namespace == own:
        return data
    data = deep_copy_object(data)
    data["metadata"] = {**metadata, "namespace": namespace}
    return data
