"""What the API server said about a rendered object, traced back to the document it came from.

`validate --server` sends every rendered object as a server-side apply dry run; a refusal names
fields of the LWS or Service (`spec.leaderWorkerTemplate.size`), which come from a role of the
DisaggregatedSet (`spec.roles[1].spec.leaderWorkerTemplate.size`). These pure functions turn a
refusal (a metav1.Status) into `FILE:LINE: path: message` problems on the document.
"""

from __future__ import annotations

import re

from kubectl_disagg.core.api import naming
from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests.source import Document, FieldPath, JsonObject, dotted
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.statefulsets import template_of

_TOKEN = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")
# Strict field validation and server-side apply name the field at the start of the message:
# `.spec.replcas: field not declared in schema`.
_LEADING_FIELD = re.compile(r"(?:^|: )\.?((?:spec|metadata)(?:\.[A-Za-z0-9_]+|\[[^\]]*\])*): ")


def field_path(text: str) -> FieldPath:
    """`spec.containers[0].resources.limits[nvidia.com/gpu]` → ("spec", "containers", 0, …)."""
    path: list[str | int] = []
    for name, index in _TOKEN.findall(text.lstrip(".")):
        if name:
            path.append(name)
        else:
            path.append(int(index) if index.isascii() and index.isdigit() else index)  # not "²"
    return tuple(path)


def source_path(ds: DisaggregatedSet, obj: JsonObject, path: FieldPath) -> FieldPath:
    """The document path a rendered object's field came from (the nearest one that exists); for
    a StatefulSet made of a rendered LWS, the pod template it was made of."""
    role = ((obj.get("metadata") or {}).get("labels") or {}).get(naming.ROLE_LABEL)
    names = ds.role_names
    if role not in names:
        return ("metadata",)
    role_path: FieldPath = ("spec", "roles", names.index(role))
    if obj.get("kind") == "StatefulSet":
        return _template_source(ds, obj, role_path, path)
    if obj.get("kind") != naming.LWS_KIND or not path:
        return role_path
    if path[0] == "spec":
        return role_path + path
    if path[:2] in (("metadata", "labels"), ("metadata", "annotations")):
        return role_path + path
    if path[:2] == ("metadata", "name"):
        return role_path + ("name",)
    return role_path


def _template_source(ds: DisaggregatedSet, statefulset: JsonObject, role_path: FieldPath,
                     path: FieldPath) -> FieldPath:
    lws_template_path = role_path + ("spec", "leaderWorkerTemplate")
    if path[:2] == ("spec", "volumeClaimTemplates"):
        return lws_template_path + path[1:]
    if path[:2] != ("spec", "template"):
        return role_path
    role_template = ds.source.data["spec"]["roles"][role_path[2]]["spec"]["leaderWorkerTemplate"]
    template_path = lws_template_path + (template_of(statefulset, role_template),)
    if "topologyKey" in path and ds.placement.exclusive and template_path + path[2:] not in ds.source.lines:
        return ("spec", "placementPolicy", "topology")  # the affinity render adds: its topologyKey
    return template_path + path[2:]


def _rejoin(document: Document, path: FieldPath) -> FieldPath:
    """Put back the dots of keys the server wrote unbracketed: `limits.nvidia.com/gpu` is the
    key "nvidia.com/gpu" when the document has it so."""
    out: FieldPath = ()
    rest = list(path)
    while rest:
        for end in range(len(rest), 0, -1):
            parts = rest[:end]
            words = [part for part in parts if isinstance(part, str)]
            if end > 1 and len(words) != end:
                continue
            key = ".".join(words) if end > 1 else parts[0]
            if out + (key,) in document.lines:
                out, rest = out + (key,), rest[end:]
                break
        else:
            return out + tuple(rest)
    return out


def refusal_problems(ds: DisaggregatedSet, obj: JsonObject, status: JsonObject) -> list[Problem]:
    """One problem per cause of the refusal (or one for the whole refusal), with file and line."""
    subject = f"{str(obj.get('kind', 'object')).lower()}/{(obj.get('metadata') or {}).get('name', '?')}"
    document = ds.source
    message = str(status.get("message") or "").strip() or "refused (no details given)"
    causes = [c for c in ((status.get("details") or {}).get("causes") or ()) if isinstance(c, dict)]
    found = [(c.get("field") or "", str(c.get("message") or c.get("reason") or message)) for c in causes]
    if not any(field for field, _ in found):
        match = _LEADING_FIELD.search(message)
        found = [(match.group(1) if match else "", message)]
    problems = []
    for field, text in found:
        path = _rejoin(document, source_path(ds, obj, field_path(field) if field else ()))
        line = document.line(path) if document.lines else 0  # a set read from the cluster has no lines
        problems.append(Problem(document.file, line, dotted(path),
                                f"refused by the API server ({subject}): {text}"))
    return problems
