"""The DisaggregatedSet model: typed, immutable, defaulted in one place (design §1).

Built from documents that `validation` has passed (`load.py` does both); the namespace a set
is acted on in follows one rule for every command (`namespace_for`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_disagg.core.api import apirules, naming, revision
from kubectl_disagg.errors import Problem, UserError, escaped
from kubectl_disagg.manifests.source import Document, JsonObject, dotted

from kubectl_disagg.core.api.policy_types import RolloutPolicy


DEFAULT_NAMESPACE = "default"
PLACEMENT_NONE = "None"
SCALING_EXTERNAL = "External"


@dataclass(frozen=True)
class Placement:
    """spec.placementPolicy: None, ExclusiveSlice or ExclusiveTopology, and its node-label key."""

    type: str = PLACEMENT_NONE
    topology: str | None = None

    @property
    def exclusive(self) -> bool:
        return self.type != PLACEMENT_NONE


@dataclass(frozen=True)
class Role:
    """One role of the set: name, replicas per slice, `spec` (the defaulted LWS spec; treat it
    as read-only), the LWS labels and annotations, and whether it scales External-ly.

    `scaled`: an External role whose `replicas` came from its RoleScaler (see
    `reconcile.with_scalers`), so they are its target like a Static role's."""

    name: str
    replicas: int
    spec: Mapping[str, Any]  # the role's LWS spec, defaulted (default_role_spec)
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    external: bool = False
    scaled: bool = False

    @property
    def rolling_update(self) -> Mapping[str, Any] | None:
        rolling: Mapping[str, Any] | None = (self.spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration")
        return rolling

    @property
    def template(self) -> Mapping[str, Any]:
        template: Mapping[str, Any] = self.spec["leaderWorkerTemplate"]
        return template


@dataclass(frozen=True)
class DisaggregatedSet:
    """A validated set: `roles` a tuple of Role in spec order, `source` the Document it came from;
    `policy`: its RolloutPolicy (core/delivery/policy.py), read beside it, or None (every slice at once)."""

    name: str
    namespace: str | None
    slices: int
    placement: Placement
    roles: tuple[Role, ...]
    revision: str
    source: Document
    policy: RolloutPolicy | None = field(default=None, compare=False)
    # its per-revision `-prv` Services: rendered, created and awaited (False: the set's annotation
    # `kubectl-disagg/revision-services: "false"`, or `--no-revision-services`, leaves them out)
    revision_services: bool = True

    @property
    def has_external_roles(self) -> bool:
        """Whether an autoscaler sizes some role: then its RoleScalers are read too."""
        return any(role.external for role in self.roles)

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
    return data.get("kind") == naming.SET_KIND or (
        isinstance(api_version, str) and api_version.split("/")[0] == naming.SET_GROUP
        and data.get("kind") != naming.SCALER_KIND
    )


def is_state_document(data: object) -> bool:
    """A RolloutState (gitops/state.py reads it): a set's rollout state, kept in git beside it."""
    return isinstance(data, dict) and data.get("kind") == naming.STATE_KIND and data.get("apiVersion") == naming.PLUGIN_API_VERSION


def is_policy_document(data: object) -> bool:
    """A RolloutPolicy (core/delivery/policy.py reads it), told apart from the documents passed through."""
    return isinstance(data, dict) and data.get("kind") == naming.POLICY_KIND and data.get("apiVersion") == naming.PLUGIN_API_VERSION


# --- defaulting -----------------------------------------------------------------------------

def default_role_spec(spec: Mapping[str, object] | None) -> JsonObject:
    """The role's LWS spec with the API server's defaults (design §1) filled in; input untouched."""
    spec = {key: without_nulls(value) for key, value in (spec or {}).items() if value is not None}
    _default(spec, "replicas", 1)
    strategy = _default(spec, "rolloutStrategy", {})
    if not strategy.get("type"):  # empty means RollingUpdate, the only strategy there is
        strategy["type"] = "RollingUpdate"
    rolling = strategy.get("rollingUpdateConfiguration")
    if rolling is not None:  # an absent configuration stays absent (design §6 tells them apart)
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


def _default(mapping: JsonObject, key: str, value: object) -> Any:
    """Set `key` when absent or null (null means unset in Kubernetes manifests); its value now
    (JSON: what the manifest holds there)."""
    if mapping.get(key) is None:
        mapping[key] = value
    return mapping[key]


# --- building the model ---------------------------------------------------------------------

def build_set(document: Document) -> DisaggregatedSet:
    """Model of an already validated DisaggregatedSet document."""
    data: JsonObject = document.data
    metadata: JsonObject = data.get("metadata") or {}
    spec: JsonObject = data.get("spec") or {}
    placement = spec.get("placementPolicy") or {}
    roles = tuple(_build_role(raw) for raw in spec.get("roles") or [])
    return DisaggregatedSet(
        name=metadata["name"],
        namespace=metadata.get("namespace"),
        slices=spec["slices"] if spec.get("slices") is not None else 1,
        placement=Placement(placement.get("type") or PLACEMENT_NONE, placement.get("topology")),
        roles=roles,
        revision=_revision(document, roles),
        source=document,
        revision_services=(metadata.get("annotations") or {}).get(naming.REVISION_SERVICES_ANNOTATION) != "false",
    )


def _revision(document: Document, roles: tuple[Role, ...]) -> str:
    """The controller's revision; a value Go could not decode is the user's error, with its line."""
    try:
        return revision.compute_revision([(role.name, role.template) for role in roles],
                                         {role.name: role.spec.get("groupIdentity") for role in roles})
    except revision.RevisionInputError as error:
        index, *rest = error.path
        path = ("spec", "roles", index, "spec", "leaderWorkerTemplate", *rest)
        raise UserError([Problem(document.file, document.line(path), dotted(path), error.message)]) from None


def _build_role(raw: Mapping[str, Any]) -> Role:
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


# --- where a set lives ----------------------------------------------------------------------

@dataclass(frozen=True)
class NamespaceProblem(Problem):
    """A namespace asked for (by the caller: -n, a parameter) that a set cannot be acted on in:
    `document` is the one the set names (None: the asked name is not a namespace name at all).
    The message says it without naming how it was asked; views/problems.py words it for the CLI."""

    name: str = ""
    document: str | None = None
    asked: str = ""

    def __str__(self) -> str:
        return super().__str__() if self.file else escaped(self.message)


def namespace_conflict(ds: DisaggregatedSet, flag: str | None) -> Problem | None:
    """kubectl's rule: -n may not contradict the namespace a document names.

    Rendering or stepping a set into a namespace it does not name would start a second copy
    of it there; the document is the truth, -n only fills in where it says nothing.
    """
    if not flag or not ds.namespace or flag == ds.namespace:
        return None
    return NamespaceProblem(ds.source.file, ds.source.line(("metadata", "namespace")), "metadata.namespace",
                            f'disaggregatedset/{ds.name} is in namespace "{ds.namespace}", which does not match '
                            f'the namespace asked for, "{flag}"', ds.name, ds.namespace, flag)


def namespace_for(ds: DisaggregatedSet, flag: str | None, fallback: str = DEFAULT_NAMESPACE) -> str:
    """The document's namespace, else -n, else `fallback` (the kubeconfig context's, or "default")."""
    conflict = namespace_conflict(ds, flag)
    if conflict is not None:
        raise UserError([conflict])
    if flag and not ds.namespace and not apirules.is_namespace_name(flag):
        # The document's own is validated with it; -n would put every object where none can be.
        raise UserError([NamespaceProblem("", 0, "", f'the namespace asked for, "{flag}": {apirules.NAMESPACE_MESSAGE}',
                                          ds.name, None, flag)])
    return ds.namespace or flag or fallback
