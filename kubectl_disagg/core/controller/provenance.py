"""Whether a live LeaderWorkerSet is the one its revision renders (issue 34, item 4). Pure.

Labels and a name say which slice, revision and role an LWS stands for; anyone who may create
an LWS can give it ours. Before a pass counts or scales an LWS of the target revision it checks
that the template it carries is the one the set renders for that slice and role (compared as
the API server stores and the controller's revision hashes it: defaults filled in, unknown
fields dropped, quantities canonical). A planted LWS (applied under the next revision's name,
with our labels, another image) or a template patched after it was made fails, and the pass is
refused, naming it, what differs and who else wrote its spec (its field managers).

Who applied an LWS is not itself a reason to refuse: `render | kubectl apply --server-side` and
Argo CD apply exactly what kubectl-disagg renders, under their own field managers. An old
revision's templates are no longer in the set, so its LWS are not checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.render import deep_copy_object, leader_worker_set
from kubectl_disagg.core.api.revision import RevisionInputError, encode_template
from kubectl_disagg.core.controller.snapshot import Snapshot


def unrendered(ds: DisaggregatedSet, snapshot: Snapshot) -> tuple[str, ...]:
    """Why some of the set's LWS at its target revision (managed by us) are not what the set
    renders: one line each."""
    roles = {role.name: role for role in ds.roles}
    reasons = []
    for live in snapshot.lws:
        identity = live.identity
        role = roles.get(identity.role or "")
        if (not live.managed_by_us(ds.name) or identity.revision != ds.revision or role is None
                or identity.slice is None):
            continue  # another's (left alone by reconcile), or the controller's (refused whole)
        obj = snapshot.objects.get((naming.LWS_KIND, live.name)) or {}
        differs = template_difference(obj, leader_worker_set(ds, role, identity.slice, snapshot.namespace))
        if differs:
            writers = foreign_spec_managers(obj)
            by = f"; its spec was also written by {', '.join(writers)}" if writers else ""
            reasons.append(f"leaderworkerset/{live.name} is not the one revision {ds.revision} renders: its "
                           f"template differs ({differs}){by}. Delete it (the next pass makes it again) "
                           "or undo the change")
    return tuple(reasons)


def foreign_spec_managers(obj: Mapping[str, Any]) -> list[str]:
    """The field managers, other than ours, of the object itself that own a field of `spec`
    other than `spec.replicas` (sorted, each once)."""
    found = set()
    for entry in (obj.get("metadata") or {}).get("managedFields") or ():
        if not isinstance(entry, Mapping) or entry.get("subresource") or entry.get("manager") == naming.MANAGER:
            continue
        spec = ((entry.get("fieldsV1") or {}) if isinstance(entry.get("fieldsV1"), Mapping) else {}).get("f:spec")
        if isinstance(spec, Mapping) and any(key != "f:replicas" for key in spec):
            found.add(str(entry.get("manager") or "a manager without a name"))
    return sorted(found)


def template_difference(live: Mapping[str, Any], rendered: Mapping[str, Any]) -> str | None:
    """Where the live LWS's template first differs from the rendered one's (a field path), or
    None when they are the same as the API server stores them."""
    try:
        have = _canonical(live)
    except RevisionInputError as error:
        return f"spec.leaderWorkerTemplate is not a valid template: {error.message}"
    want = _canonical(rendered)
    if have == want:
        return None
    path = next(_first_difference(json.loads(have), json.loads(want), "spec.leaderWorkerTemplate"), None)
    return f"{path or 'spec.leaderWorkerTemplate'} differs"


def _canonical(obj: Mapping[str, Any]) -> bytes:
    template = ((obj.get("spec") or {}) if isinstance(obj.get("spec"), Mapping) else {}).get("leaderWorkerTemplate")
    return encode_template(deep_copy_object(template) if isinstance(template, dict) else {})


def _first_difference(have: Any, want: Any, path: str) -> Iterator[str]:
    if isinstance(have, dict) and isinstance(want, dict):
        for key in [*want, *(k for k in have if k not in want)]:
            if have.get(key) != want.get(key):
                yield from _first_difference(have.get(key), want.get(key), f"{path}.{key}")
                return
    elif isinstance(have, list) and isinstance(want, list) and len(have) == len(want):
        for index, (a, b) in enumerate(zip(have, want)):
            if a != b:
                yield from _first_difference(a, b, f"{path}[{index}]")
                return
    yield path
