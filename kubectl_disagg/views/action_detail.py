"""What one action of a dry run does to its object, drawn: the whole object a create makes
(YAML), the unified diff of a change (`--- kind/name (live)`, `+++ kind/name (after this
step)`), and the same change as an RFC 6902 JSON patch for `-o json|yaml` readers.

Drawn from the objects a `stepper.PlannedAction` carries (`before`, `after`): nothing is read
here. managedFields, which nobody reads in a diff, are left out of both pictures. Pure.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

import jsonpatch

from kubectl_disagg.core.controller.render import deep_copy_object
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.manifests.writer import to_yaml
from kubectl_disagg.rollout.stepper import PlannedAction


def action_detail(planned: PlannedAction) -> str | None:
    """The object a create makes, or the diff of a change; None when there is nothing to show
    (a delete, or a pass that was not a dry run)."""
    if planned.after is None:
        return None
    if planned.before is None:
        return to_yaml(dict(planned.after))
    subject = f"{planned.action.kind.lower()}/{planned.action.name}"
    return "".join(difflib.unified_diff(
        to_yaml(_displayed(planned.before)).splitlines(keepends=True),
        to_yaml(_displayed(planned.after)).splitlines(keepends=True),
        f"{subject} (live)", f"{subject} (after this step)"))


def action_patch(planned: PlannedAction) -> list[JsonObject] | None:
    """A change as an RFC 6902 JSON patch from the live object; None for a create (and when
    there is no change to show)."""
    if planned.before is None or planned.after is None:
        return None
    return jsonpatch.make_patch(_displayed(planned.before), _displayed(planned.after)).patch


def _displayed(obj: Mapping[str, Any]) -> JsonObject:
    """A copy without managedFields."""
    shown = deep_copy_object(obj)
    shown["metadata"] = {k: v for k, v in (shown.get("metadata") or {}).items() if k != "managedFields"}
    return shown
