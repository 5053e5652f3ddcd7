"""Edits of a set's role templates as data (design §2.1): `set image` and `rollout restart` decide
here which fields change, as (field path, new value) pairs; the shell writes them into a file
(`manifests.line_edit`) or sends them as a JSON patch. Pure."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_disagg.manifests.source import REMOVED, FieldPath, JsonObject

ALL = "*"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"  # the annotation kubectl rollout restart writes
POD_TEMPLATES = ("leaderTemplate", "workerTemplate")

# The value to write at a path (absent mappings on the way are made): a string (`set image`,
# `rollout restart`), any JSON value, or REMOVED (`rollout undo`, design §10.4).
Edit = tuple[FieldPath, Any]
Refusal = tuple[FieldPath, str]  # where in the document, and why


@dataclass(frozen=True)
class Assignment:
    """One `ROLE=IMAGE` or `ROLE/CONTAINER=IMAGE` argument; `*` for every role or container."""

    role: str
    container: str | None  # None: the role's containers (not its init containers)
    image: str


def parse_assignments(args: Sequence[str]) -> tuple[list[Assignment], list[str]]:
    """The arguments of `set image`, each checked; every malformed one named."""
    out: list[Assignment] = []
    problems: list[str] = []
    for arg in args:
        target, equals, image = arg.partition("=")
        role, slash, container = target.partition("/")
        if not equals or not role or not image or (slash and not container) or any(c.isspace() for c in image):
            problems.append(f"{arg!r}: expected ROLE=IMAGE or ROLE/CONTAINER=IMAGE (ROLE or CONTAINER may be *)")
            continue
        out.append(Assignment(role, None if not slash or container == ALL else container, image))
    return out, problems


def _roles(data: JsonObject) -> list[tuple[int, JsonObject]]:
    roles = ((data.get("spec") or {}).get("roles")) or []
    return [(index, role) for index, role in enumerate(roles) if isinstance(role, dict)]


def _templates(index: int, role: JsonObject) -> list[tuple[FieldPath, JsonObject]]:
    lwt = ((role.get("spec") or {}).get("leaderWorkerTemplate")) or {}
    return [(("spec", "roles", index, "spec", "leaderWorkerTemplate", key), lwt[key])
            for key in POD_TEMPLATES if isinstance(lwt.get(key), dict)]


def _no_role(name: str, names: Sequence[object]) -> Refusal:
    """A role the set does not have, refused naming the ones it has."""
    return ("spec", "roles"), f"no role named {name!r} (roles: {', '.join(str(n) for n in names)})"


def image_edits(data: JsonObject, assignments: Sequence[Assignment]) -> tuple[list[Edit], list[Refusal]]:
    """The image fields `assignments` change in one set document. `ROLE=IMAGE` (or `ROLE/*`)
    sets every container of the role's leader and worker templates, never an init container;
    `ROLE/NAME=IMAGE` the containers and init containers named NAME in either template. A role
    or container that is not there is refused; so is one field given two images."""
    chosen: dict[FieldPath, str] = {}
    refusals: list[Refusal] = []
    roles = _roles(data)
    for assignment in assignments:
        matched_roles = [(i, r) for i, r in roles if assignment.role in (ALL, r.get("name"))]
        if not matched_roles:
            refusals.append(_no_role(assignment.role, [r.get("name") for _, r in roles]))
            continue
        for index, role in matched_roles:
            found = False
            for path, template in _templates(index, role):
                pod = template.get("spec") or {}
                lists = ("containers",) if assignment.container is None else ("initContainers", "containers")
                for list_name in lists:
                    for position, container in enumerate(pod.get(list_name) or []):
                        if assignment.container not in (None, container.get("name")):
                            continue
                        found = True
                        field = path + ("spec", list_name, position, "image")
                        if chosen.get(field, assignment.image) != assignment.image:
                            refusals.append((field, f"given two images: {chosen[field]} and {assignment.image}"))
                        chosen[field] = assignment.image
            if not found:
                what = f"container {assignment.container!r}" if assignment.container else "container"
                refusals.append((("spec", "roles", index), f"role {role.get('name')!r} has no {what}"))
    return [(path, image) for path, image in chosen.items()], refusals


def restart_edits(data: JsonObject, roles: Sequence[str], at: str) -> tuple[list[Edit], list[Refusal]]:
    """The restart annotation (`RESTARTED_AT`, the time `at`) on the leader and worker pod
    templates of `roles` (every role when empty): a template change, so a new revision."""
    names = [role.get("name") for _, role in _roles(data)]
    refusals: list[Refusal] = [_no_role(name, names) for name in roles if name not in names]
    edits = [(path + ("metadata", "annotations", RESTARTED_AT), at)
             for index, role in _roles(data) if not roles or role.get("name") in roles
             for path, _ in _templates(index, role)]
    return edits, refusals


def applied(data: JsonObject, edits: Sequence[Edit]) -> JsonObject:
    """A copy of `data` with `edits` made (absent or null mappings on the way created; a
    REMOVED field gone)."""
    out = copy.deepcopy(data)
    for path, value in edits:
        node: Any = out
        for key in path[:-1]:
            if isinstance(key, str) and node.get(key) is None:
                node[key] = {}
            node = node[key]
        if value is REMOVED:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = copy.deepcopy(value)
    return out


def json_patch(data: JsonObject, edits: Sequence[Edit]) -> list[JsonObject]:
    """The edits as one JSON patch (RFC 6902) of the stored object `data`, guarded by a `test`
    of its resourceVersion: a set changed since it was read is refused, not overwritten."""
    ops: list[JsonObject] = [{"op": "test", "path": "/metadata/resourceVersion",
                              "value": (data.get("metadata") or {}).get("resourceVersion")}]
    current = copy.deepcopy(data)
    for path, value in edits:
        node: Any = current
        for depth, key in enumerate(path[:-1]):
            if isinstance(key, str) and node.get(key) is None:
                missing = applied({}, [(path[depth + 1:], value)])
                ops.append({"op": "add", "path": _pointer(path[:depth + 1]), "value": missing})
                node[key] = missing
                break
            node = node[key]
        else:
            if value is REMOVED:
                if path[-1] in node:
                    ops.append({"op": "remove", "path": _pointer(path)})
                    del node[path[-1]]
                continue
            ops.append({"op": "add" if path[-1] not in node else "replace", "path": _pointer(path), "value": value})
            node[path[-1]] = value
    return ops


def _pointer(path: FieldPath) -> str:
    return "".join("/" + str(key).replace("~", "~0").replace("/", "~1") for key in path)
