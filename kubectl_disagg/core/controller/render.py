"""The objects a DisaggregatedSet stands for (design §3): one LWS per slice and role, one
headless Service per slice, revision and role. Pure: model in, plain dicts out."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DEFAULT_NAMESPACE, DisaggregatedSet, Role, namespace_for
from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests.source import Document, FieldPath, JsonObject

EXCLUSIVE_TOPOLOGY = "ExclusiveTopology"

# The largest object (compact JSON) we render or accept as a set. The limit that bites is
# etcd's: a write carrying more than its --max-request-bytes (1.5 MiB by default) is refused
# ("etcdserver: request is too large"; above 2 MiB the API server's own etcd client refuses to
# send it: "trying to send message larger than max (… vs. 2097152)"). The API server's 3 MiB
# request body limit is looser and never the one hit. A dry run never reaches etcd, so neither
# `--dry-run=server` nor `validate --server` sees it. What is stored is larger than what is sent
# (managedFields, which record every field path under server-side apply, uid, timestamps), so
# objects are held to 1 MiB, the bound the API server itself puts on ConfigMaps and Secrets for
# the same reason.
MAX_OBJECT_BYTES = 1 << 20
# How much a rendered LWS may exceed its role's share of the set document: labels, affinity.
_RENDER_OVERHEAD_BYTES = 64 << 10


def deep_copy(value: object) -> object:
    """Copy of plain JSON-like data; several times faster than copy.deepcopy for this shape."""
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    return value


def deep_copy_object(value: Mapping[str, Any]) -> JsonObject:
    """A copy of a JSON object, as `deep_copy` makes it, typed as the object it is."""
    return {k: deep_copy(v) for k, v in value.items()}


def render_set(ds: DisaggregatedSet, namespace: str | None = None) -> Iterator[JsonObject]:
    """Every object of the steady state, ordered by slice, then role, LWS before its Service.

    `namespace` is -n: it fills in a document without one and may not contradict one that has it.
    """
    namespace = namespace_for(ds, namespace)
    for slice_index in range(ds.slices):
        for role in ds.roles:
            yield leader_worker_set(ds, role, slice_index, namespace)
            if ds.revision_services:
                yield service(ds.name, slice_index, ds.revision, role.name, namespace)


def leader_worker_set(ds: DisaggregatedSet, role: Role, slice_index: int, namespace: str,
                      replicas: int | None = None) -> JsonObject:
    """The LWS of one role in one slice at the set's current revision."""
    spec = deep_copy_object(role.spec)
    if replicas is not None:
        spec["replicas"] = replicas
    elif role.external:
        # An autoscaler owns an External role's size: leave the field to it, as with an HPA.
        spec.pop("replicas", None)
    else:
        spec["replicas"] = role.replicas
    injected = naming.pod_labels(ds.name, slice_index, ds.revision, role.name)
    template = spec["leaderWorkerTemplate"]
    for key in ("workerTemplate", "leaderTemplate"):
        if template.get(key) is not None:
            _label_pod_template(template[key], injected)
            if ds.placement.exclusive:
                _add_placement_affinity(template[key], ds, slice_index)
    metadata: dict[str, object] = {
        "name": naming.lws_name(ds.name, slice_index, ds.revision, role.name),
        "namespace": namespace,
        "labels": {**role.labels, **naming.lws_labels(ds.name, slice_index, ds.revision, role.name)},
    }
    if role.annotations:
        metadata["annotations"] = dict(role.annotations)
    return {"apiVersion": naming.LWS_API_VERSION, "kind": naming.LWS_KIND, "metadata": metadata, "spec": spec}


def object_bytes(obj: object) -> int:
    """The size of an object as sent and stored: compact JSON, UTF-8."""
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


def oversized_objects(ds: DisaggregatedSet, document: JsonObject) -> list[tuple[FieldPath, str, int]]:
    """(field path, what, bytes) of every object over MAX_OBJECT_BYTES: the set document itself
    (GitOps stores it) and each role's largest LeaderWorkerSet (its last slice's)."""
    size = object_bytes(document)
    if size + _RENDER_OVERHEAD_BYTES <= MAX_OBJECT_BYTES:
        return []  # no rendered object can be larger than the set plus labels and affinity
    found: list[tuple[FieldPath, str, int]] = [((), f"the DisaggregatedSet {ds.name}", size)] \
        if size > MAX_OBJECT_BYTES else []
    namespace = ds.namespace or DEFAULT_NAMESPACE
    for index, role in enumerate(ds.roles):
        lws = leader_worker_set(ds, role, ds.slices - 1, namespace)
        size = object_bytes(lws)
        if size > MAX_OBJECT_BYTES:
            found.append((("spec", "roles", index), f"the rendered LeaderWorkerSet {lws['metadata']['name']}", size))
    return found


def service(set_name: str, slice_index: int, revision: str, role: str, namespace: str) -> JsonObject:
    """Headless Service selecting the pods of one LWS (a slice, revision and role)."""
    return {
        "apiVersion": "v1",
        "kind": naming.SERVICE_KIND,
        "metadata": {
            "name": naming.service_name(set_name, slice_index, revision, role),
            "namespace": namespace,
            "labels": naming.service_labels(set_name, slice_index, revision, role),
        },
        "spec": {
            "clusterIP": "None",
            "selector": naming.selector_labels(set_name, slice_index, revision, role),
        },
    }


def without_revision_services(objects: Iterable[JsonObject]) -> list[JsonObject]:
    """`objects` less the per-revision `-prv` Services this project renders (`service`): for a
    cluster where nothing resolves them (lws#1078 proposes retiring them; design §3). A Service
    passed through from the user's own files is kept: only ours carry our managed-by label."""
    return [obj for obj in objects if not _is_revision_service(obj)]


def _is_revision_service(obj: JsonObject) -> bool:
    metadata = obj.get("metadata") or {}
    return (obj.get("kind") == naming.SERVICE_KIND and obj.get("apiVersion") == "v1"
            and str(metadata.get("name", "")).endswith(naming.SERVICE_SUFFIX)
            and (metadata.get("labels") or {}).get(naming.MANAGED_BY_LABEL) == naming.MANAGER
            and naming.REVISION_LABEL in (metadata.get("labels") or {}))


def _label_pod_template(template: JsonObject, injected: dict[str, str]) -> None:
    metadata = template.get("metadata") or {}
    metadata["labels"] = {**(metadata.get("labels") or {}), **injected}  # system labels win
    template["metadata"] = metadata


def _add_placement_affinity(template: JsonObject, ds: DisaggregatedSet, slice_index: int) -> None:
    """Co-locate a slice in one topology domain and keep the set's slices apart (design §3.1)."""
    topology = ds.placement.topology
    name, slice_ = naming.NAME_LABEL, naming.SLICE_LABEL
    this_set = _expr(name, "In", [ds.name])
    this_slice = str(slice_index)
    affinity_term = _term([this_set, _expr(slice_, "In", [this_slice])], topology)
    anti_expressions = [this_set]
    if slice_index == 0:
        anti_expressions.append(_expr(slice_, "Exists"))
    anti_expressions.append(_expr(slice_, "NotIn", [this_slice]))
    anti_terms = [_term(anti_expressions, topology)]
    if ds.placement.type == EXCLUSIVE_TOPOLOGY:
        # One slice per domain across all sets, not only this one.
        anti_terms.append(_term([_expr(name, "Exists"), _expr(name, "NotIn", [ds.name]),
                                 _expr(slice_, "Exists")], topology))
    pod_spec = template.setdefault("spec", {})
    affinity = pod_spec.get("affinity") or {}
    pod_spec["affinity"] = affinity
    _append_required(affinity, "podAffinity", [affinity_term])
    _append_required(affinity, "podAntiAffinity", anti_terms)


def _append_required(affinity: JsonObject, kind: str, terms: list[JsonObject]) -> None:
    section = affinity.get(kind) or {}
    affinity[kind] = section
    section["requiredDuringSchedulingIgnoredDuringExecution"] = (
        list(section.get("requiredDuringSchedulingIgnoredDuringExecution") or []) + terms
    )


def _expr(key: str, operator: str, values: list[str] | None = None) -> JsonObject:
    expression: dict[str, object] = {"key": key, "operator": operator}
    if values is not None:
        expression["values"] = values
    return expression


def _term(expressions: list[JsonObject], topology_key: str | None) -> JsonObject:
    return {"labelSelector": {"matchExpressions": expressions}, "topologyKey": topology_key}


def passthrough_collisions(rendered: Iterable[tuple[JsonObject, DisaggregatedSet]], passed: Iterable[Document],
                           namespace: str | None = None) -> list[Problem]:
    """Documents passed through that name an object a set renders (kind, namespace, name):
    kubectl would apply one over the other. `namespace` is -n, which places both kinds alike."""
    owners: dict[tuple[object, object, object], DisaggregatedSet] = {}  # (kind, namespace, name) as written
    for obj, ds in rendered:
        metadata = obj.get("metadata") or {}
        owners.setdefault((obj.get("kind"), metadata.get("namespace"), metadata.get("name")), ds)
    problems = []
    for document in passed:
        data = document.data
        metadata = data.get("metadata") if isinstance(data, dict) else None
        if not isinstance(metadata, dict):
            continue
        where = metadata.get("namespace") or namespace or DEFAULT_NAMESPACE
        owner = owners.get((data.get("kind"), where, metadata.get("name")))
        if owner is not None:
            problems.append(Problem(document.file, document.line(("metadata", "name")), "metadata.name",
                                    f"{data['kind']} {where}/{metadata['name']} is also rendered by "
                                    f"disaggregatedset/{owner.name} ({owner.source.file}:"
                                    f"{owner.source.line(('metadata', 'name'))})"))
    return problems
