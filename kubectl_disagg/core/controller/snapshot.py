"""The live state of one set, as plain immutable data read from API objects.

A snapshot is what one LIST per kind returns (everything labelled with the set's name);
reconcile and status are pure functions of it, so both are tested without a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kubectl_disagg.core.api import naming
from kubectl_disagg.manifests.source import JsonObject

if TYPE_CHECKING:
    from kubectl_disagg.core.api.model import DisaggregatedSet


def _count(text: str) -> int | None:
    """`text` as a count when it is one: ASCII digits only (str.isdigit() alone takes "²",
    which int() refuses)."""
    return int(text) if text.isascii() and text.isdigit() else None


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class Placed(NamedTuple):
    """A complete identity: the slice, revision and role an object's labels name."""

    slice: int
    revision: str
    role: str


@dataclass(frozen=True, slots=True)
class Identity:
    """What an object's labels say it is; None where a label is missing or malformed."""

    slice: int | None
    revision: str | None
    role: str | None

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> Identity:
        slice_index = _count(labels.get(naming.SLICE_LABEL, ""))
        return cls(slice_index, labels.get(naming.REVISION_LABEL) or None, labels.get(naming.ROLE_LABEL) or None)

    @property
    def complete(self) -> bool:
        return self.slice is not None and self.revision is not None and self.role is not None

    @property
    def placed(self) -> Placed | None:
        """The three labels when all are valid, else None."""
        if self.slice is None or self.revision is None or self.role is None:
            return None
        return Placed(self.slice, self.revision, self.role)


@dataclass(frozen=True, slots=True)
class LiveObject:
    """What LiveLWS and LiveService share: the object's metadata and the questions about who it
    belongs to.

    `created` is RFC 3339, so it sorts as text; `controller_set` is the DisaggregatedSet its
    ownerReferences name as controller ("" for none): the upstream controller acts only on
    objects it owns that way. `identity` is read from the labels once, at construction
    (dataclasses.replace reads it again, from the new labels): reconcile asks for it per object
    per slice, and labels never change here.
    """

    kind: str
    name: str
    uid: str
    resource_version: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    created: str
    controller_set: str = ""
    identity: Identity = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "identity", Identity.from_labels(self.labels))

    def managed_by_us(self, set_name: str) -> bool:
        return (self.labels.get(naming.MANAGED_BY_LABEL) == naming.MANAGER
                and self.labels.get(naming.NAME_LABEL) == set_name)

    def owned_by_controller(self, set_name: str) -> bool:
        """The upstream controller's: its ownerReferences name the set as controller."""
        return self.controller_set == set_name and self.labels.get(naming.NAME_LABEL) == set_name

    def belongs_to(self, set_name: str) -> bool:
        """Part of the set, whoever runs it (kubectl-disagg or the controller): what status reads."""
        return self.managed_by_us(set_name) or self.owned_by_controller(set_name)


@dataclass(frozen=True, slots=True)
class LiveLWS(LiveObject):
    """`replicas` is spec.replicas (absent counts 1, as the LWS API defaults it); the LWS
    controllers before April 2026 never set `observed_generation` (None)."""

    replicas: int = 1
    generation: int = 0
    status_replicas: int = 0
    ready: int = 0
    updated: int = 0
    observed_generation: int | None = None
    # The LWS controller writes an Available condition once the LWS is first available and
    # only flips it afterwards: whether this LWS has ever been available.
    been_available: bool = False

    @property
    def stale(self) -> bool:
        """Status describes an older spec. Absent observedGeneration means unknown, not stale."""
        return self.observed_generation is not None and self.observed_generation < self.generation

    @property
    def initial_replicas(self) -> int | None:
        """The annotation's count; None when absent or not a plain count (then replicas stand in)."""
        return _count(self.annotations.get(naming.INITIAL_REPLICAS_ANNOTATION, ""))


@dataclass(frozen=True, slots=True)
class LiveService(LiveObject):
    pass


@dataclass(frozen=True)
class Snapshot:
    """Everything labelled with the set's name in its namespace, managed by us or not.

    `lws`, `services`: tuples of LiveLWS and LiveService. `lws_resource_version`: the LWS
    list's resourceVersion; a watch from exactly this point sees every later change;
    `services_resource_version`, the Service list's, likewise (empty when none was read).
    `scalers`: the namespace's DisaggregatedSetRoleScalers, name → spec.replicas;
    `scalers_served`: the cluster serves the kind (its CRD is installed), so rollout step may
    create them. `objects`: the objects as read, by (kind, name), what a dry run's diffs and
    patches start from. `occupied`: names a pass would create that an object outside the set
    already holds, by (kind, name), with who holds it (see `occupied_by_others`).
    """

    namespace: str
    lws: tuple[LiveLWS, ...] = ()
    services: tuple[LiveService, ...] = ()
    lws_resource_version: str = ""
    services_resource_version: str = ""
    scalers: Mapping[str, int] = field(default_factory=dict)
    scalers_served: bool = False
    objects: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    occupied: Mapping[tuple[str, str], str] = field(default_factory=dict)


def holder_of(obj: Mapping[str, Any]) -> str:
    """Who holds an object, for people: its managed-by label, its controller, its field managers."""
    metadata = obj.get("metadata") or {}
    manager = (metadata.get("labels") or {}).get(naming.MANAGED_BY_LABEL)
    parts = [f"managed-by label {manager!r}" if manager else "no managed-by label"]
    owner_set = (metadata.get("labels") or {}).get(naming.NAME_LABEL)
    if manager == naming.MANAGER and owner_set:  # ours, but another set's: say whose
        parts.append(f"set label {owner_set!r}")
    for owner in metadata.get("ownerReferences") or ():
        if owner.get("controller") is True:
            parts.append(f"controlled by {str(owner.get('kind', '')).lower()}/{owner.get('name', '')}")
    managers = sorted({str(entry["manager"]) for entry in metadata.get("managedFields") or () if entry.get("manager")})
    if managers:
        parts.append(f"field managers {', '.join(managers)}")
    return "; ".join(parts)


def occupied_by_others(set_name: str, found: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """Of the objects found at names a pass would create, those that are not the set's (ours or
    the controller's for it), with who holds each: creating over them would adopt them."""
    occupied = {}
    for key, obj in found.items():
        labels = (obj.get("metadata") or {}).get("labels") or {}
        ours = labels.get(naming.NAME_LABEL) == set_name and (
            labels.get(naming.MANAGED_BY_LABEL) == naming.MANAGER or controller_set_name(obj) == set_name)
        if not ours:
            occupied[key] = holder_of(obj)
    return occupied


def controller_set_name(obj: Mapping[str, Any]) -> str:
    """The DisaggregatedSet an object's ownerReferences name as its controller, or ""."""
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if (owner.get("controller") is True and owner.get("kind") == naming.SET_KIND
                and str(owner.get("apiVersion", "")).startswith(naming.SET_GROUP + "/")):
            return str(owner.get("name") or "")
    return ""


def _metadata(obj: Mapping[str, Any]) -> JsonObject:
    metadata = obj.get("metadata") or {}
    return {
        "controller_set": controller_set_name(obj),
        "name": metadata.get("name", ""),
        "uid": metadata.get("uid", ""),
        "resource_version": metadata.get("resourceVersion", ""),
        "labels": dict(metadata.get("labels") or {}),
        "annotations": dict(metadata.get("annotations") or {}),
        "created": str(metadata.get("creationTimestamp") or ""),
    }


def lws_from_object(obj: Mapping[str, Any]) -> LiveLWS:
    """A LiveLWS from an LWS as the API returns it (a dict in its JSON shape)."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    observed = status.get("observedGeneration")
    return LiveLWS(
        kind=naming.LWS_KIND,
        **_metadata(obj),
        replicas=_int(spec.get("replicas"), 1),
        generation=_int((obj.get("metadata") or {}).get("generation"), 0),
        status_replicas=_int(status.get("replicas"), 0),
        ready=_int(status.get("readyReplicas"), 0),
        updated=_int(status.get("updatedReplicas"), 0),
        observed_generation=observed if isinstance(observed, int) else None,
        been_available=any(isinstance(c, Mapping) and c.get("type") == "Available"
                           for c in status.get("conditions") or ()),
    )


def scaler_replicas(obj: Mapping[str, Any]) -> tuple[str, int]:
    """(name, spec.replicas) of a RoleScaler; replicas default to 0, as the CRD does."""
    return (obj.get("metadata") or {}).get("name", ""), _int((obj.get("spec") or {}).get("replicas"), 0)


def service_from_object(obj: Mapping[str, Any]) -> LiveService:
    return LiveService(kind=naming.SERVICE_KIND, **_metadata(obj))


@dataclass(frozen=True)
class SliceLive:
    """What one slice runs: revision → role → replicas (`runs`, in the order deployed), and the
    initial-replicas of its old revisions (`initial`, revision → role → count). The live LWS
    give it (`live_from_snapshot`), and so does a git rollout's state file (`live_from_state`)."""

    runs: Mapping[str, Mapping[str, int]]
    initial: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def live_from_snapshot(ds: DisaggregatedSet, snapshot: Snapshot) -> tuple[SliceLive, ...]:
    """Each slice's live progress from its LeaderWorkerSets (ours or the controller's)."""
    runs: list[dict[str, dict[str, int]]] = [{} for _ in range(ds.slices)]
    initial: list[dict[str, dict[str, int]]] = [{} for _ in range(ds.slices)]
    for obj in sorted(snapshot.lws, key=lambda o: (o.created, o.name)):
        placed = obj.identity.placed
        if not obj.belongs_to(ds.name) or placed is None or placed.slice >= ds.slices:
            continue
        runs[placed.slice].setdefault(placed.revision, {})[placed.role] = obj.replicas
        if obj.initial_replicas is not None:
            initial[placed.slice].setdefault(placed.revision, {})[placed.role] = obj.initial_replicas
    order = {name: index for index, name in enumerate(ds.role_names)}  # roles as the set lists them

    def ordered(counts: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        return {r: dict(sorted(c.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))
                for r, c in counts.items()}
    return tuple(SliceLive(ordered(r), ordered(i)) for r, i in zip(runs, initial))
