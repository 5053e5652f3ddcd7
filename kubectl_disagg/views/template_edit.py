"""What `rollout restart` prints for each set it changed: which templates it annotated, and that
the rollout replaces every role's groups all the same (the set's revision covers every role's
template, as the upstream controller's does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def restarted(data: Mapping[str, Any], roles: Sequence[str]) -> str:
    """`restarted: decode's pod templates annotated, a new revision; its rollout replaces the
    groups of every role (prefill, decode), not only decode's`."""
    names = [str(role.get("name")) for role in (data.get("spec") or {}).get("roles") or [] if isinstance(role, Mapping)]
    annotated = " and ".join(f"{role}'s" for role in dict.fromkeys(roles)) if roles else "every role's"
    only = f", not only {annotated}" if roles and set(roles) != set(names) else ""
    return (f"restarted: {annotated} pod templates annotated, a new revision; its rollout replaces the groups of "
            f"every role ({', '.join(names)}){only}")
