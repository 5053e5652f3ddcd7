"""`rollout undo` (design §10.4): which revision to go back to, and the edits that write its
roles' templates back into the set's document. Pure.

The revision hash covers each role's name and template (`leaderWorkerTemplate`, and
`groupIdentity`): writing revision R's back makes the set name R again, and the rollout that
follows is a template change like any other, paced by the set's RolloutPolicy. Replicas,
slices, rollout budgets and the policy stay as they are now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_disagg.core.delivery.history import ABORTED, TEMPLATE_FIELDS, RevisionEntry, Templates, entry_of, known
from kubectl_disagg.core.api.revision import RevisionInputError, spec_revision
from kubectl_disagg.core.api.template_edit import Edit, applied
from kubectl_disagg.manifests.source import REMOVED, FieldPath, JsonObject


@dataclass(frozen=True)
class ByHand:
    """A value undo cannot write in place (an item of a list of another shape): revision
    `revision` has `shown` there (views/history.py `by_hand` words it, and the command that
    shows the template)."""

    revision: str
    shown: str


UndoRefusal = tuple[FieldPath, "str | ByHand"]  # where in the document, and why


def target_of(entries: Sequence[RevisionEntry], current: str, to_revision: str | None) -> RevisionEntry | str:
    """The entry to go back to, or why there is none: `to_revision`'s newest entry, else the
    newest revision other than `current` whose rollout was not aborted (as `kubectl rollout
    undo` goes to the one before)."""
    if to_revision is not None:
        if to_revision == current:
            return f"the set is at revision {to_revision} already"
        return entry_of([e for e in entries if e.templates is not None], to_revision)
    for entry in reversed(entries):
        if entry.revision != current and entry.outcome != ABORTED and entry.templates is not None:
            return entry
    return f"no earlier revision to go back to (revisions: {known(entries)})"


def _roles(data: JsonObject) -> list[Mapping[str, Any]]:
    roles = ((data.get("spec") or {}).get("roles")) or []
    return [role if isinstance(role, Mapping) else {} for role in roles]


def undo_edits(data: JsonObject, templates: Templates, *, whole: bool) -> tuple[list[Edit], list[UndoRefusal]]:
    """The edits that give `data`'s roles `templates`' fields. The roles must be the same, in
    the same order. `whole`: one edit per changed field (a stored set's JSON patch); else the
    smallest edits a file rewritten in place needs (`_leaf_edits`), so the comments and order
    of everything they do not replace stay. Refused unless the set then names the revision
    (`revision_of`): an undo never writes templates of another revision than it says."""
    roles = _roles(data)
    names = [role.get("name") for role in roles]
    wanted = [role.name for role in templates.roles]
    if names != wanted:
        return [], [(("spec", "roles"), f"revision {templates.revision} has the roles {', '.join(wanted)} and the "
                     f"set has {', '.join(str(n) for n in names)}: undo writes templates back, not roles")]
    edits: list[Any] = []
    refusals: list[UndoRefusal] = []
    for index, (role, record) in enumerate(zip(roles, templates.roles)):
        spec = role.get("spec") or {}
        for key in TEMPLATE_FIELDS:
            path: FieldPath = ("spec", "roles", index, "spec", key)
            now, then = spec.get(key), record.spec.get(key)
            if key == "groupIdentity":  # empty is Ordinal (lws#987): the same revision
                now, then = now or "Ordinal", then or "Ordinal"
            if now == then:
                continue
            if whole:
                edits.append((path, then))
            else:
                _leaf_edits(path, now, then, edits, refusals, templates.revision)
    produced = revision_of(applied(data, edits)) if not refusals else templates.revision
    if produced is not None and produced != templates.revision:
        refusals.append((("spec", "roles"), f"the templates recorded for revision {templates.revision} give revision "
                         f"{produced}: the history cannot explain this revision (edited by hand?)"))
    return edits, refusals


def revision_of(data: JsonObject) -> str | None:
    """The revision a set document's roles hash to (None where a template cannot be hashed:
    the set's own validation says why)."""
    try:
        return spec_revision((str(role.get("name")), role.get("spec") or {}) for role in _roles(data))
    except RevisionInputError:
        return None


def _leaf_edits(path: FieldPath, now: Any, then: Any, edits: list[Any], refusals: list[UndoRefusal], revision: str) -> None:
    """The edits that turn `now` into `then` in a file: a text value on its line; a mapping key
    by key (a key `then` lacks removed); a list of mappings item by item; any other difference
    (a list of other items or another length, a number, a mapping for a text) written whole
    at its key, in block style."""
    if now == then:
        return
    if isinstance(then, Mapping) and isinstance(now, Mapping):
        for key in then:
            _leaf_edits(path + (key,), now.get(key), then[key], edits, refusals, revision)
        edits.extend((path + (key,), REMOVED) for key in now if key not in then)
        return
    if (isinstance(then, list) and isinstance(now, list) and len(now) == len(then)
            and all(isinstance(a, Mapping) and isinstance(b, Mapping) for a, b in zip(now, then))):
        for index, (a, b) in enumerate(zip(now, then)):
            _leaf_edits(path + (index,), a, b, edits, refusals, revision)
        return
    if isinstance(path[-1], str):
        edits.append((path, then))
        return
    refusals.append((path, ByHand(revision, _shown(then))))


def _shown(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, Mapping | list):
        return f"a {'mapping' if isinstance(value, Mapping) else 'list'} of {len(value)}"
    return repr(value)
