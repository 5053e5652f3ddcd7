"""A set's revision history (design §10.3): the revisions it has run, each with who started it
and when, how its rollout ended, and its roles' templates (what `rollout undo` writes back).

Two sources give the same entries: git (`gitops/history.py`: the commits of the set's file and
of its state file) and the cluster, where `rollout step` and the verbs keep a bounded list in
the set's RolloutState object (`history`, newest last, `revisionHistoryLimit` entries, 10 by
default). This module holds the entry, the cluster list's rules (`advance`) and its reading
(`entries`). Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.api.revision import RevisionInputError, spec_revision
from kubectl_disagg.manifests.source import FieldPath

COMPLETE, ABORTED, REPLACED, ROLLING = "complete", "aborted", "replaced", "rolling"
HISTORY_LIMIT = 10
TEMPLATE_FIELDS = ("leaderWorkerTemplate", "groupIdentity")  # what a role's revision hash covers


@dataclass(frozen=True)
class Commit:
    """Where and when something was recorded, by whom: a git commit (`sha`, its author, its
    author date, its subject), or in the cluster a RolloutState write (no sha, no subject)."""

    sha: str
    author: str
    date: str  # RFC 3339
    subject: str


@dataclass(frozen=True)
class RoleTemplate:
    """One role of a revision as the set's document writes it: `spec` holds the fields the
    revision hash covers (TEMPLATE_FIELDS), as written."""

    name: str
    spec: Mapping[str, Any]


@dataclass(frozen=True)
class Templates:
    """A revision's roles' templates, in the set's order (what the template diff compares)."""

    revision: str
    roles: tuple[RoleTemplate, ...]


@dataclass(frozen=True)
class RevisionEntry:
    """One revision the set ran: where it `started`, its roles' templates (`record`) and the
    ones before (`before`, None for the first), and how its rollout ended: `outcome` COMPLETE,
    ABORTED (`by` whom and `why`, as the position recorded it), REPLACED (the next template
    change came first) or ROLLING (still under way), at `ended`. `back`: the revision ran
    before, so this rollout returns to it (a rollback)."""

    revision: str
    started: Commit
    record: Any  # Templates, or (git) the state file's RevisionRecord: .revision, .roles[i].name/.spec
    before: Any | None
    outcome: str = ROLLING
    ended: Commit | None = None
    by: str = ""
    why: str = ""
    back: bool = False
    templates: Templates | None = field(default=None, compare=False)  # as written: what undo writes back
    retry: bool = False  # a `rollout retry` started the aborted revision again


def templates_of(ds: DisaggregatedSet) -> Templates:
    """The set's roles' templates as its document writes them."""
    raw = ((ds.source.data or {}).get("spec") or {}).get("roles") or []
    by_name = {role.get("name"): role.get("spec") or {} for role in raw if isinstance(role, Mapping)}
    return Templates(ds.revision, tuple(
        RoleTemplate(role.name, {key: by_name.get(role.name, {})[key] for key in TEMPLATE_FIELDS
                                 if by_name.get(role.name, {}).get(key) is not None}) for role in ds.roles))


# --- the cluster's list (RolloutState.history) -------------------------------------------------


def limit_of(stored: Mapping[str, Any] | None) -> int:
    """The RolloutState's revisionHistoryLimit (HISTORY_LIMIT when unset or not a count >= 1)."""
    value = (stored or {}).get("revisionHistoryLimit")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else HISTORY_LIMIT


def history_of(stored: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The entries a RolloutState holds, oldest first (what is not an entry is dropped)."""
    raw = (stored or {}).get("history")
    return [dict(entry) for entry in raw if isinstance(entry, Mapping) and isinstance(entry.get("revision"), str)] \
        if isinstance(raw, list) else []


def forged(stored: Mapping[str, Any] | None) -> list[tuple[FieldPath, str]]:
    """The entries of a RolloutState whose recorded roles' templates do not hash to their
    revision (an entry edited by hand): (path, message) each. Such an entry is neither shown nor
    written back, as a position the planner could not have written is not read (design §9.6)."""
    raw = (stored or {}).get("history")
    found: list[tuple[FieldPath, str]] = []
    for index, entry in enumerate(raw if isinstance(raw, list) else ()):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("revision"), str):
            continue
        roles = [(str(role.get("name")), role) for role in entry.get("roles") or () if isinstance(role, Mapping)]
        try:
            hashed = f"hash to revision {spec_revision(roles)}"
        except RevisionInputError as error:
            hashed = f"cannot be hashed ({error.message})"
        if not hashed.endswith(f" {entry['revision']}"):
            found.append((("history", index, "revision"), f"the role templates recorded here {hashed}, not "
                          f"{entry['revision']} (edited by hand?): this entry cannot be shown or rolled back to"))
    return found


def advance(history: Sequence[Mapping[str, Any]], ds: DisaggregatedSet, *, now: str, who: Callable[[], str],
            complete: bool, aborted: Any = None, retried: Any = None, limit: int = HISTORY_LIMIT,
            mark: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """`history` after a pass over `ds`: a new entry when its revision is not the newest one's
    (that one, still rolling, REPLACED), started `now` by `who()` (asked only then), or when
    `retried` (a Stamp: at, by, reason) started the newest, aborted one again; the newest entry
    COMPLETE once the set is `complete`, or ABORTED once `aborted` (a Stamp) records an abort of
    it. The oldest entries beyond `limit` are dropped. `mark`: more of where each start or end
    written was recorded (git's `commit` and `subject`; the cluster has none). The one model of
    both stores: git's history (gitops/history.py) is its commits replayed through it."""
    out: list[dict[str, Any]] = [dict(entry) for entry in history]
    mark = dict(mark or {})
    if (out and retried is not None and out[-1].get("revision") == ds.revision and out[-1].get("outcome") == ABORTED
            and retried.at >= str((out[-1].get("ended") or {}).get("at") or "")):
        out.append({"revision": ds.revision, "roles": out[-1].get("roles") or [],
                    "started": {"at": retried.at, "by": retried.by, **mark}, "outcome": ROLLING, "retry": True,
                    **({"retryReason": retried.reason} if retried.reason else {})})
    if not out or out[-1].get("revision") != ds.revision:
        if out and out[-1].get("outcome") == ROLLING:
            out[-1] = {**out[-1], "outcome": REPLACED, "ended": {"at": now, **mark}}
        seen = any(entry.get("revision") == ds.revision for entry in out)
        entry: dict[str, Any] = {"revision": ds.revision,
                       "roles": [{"name": role.name, **dict(role.spec)} for role in templates_of(ds).roles],
                       "started": {"at": now, "by": who(), **mark}, "outcome": ROLLING}
        if seen:
            entry["rollback"] = True
        out.append(entry)
    newest = out[-1]
    if newest.get("outcome") == ROLLING:
        if aborted is not None:
            out[-1] = {**newest, "outcome": ABORTED, "ended": {"at": aborted.at, **mark}, "by": aborted.by,
                       **({"reason": aborted.reason} if aborted.reason else {})}
        elif complete:
            out[-1] = {**newest, "outcome": COMPLETE, "ended": {"at": now, **mark}}
    return out[-len(out) if len(out) <= limit else -limit:]


def going_back(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]], revision: str) -> bool:
    """Whether a pass that took the history from `before` to `after` rolls the set back to a
    revision it ran before (an undo, or a revert after completion): the newest entry is that
    revision's, marked a rollback, and it was rolling before the pass or still is."""
    if not after or after[-1].get("revision") != revision or not after[-1].get("rollback"):
        return False
    was = before[-1] if before and before[-1].get("revision") == revision else None
    return after[-1].get("outcome") == ROLLING or (was is not None and was.get("outcome") == ROLLING)


def entries(history: Sequence[Mapping[str, Any]]) -> list[RevisionEntry]:
    """The cluster list read as entries, oldest first (each diffed against the one before)."""
    out: list[RevisionEntry] = []
    for raw in history:
        roles = tuple(RoleTemplate(str(role.get("name")), {k: role[k] for k in TEMPLATE_FIELDS if k in role})
                      for role in raw.get("roles") or () if isinstance(role, Mapping))
        record = Templates(str(raw["revision"]), roles)
        started: Mapping[str, Any] = raw["started"] if isinstance(raw.get("started"), Mapping) else {}
        ended: Mapping[str, Any] | None = raw["ended"] if isinstance(raw.get("ended"), Mapping) else None
        out.append(RevisionEntry(
            record.revision, _commit(started, str(started.get("by") or "")), record,
            out[-1].record if out else None, str(raw.get("outcome") or ROLLING),
            _commit(ended, "") if ended else None, str(raw.get("by") or ""),
            str(raw.get("reason") or ""), bool(raw.get("rollback")), record, bool(raw.get("retry"))))
    return out


def entry_of(entries: Sequence[RevisionEntry], revision: str) -> RevisionEntry | str:
    """`revision`'s newest entry (`rollout history --revision`, `rollout undo --to-revision`),
    or why there is none."""
    found = [entry for entry in entries if entry.revision == revision]
    return found[-1] if found else f"no revision {revision} in its history (revisions: {known(entries)})"


def known(entries: Sequence[RevisionEntry]) -> str:
    """The revisions of a history, newest first, each once ("none" for an empty one)."""
    return ", ".join(dict.fromkeys(entry.revision for entry in reversed(entries))) or "none"


def _commit(mark: Mapping[str, Any], author: str) -> Commit:
    """A start or end as written (`at`, and through git `commit` and `subject`)."""
    return Commit(str(mark.get("commit") or ""), author, str(mark.get("at") or ""), str(mark.get("subject") or ""))
