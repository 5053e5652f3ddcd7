"""What a rollout is for: the difference between two revisions' records, for people. Pure.

A revision is its roles' LWS specs (`gitops.state.RevisionRecord`); a rollout moves a set from
one to another. People read the change as "the image went from v0.11.0 to v0.11.1, an argument
was added", and reviewers want the lines themselves: `changes` gives both, the summary phrases
and a short unified-diff-like listing of only the fields that differ.

Lists of objects with a `name` (containers, env, ports, volumes) are matched by name, so a
container inserted first does not read as every container changed; lists of plain values
(args, command) are compared item by item.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypedDict

MAX_DIFF_LINES = 40  # a pull request shows a short diff; the full one is `git diff` away
_DROPPED_PREFIX = "leaderWorkerTemplate."  # every role spec's template lives under it


class RecordedRole(Protocol):
    """A role of a revision's record, as `changes` reads it (gitops.state.RoleRecord)."""

    @property
    def name(self) -> str: ...

    @property
    def spec(self) -> Mapping[str, object]: ...


class Record(Protocol):
    """A revision's record, as `changes` reads it (gitops.state.RevisionRecord)."""

    @property
    def revision(self) -> str: ...

    @property
    def roles(self) -> Sequence[RecordedRole]: ...


class Changes(TypedDict):
    summary: list[str]
    diff: list[str]
    truncated: int


def changes(old_records: Sequence[Record], new_record: Record) -> Changes:
    """{"summary": [phrase], "diff": [line], "truncated": n} from each old record to the new one.

    Records are RevisionRecords (revision, placement, roles); roles are matched by name.
    """
    summary: list[str] = []
    lines: list[str] = []
    for old in old_records:
        for phrase, roles in _summaries(old, new_record).items():
            entry = f"{', '.join(roles)}: {phrase}"
            if entry not in summary:
                summary.append(entry)
        lines.extend(_diff_lines(old, new_record, several=len(old_records) > 1))
    truncated = max(0, len(lines) - MAX_DIFF_LINES)
    return {"summary": summary, "diff": lines[:MAX_DIFF_LINES], "truncated": truncated}


def _summaries(old: Record, new: Record) -> dict[str, list[str]]:
    """phrase → roles it applies to, in role order (one phrase for a change every role shares)."""
    out: dict[str, list[str]] = {}
    old_roles = {role.name: role for role in old.roles}
    new_names = [role.name for role in new.roles]
    for role in new.roles:
        before = old_roles.get(role.name)
        phrases = ["role added"] if before is None else [
            _phrase(path, a, b) for path, a, b in field_changes(before.spec, role.spec)]
        for phrase in phrases:  # once per role: its leader's and worker's template often change alike
            if role.name not in out.setdefault(phrase, []):
                out[phrase].append(role.name)
    for name in old_roles:
        if name not in new_names:
            out.setdefault("role removed", []).append(name)
    return out


def _diff_lines(old: Record, new: Record, several: bool) -> list[str]:
    lines = [f" from revision {old.revision}"] if several else []
    old_roles = {role.name: role for role in old.roles}
    new_roles = {role.name: role for role in new.roles}
    for role in new.roles:
        before = old_roles.get(role.name)
        if before is None:
            lines.append(f"+role {role.name}")
            continue
        for path, a, b in field_changes(before.spec, role.spec):
            lines.append(f" {role.name}: {path}")
            if isinstance(a, list) or isinstance(b, list):
                lines.extend(_list_lines(_items(a), _items(b)))
            else:
                if a is not None:
                    lines.append(f"-  {_scalar(a)}")
                if b is not None:
                    lines.append(f"+  {_scalar(b)}")
    lines.extend(f"-role {name}" for name in old_roles if name not in new_roles)
    return lines


def _items(value: object) -> list[Any]:
    """One side of a changed list: its items, none where the side has no list."""
    return value if isinstance(value, list) else []


def _list_lines(a: list[Any], b: list[Any]) -> list[str]:
    """Only the items that changed, in a unified diff's -/+ form."""
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=[_scalar(x) for x in a], b=[_scalar(x) for x in b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        out.extend(f"-  - {_scalar(x)}" for x in a[i1:i2])
        out.extend(f"+  - {_scalar(x)}" for x in b[j1:j2])
    return out


def field_changes(old: Mapping[str, object], new: Mapping[str, object]) -> list[tuple[str, object, object]]:
    """(path, old value, new value) for every leaf that differs; None where a side has none."""
    before, after = flatten(old), flatten(new)
    paths = list(before) + [path for path in after if path not in before]
    return [(path, before.get(path), after.get(path)) for path in paths if before.get(path) != after.get(path)]


def flatten(value: object, path: str = "") -> dict[str, object]:
    """Leaves by dotted path: named objects in lists by `[name]`, lists of plain values whole."""
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for key, item in value.items():
            if key == "replicas" and not path:
                continue  # counts are the rollout's business, not the template's
            child = f"{path}.{key}" if path else str(key)
            out.update(flatten(item, child[len(_DROPPED_PREFIX):] if child.startswith(_DROPPED_PREFIX) else child))
        return out
    if isinstance(value, list):
        if value and all(isinstance(item, Mapping) and isinstance(item.get("name"), str) for item in value):
            out = {}
            for item in value:
                out.update(flatten({k: v for k, v in item.items() if k != "name"}, f"{path}[{item['name']}]"))
            return out
        if all(not isinstance(item, (Mapping, list)) for item in value):
            return {path: list(value)}
        out = {}
        for index, item in enumerate(value):
            out.update(flatten(item, f"{path}[{index}]"))
        return out
    return {path: value}


def _phrase(path: str, a: object, b: object) -> str:
    field = path.rsplit(".", 1)[-1]
    if field == "image" and isinstance(a, str) and isinstance(b, str):
        repository_a, _, tag_a = a.rpartition(":") if ":" in a.rsplit("/", 1)[-1] else (a, "", "")
        repository_b, _, tag_b = b.rpartition(":") if ":" in b.rsplit("/", 1)[-1] else (b, "", "")
        if repository_a == repository_b and tag_a and tag_b:
            return f"image {repository_a} `{tag_a} → {tag_b}`"
        return f"image `{a} → {b}`"
    if isinstance(a, list) or isinstance(b, list):
        old_items, new_items = _items(a), _items(b)
        added = [x for x in new_items if x not in old_items]
        removed = [x for x in old_items if x not in new_items]
        words = []
        if added:
            words.append(f"{field} {_plural(len(added), 'item')} added ({', '.join(f'`{_scalar(x)}`' for x in added)})")
        if removed:
            words.append(f"{field} {_plural(len(removed), 'item')} removed "
                         f"({', '.join(f'`{_scalar(x)}`' for x in removed)})")
        return "; ".join(words) or f"{field} reordered"
    if a is None:
        return f"`{path}` added: `{_scalar(b)}`"
    if b is None:
        return f"`{path}` removed (was `{_scalar(a)}`)"
    return f"`{path}` `{_scalar(a)} → {_scalar(b)}`"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _scalar(value: object) -> str:
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, sort_keys=True, separators=(",", ": "))
    return text.replace("\n", "\\n").replace("`", "'")
