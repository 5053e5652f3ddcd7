"""The DisaggregatedSet model: typed, immutable, defaulted in one place (spec §1).

`load_sets` reads manifests, validates every DisaggregatedSet in them (all problems at once)
and returns the sets in input order, with the other documents alongside for pass-through.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Mapping

from kubectl_disagg import revision
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.loader import Document, dotted, read_documents

GROUP = "disaggregatedset.x-k8s.io"
API_VERSION = f"{GROUP}/v1"
KIND = "DisaggregatedSet"

PLACEMENT_NONE = "None"
SCALING_EXTERNAL = "External"


class Placement(namedtuple("Placement", "type topology", defaults=(PLACEMENT_NONE, None))):
    """spec.placementPolicy: None, ExclusiveSlice or ExclusiveTopology, and its node-label key."""

    __slots__ = ()

    @property
    def exclusive(self) -> bool:
        return self.type != PLACEMENT_NONE


class Role(namedtuple("Role", "name replicas spec labels annotations external", defaults=(False,))):
    """One role of the set: name, replicas per slice, `spec` (the defaulted LWS spec; treat it
    as read-only), the LWS labels and annotations, and whether it scales External-ly."""

    __slots__ = ()

    @property
    def rolling_update(self) -> Mapping[str, object] | None:
        return (self.spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration")

    @property
    def template(self) -> Mapping[str, object]:
        return self.spec["leaderWorkerTemplate"]


class DisaggregatedSet(namedtuple("DisaggregatedSet", "name namespace slices placement roles revision source")):
    """A validated set: `roles` a tuple of Role in spec order, `source` the Document it came from."""

    __slots__ = ()

    @property
    def role_names(self) -> tuple[str, ...]:
        return tuple(role.name for role in self.roles)

    def role(self, name: str) -> Role:
        for role in self.roles:
            if role.name == name:
                return role
        raise KeyError(name)


def is_disaggregated_set(data: object) -> bool:
    """A document meant as a DisaggregatedSet, even with a wrong version (validation says so)."""
    if not isinstance(data, dict):
        return False
    api_version = data.get("apiVersion")
    return data.get("kind") == KIND or (
        isinstance(api_version, str) and api_version.split("/")[0] == GROUP
        and data.get("kind") != "DisaggregatedSetRoleScaler"
    )


# --- defaulting -----------------------------------------------------------------------------

def default_role_spec(spec: Mapping[str, object] | None) -> dict:
    """The role's LWS spec with the API server's defaults (spec §1) filled in; input untouched."""
    spec = without_nulls(dict(spec or {}))
    _default(spec, "replicas", 1)
    strategy = _default(spec, "rolloutStrategy", {})
    if not strategy.get("type"):  # empty means RollingUpdate, the only strategy there is
        strategy["type"] = "RollingUpdate"
    rolling = strategy.get("rollingUpdateConfiguration")
    if rolling is not None:  # an absent configuration stays absent (§6 tells them apart)
        _default(rolling, "maxSurge", 0)
        _default(rolling, "maxUnavailable", 1)
        _default(rolling, "partition", 0)
    _default(spec, "startupPolicy", "LeaderCreated")
    # size, restartPolicy, subGroupPolicyType and every k8s.io/api `+default` in the pod and
    # claim templates (port protocol TCP, …): the generated table, as the CRD has them.
    revision.fill_defaults(_default(spec, "leaderWorkerTemplate", {}))
    return spec


def without_nulls(value: object) -> object:
    """A deep copy without null map entries: the API server treats them as unset, so do we."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def _default(mapping: dict, key: str, value: object) -> object:
    """Set `key` when absent or null (null means unset in Kubernetes manifests)."""
    if mapping.get(key) is None:
        mapping[key] = value
    return mapping[key]


# --- building the model ---------------------------------------------------------------------

def build_set(document: Document) -> DisaggregatedSet:
    """Model of an already validated DisaggregatedSet document."""
    data = document.data
    metadata = data.get("metadata") or {}
    spec = data.get("spec") or {}
    placement = spec.get("placementPolicy") or {}
    roles = tuple(_build_role(raw) for raw in spec.get("roles") or [])
    return DisaggregatedSet(
        name=metadata["name"],
        namespace=metadata.get("namespace"),
        slices=spec.get("slices") if spec.get("slices") is not None else 1,
        placement=Placement(placement.get("type") or PLACEMENT_NONE, placement.get("topology")),
        roles=roles,
        revision=_revision(document, roles),
        source=document,
    )


def _revision(document: Document, roles: tuple[Role, ...]) -> str:
    """The controller's revision; a value Go could not decode is the user's error, with its line."""
    try:
        return revision.compute_revision([(role.name, role.template) for role in roles])
    except revision.RevisionInputError as error:
        index, *rest = error.path
        path = ("spec", "roles", index, "spec", "leaderWorkerTemplate", *rest)
        raise UserError([Problem(document.file, document.line(path), dotted(path), error.message)]) from None


def _build_role(raw: Mapping[str, object]) -> Role:
    spec = default_role_spec(raw.get("spec"))
    metadata = raw.get("metadata") or {}
    return Role(
        name=raw["name"],
        replicas=spec["replicas"],
        spec=spec,
        labels=dict(metadata.get("labels") or {}),
        annotations=dict(metadata.get("annotations") or {}),
        external=(raw.get("scaling") or {}).get("mode") == SCALING_EXTERNAL,
    )


class LoadResult(namedtuple("LoadResult", "items warnings")):
    """What the inputs held: sets and other documents in input order, plus warnings."""

    __slots__ = ()

    @property
    def sets(self) -> list[DisaggregatedSet]:
        return [item for item in self.items if isinstance(item, DisaggregatedSet)]


def load_documents(documents: Iterable[Document]) -> LoadResult:
    from kubectl_disagg.validation import validate_document  # validation imports this module

    items: list[DisaggregatedSet | Document] = []
    problems: list[Problem] = []
    warnings: list[Problem] = []
    for document in documents:
        if not is_disaggregated_set(document.data):
            problems.extend(_check_passthrough(document))
            items.append(document)
            continue
        errors, notes = validate_document(document)
        problems.extend(errors)
        warnings.extend(notes)
        if not errors:
            try:
                items.append(build_set(document))
            except UserError as error:  # a template value Go could not decode, found by hashing
                problems.extend(error.problems)
    if problems:
        raise UserError(problems)
    return LoadResult(tuple(items), tuple(warnings))


def load_sets(paths: Iterable[str], recursive: bool = False) -> LoadResult:
    return load_documents(read_documents(paths, recursive))


def _check_passthrough(document: Document) -> list[Problem]:
    """Other documents pass through render, but only if they are Kubernetes objects at all."""
    data = document.data
    if not isinstance(data, dict):
        return [Problem(document.file, document.line(()), "", "document is not a Kubernetes object (a mapping)")]
    problems = []
    for key in ("apiVersion", "kind"):
        if not isinstance(data.get(key), str) or not data.get(key):
            problems.append(Problem(document.file, document.line((key,)), key, "Required value: a Kubernetes object needs it"))
    return problems
