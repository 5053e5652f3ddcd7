"""The rollout state of a git-driven rollout: what is deployed, kept in git beside the set. Pure.

About 470 lines on purpose: the document's reader and its writer are one format, read beside
each other (every field read is a field written); format 1's upgrade rides with them.

A `RolloutState` document records, per slice, the revisions deployed and the replicas of each
of their roles (and, for old revisions, the replicas they started the rollout with), plus for
every revision the fields that reach its LeaderWorkerSets (role specs, role metadata,
placement), so `render` reproduces an old revision exactly after the set's document moved on.

    apiVersion: kubectl-disagg.x-k8s.io/v1alpha1
    kind: RolloutState
    formatVersion: 2
    metadata: {name: llm, namespace: serving}
    target:                 # the set as the last step saw it: what that step was decided for
      revision: 1a2b3c4d
      slices: 1
      roles:
      - {name: prefill, replicas: 2, maxSurge: 1, maxUnavailable: 0}
    revisions:              # one entry per revision any slice runs
    - revision: 1a2b3c4d
      placementPolicy: {type: None}
      roles:
      - name: prefill
        metadata: {labels: {...}, annotations: {...}}
        scaling: External   # only for External roles
        spec: {...}         # the role's LWS spec (defaults applied), without replicas
    slices:
    - slice: 0
      revisions:
      - revision: 1a2b3c4d
        replicas: {decode: 4, prefill: 2}
        initialReplicas: {decode: 4, prefill: 2}   # old revisions in a rollout only
      previous:             # the slice before the last step ([] = nothing was deployed)
      - revision: 1a2b3c4d
        replicas: {decode: 4, prefill: 2}

`target` (`stepped_for`) and `previous` (format 2) let `render` check that the state is one the planner could
have written (gitops/rules.py, design §8); a format 1 state (`stepped_for` and `previous` None) cannot
be held to them, so render refuses it and the next step, reading the live LWS, writes format 2.

The file `disagg-rollout-state.yaml` beside the sets holds one such document per set (the Argo
CD plugin's `rollout-state` parameter names the same file). `find_state` picks a set's document
and checks it against the set (`parse_state`); `state_document` writes one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeGuard

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api import revision as revision_hash  # `revision` names a revision string here
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.source import Document, FieldPath, JsonObject
from kubectl_disagg.core.api.model import SCALING_EXTERNAL, is_state_document, DisaggregatedSet, Placement, PLACEMENT_NONE
from kubectl_disagg.core.delivery.position import Position, parse_position, position_document
from kubectl_disagg.core.api.rollout_config import IntOrPercentError, resolve_config

FORMAT_VERSION = 2

Counts = Mapping[str, int]  # role → replicas
SliceCounts = dict[int, dict[str, dict[str, int]]]  # slice → revision → role → replicas, as read


@dataclass(frozen=True)
class RoleRecord:
    """What one role of a revision puts into its LWS, besides replicas and the injected labels:
    `spec` is the role's LWS spec with defaults, without replicas."""

    name: str
    spec: Mapping[str, object]
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    external: bool


@dataclass(frozen=True)
class RevisionRecord:
    """One revision: its Placement and a tuple of RoleRecord in spec order."""

    revision: str
    placement: Placement
    roles: tuple[RoleRecord, ...]

    @property
    def role_names(self) -> tuple[str, ...]:
        return tuple(role.name for role in self.roles)

    def role(self, name: str) -> RoleRecord:
        return next(role for role in self.roles if role.name == name)


@dataclass(frozen=True)
class SteppedRole:
    """One role's replicas and resolved rollout budgets (design §6) when the last step was taken."""

    name: str
    replicas: int
    surge: int
    unavailable: int


@dataclass(frozen=True)
class SteppedSet:
    """The set as the last step saw it, the one it was taken for (the state file's `target`):
    its revision, slices and a tuple of SteppedRole."""

    revision: str
    slices: int
    roles: tuple[SteppedRole, ...]

    @classmethod
    def of(cls, ds: DisaggregatedSet) -> SteppedSet:
        roles = []
        for role in ds.roles:
            try:
                config = resolve_config(role.rolling_update, role.replicas)
            except IntOrPercentError:
                config = resolve_config(None, role.replicas)  # validation of the set reports it
            roles.append(SteppedRole(role.name, role.replicas, config.surge, config.unavailable))
        return cls(ds.revision, ds.slices, tuple(roles))


@dataclass(frozen=True)
class Point:
    """One slice's deployment: revision → role → replicas, and the old revisions' initial-replicas."""

    replicas: Mapping[str, Counts]
    initial: Mapping[str, Counts]


@dataclass(frozen=True)
class RolloutState:
    """`revisions`: revision → RevisionRecord; `replicas` and `initial` (initial-replicas of old
    revisions): slice → revision → role → count, revisions in the order they were deployed.
    `stepped_for`: the set the last step was taken for (the file's `target`); `previous`: slice → the Point before it (None: a
    format 1 state, or one built in memory). `source`: the Document read, for line numbers;
    not part of the state (equality ignores it). `position`: where a RolloutPolicy's rollout
    stands (core/delivery/position.py), None without one. `commits`: the step commits written toward
    `stepped_for.revision` so far (0: none recorded, as in a state written before the count was kept),
    so each pull request is numbered over the whole rollout."""

    name: str
    namespace: str
    revisions: Mapping[str, RevisionRecord]
    replicas: Mapping[int, Mapping[str, Counts]]
    initial: Mapping[int, Mapping[str, Counts]]
    stepped_for: SteppedSet | None = None
    previous: Mapping[int, Point] | None = None
    source: Document | None = field(default=None, compare=False)
    position: Position | None = None
    commits: int = 0

    def deployed(self, slice_index: int) -> Mapping[str, Counts]:
        return self.replicas.get(slice_index, {})


def record_from_set(ds: DisaggregatedSet) -> RevisionRecord:
    """The record of the set's own revision, as its document says it today."""
    roles = tuple(RoleRecord(role.name, {k: v for k, v in role.spec.items() if k != "replicas"},
                             dict(role.labels), dict(role.annotations), role.external) for role in ds.roles)
    return RevisionRecord(ds.revision, ds.placement, roles)


def record_revision(record: RevisionRecord) -> str:
    """The revision a record's role templates hash to (design §2), to check it names itself rightly."""
    return revision_hash.spec_revision((role.name, role.spec) for role in record.roles)


# --- writing ----------------------------------------------------------------------------------


def state_document(state: RolloutState) -> JsonObject:
    """The state as a YAML-ready document (write it with output.to_yaml)."""
    used = [rev for rev in state.revisions if any(rev in state.deployed(s) for s in state.replicas)]
    slices = []
    for slice_index in sorted(state.replicas):
        entry: JsonObject = {"slice": slice_index,
                       "revisions": _point_document(state.replicas[slice_index], state.initial.get(slice_index, {}))}
        previous = (state.previous or {}).get(slice_index)
        if previous is not None:
            entry["previous"] = _point_document(previous.replicas, previous.initial)
        slices.append(entry)
    document = {
        "apiVersion": naming.PLUGIN_API_VERSION,
        "kind": naming.STATE_KIND,
        "formatVersion": FORMAT_VERSION,
        "metadata": {"name": state.name, "namespace": state.namespace},
    }
    if state.stepped_for is not None:
        document["target"] = {"revision": state.stepped_for.revision, "slices": state.stepped_for.slices,
                              "roles": [{"name": r.name, "replicas": r.replicas, "maxSurge": r.surge,
                                         "maxUnavailable": r.unavailable} for r in state.stepped_for.roles]}
    document["revisions"] = [_record_document(state.revisions[rev]) for rev in used]
    document["slices"] = slices
    if state.position is not None:
        document["position"] = position_document(state.position)
    if state.commits:
        document["commits"] = state.commits
    return document


def _point_document(replicas: Mapping[str, Counts], initial: Mapping[str, Counts]) -> list[JsonObject]:
    entries = []
    for revision, counts in replicas.items():
        entry: JsonObject = {"revision": revision, "replicas": dict(counts)}
        if initial.get(revision):
            entry["initialReplicas"] = dict(initial[revision])
        entries.append(entry)
    return entries


def _record_document(record: RevisionRecord) -> JsonObject:
    placement = {"type": record.placement.type}
    if record.placement.topology is not None:
        placement["topology"] = record.placement.topology
    roles = []
    for role in record.roles:
        entry: JsonObject = {"name": role.name, "spec": role.spec}
        metadata = {k: dict(v) for k, v in (("labels", role.labels), ("annotations", role.annotations)) if v}
        if metadata:
            entry["metadata"] = metadata
        if role.external:
            entry["scaling"] = {"mode": SCALING_EXTERNAL}
        roles.append(entry)
    return {"revision": record.revision, "placementPolicy": placement, "roles": roles}


# --- reading ----------------------------------------------------------------------------------


def find_state(documents: list[Document], ds: DisaggregatedSet, namespace: str) -> RolloutState | None:
    """The state of `ds` among the documents of a state file (None when it has none), checked."""
    mine = [d for d in documents if isinstance(d.data, dict) and (d.data.get("metadata") or {}).get("name") == ds.name]
    others = [d for d in documents
              if d not in mine and not (isinstance(d.data, dict) and d.data.get("kind") == naming.STATE_KIND)]
    problems = [Problem(d.file, d.line(("kind",)), "kind",
                        f"a rollout state file holds only {naming.STATE_KIND} documents") for d in others]
    if len(mine) > 1:
        problems.append(Problem(mine[1].file, mine[1].line(("metadata", "name")), "metadata.name",
                                f"a second rollout state for disaggregatedset/{ds.name}"))
    if problems:
        raise UserError(problems)
    return parse_state(mine[0], ds, namespace) if mine else None


def unmatched_states(documents: list[Document], sets: list[tuple[str, str]]) -> list[Problem]:
    """State documents of a directory that belong to none of its sets (`sets`: name, namespace):
    design §8 rule 1. A state left behind, or renamed by hand, would otherwise be ignored while its
    set renders its steady state."""
    problems = []
    names = {name for name, _ in sets}
    for document in documents:
        if not is_state_document(document.data):
            continue
        metadata = document.data.get("metadata") if isinstance(document.data.get("metadata"), dict) else {}
        name, namespace = metadata.get("name"), metadata.get("namespace")
        if (name, namespace) in sets:
            continue
        where = "metadata.name" if name not in names else "metadata.namespace"
        problems.append(Problem(document.file, document.line(("metadata", where.split(".")[1])), where,
                                f"a rollout state for disaggregatedset/{name} in namespace {namespace}, which is "
                                "not a set of this directory (rule: every state matches a set; rename or "
                                "delete it)"))
    return problems


MISSING_STATE = ("no rollout state (expected {file} beside it): rendering its steady state would replace every "
                 "running revision in one sync. Create it with `kubectl disagg rollout state init -f DIR` "
                 "(nothing deployed yet) or `kubectl disagg rollout step --gitops -f DIR` (adopts what runs)")


def parse_state(document: Document, ds: DisaggregatedSet, namespace: str) -> RolloutState:
    """The state in `document`, checked against the set it belongs to; every problem at once."""
    reader = _Reader(document)
    data = document.data
    if not isinstance(data, dict):
        reader.fail((), "", "a RolloutState document must be a mapping")
        reader.raise_if_failed()
    if data.get("apiVersion") != naming.PLUGIN_API_VERSION or data.get("kind") != naming.STATE_KIND:
        reader.fail(("kind",), "kind", f"expected apiVersion {naming.PLUGIN_API_VERSION} and kind "
                    f"{naming.STATE_KIND}, got {data.get('apiVersion')!r} and {data.get('kind')!r}")
        reader.raise_if_failed()
    version = data.get("formatVersion")
    if not _is_count(version) or version < 1:
        reader.fail(("formatVersion",), "formatVersion", f"must be a positive integer, got {version!r}")
    elif version > FORMAT_VERSION:
        reader.fail(("formatVersion",), "formatVersion",
                    f"written by a newer kubectl-disagg (format {version}); this one reads format "
                    f"{FORMAT_VERSION}: upgrade kubectl-disagg")
    reader.raise_if_failed()
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    if metadata.get("name") != ds.name:
        reader.fail(("metadata", "name"), "metadata.name",
                    f"this state belongs to {metadata.get('name')!r}, not disaggregatedset/{ds.name}")
    if metadata.get("namespace") != namespace:
        reader.fail(("metadata", "namespace"), "metadata.namespace",
                    f"this state is for namespace {metadata.get('namespace')!r}, not {namespace!r}")
    revisions = _read_revisions(reader, data.get("revisions"))
    replicas, initial, previous = _read_slices(reader, data.get("slices"), revisions)
    stepped_for = _read_stepped_for(reader, data.get("target")) if version == 2 else None
    position = None
    if data.get("position") is not None:
        position, problems = parse_position(data["position"], document.file, document.line)
        reader.problems.extend(problems)
    commits = data.get("commits", 0)
    if not _is_count(commits) or commits < 0:
        reader.fail(("commits",), "commits", f"must be a non-negative integer, got {commits!r}")
    if version == 2 and "target" not in data:
        reader.fail((), "target", "a format 2 state records the set its last step was taken for: "
                    "write it with `kubectl disagg rollout step --gitops` or `rollout state init`")
    reader.raise_if_failed()
    if version == 2:
        missing = sorted(s for s in replicas if s not in previous)
        for slice_index in missing:
            reader.fail(("slices",), f"slices[slice {slice_index}].previous",
                        "a format 2 state records each slice's point before the last step (`previous`)")
        reader.raise_if_failed()
    return RolloutState(ds.name, namespace, revisions, replicas, initial, stepped_for,
                        previous if version == 2 else None, document, position, commits)


class _Reader:
    def __init__(self, document: Document):
        self.document = document
        self.problems: list[Problem] = []

    def fail(self, path: FieldPath, dotted: str, message: str) -> None:
        self.problems.append(Problem(self.document.file, self.document.line(path), dotted, message))

    def raise_if_failed(self) -> None:
        if self.problems:
            raise UserError(self.problems)


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _dotted(path: FieldPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _read_revisions(reader: _Reader, raw: object) -> dict[str, RevisionRecord]:
    records: dict[str, RevisionRecord] = {}
    if not isinstance(raw, list):
        reader.fail(("revisions",), "revisions", "must be a list of revision records")
        return records
    for index, entry in enumerate(raw):
        path = ("revisions", index)
        if not isinstance(entry, dict) or not isinstance(entry.get("revision"), str):
            reader.fail(path, _dotted(path), "needs a revision (string) and roles")
            continue
        placement_raw = entry.get("placementPolicy") or {}
        placement = Placement(placement_raw.get("type") or PLACEMENT_NONE, placement_raw.get("topology"))
        roles = []
        raw_roles = entry.get("roles")
        if not isinstance(raw_roles, list) or not raw_roles:
            reader.fail(path + ("roles",), _dotted(path + ("roles",)), "must list the revision's roles")
            continue
        for role_index, role in enumerate(raw_roles):
            role_path = path + ("roles", role_index)
            if (not isinstance(role, dict) or not isinstance(role.get("name"), str)
                    or not isinstance(role.get("spec"), dict)
                    or not isinstance(role["spec"].get("leaderWorkerTemplate"), dict)):
                reader.fail(role_path, _dotted(role_path), "needs a name and a spec with a leaderWorkerTemplate")
                continue
            metadata = role.get("metadata") or {}
            roles.append(RoleRecord(role["name"], role["spec"], dict(metadata.get("labels") or {}),
                                    dict(metadata.get("annotations") or {}),
                                    (role.get("scaling") or {}).get("mode") == SCALING_EXTERNAL))
        record = RevisionRecord(entry["revision"], placement, tuple(roles))
        if len(roles) == len(raw_roles) and record_revision(record) != record.revision:
            reader.fail(path + ("revision",), _dotted(path + ("revision",)),
                        f"the role templates recorded here hash to revision {record_revision(record)}, not "
                        f"{record.revision}: the state cannot explain this revision (edited by hand?)")
        records[record.revision] = record
    return records


def _read_slices(reader: _Reader, raw: object, records: Mapping[str, RevisionRecord]
                 ) -> tuple[SliceCounts, SliceCounts, dict[int, Point]]:
    replicas: SliceCounts = {}
    initial: SliceCounts = {}
    previous: dict[int, Point] = {}
    if not isinstance(raw, list):
        reader.fail(("slices",), "slices", "must be a list of slices")
        return replicas, initial, previous
    for index, entry in enumerate(raw):
        path = ("slices", index)
        slice_index = entry.get("slice") if isinstance(entry, dict) else None
        if not _is_count(slice_index) or slice_index < 0 or slice_index in replicas:
            reader.fail(path + ("slice",), _dotted(path + ("slice",)), "must be a slice index, once per slice")
            continue
        replicas[slice_index], initial[slice_index] = {}, {}
        for rev_index, deployed in enumerate(entry.get("revisions") or []):
            rev_path = path + ("revisions", rev_index)
            revision = deployed.get("revision") if isinstance(deployed, dict) else None
            record = records.get(revision) if isinstance(revision, str) else None  # (a list is no key)
            if not isinstance(revision, str) or record is None:
                reader.fail(rev_path + ("revision",), _dotted(rev_path + ("revision",)),
                            f"revision {revision!r} has no record under revisions: the state cannot explain it")
                continue
            for key, into in (("replicas", replicas), ("initialReplicas", initial)):
                counts = deployed.get(key)
                if counts is None and key == "initialReplicas":
                    continue
                key_path = rev_path + (key,)
                if not isinstance(counts, dict) or set(counts) != set(record.role_names):
                    reader.fail(key_path, _dotted(key_path),
                                f"must give a count for each role of revision {revision}: "
                                f"{', '.join(record.role_names)}")
                    continue
                bad = [role for role, n in counts.items() if not _is_count(n) or n < 0]
                for role in bad:
                    reader.fail(key_path + (role,), _dotted(key_path + (role,)), "must be a count (0 or more)")
                if not bad:
                    into[slice_index][revision] = {role: counts[role] for role in record.role_names}
        if "previous" in entry:
            point = _read_point(reader, path + ("previous",), entry.get("previous"))
            if point is not None:
                previous[slice_index] = point
    return replicas, {s: v for s, v in initial.items() if v}, previous


def _read_point(reader: _Reader, path: FieldPath, raw: object) -> Point | None:
    """A slice's point before the last step: revisions need no record here (a removed one has none)."""
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        reader.fail(path, _dotted(path), "must be a list of revisions with their replicas")
        return None
    replicas: dict[str, dict[str, int]] = {}
    initial: dict[str, dict[str, int]] = {}
    for index, deployed in enumerate(raw):
        entry_path = path + (index,)
        revision = deployed.get("revision") if isinstance(deployed, dict) else None
        if not isinstance(revision, str) or revision in replicas:
            reader.fail(entry_path, _dotted(entry_path), "needs a revision (string), once")
            continue
        for key, into in (("replicas", replicas), ("initialReplicas", initial)):
            counts = deployed.get(key)
            if counts is None and key == "initialReplicas":
                continue
            if (not isinstance(counts, dict) or not counts
                    or not all(isinstance(k, str) and _is_count(n) and n >= 0 for k, n in counts.items())):
                reader.fail(entry_path + (key,), _dotted(entry_path + (key,)), "must map each role to a count (0 or more)")
                continue
            into[revision] = dict(counts)
    return Point(replicas, initial)


def _read_stepped_for(reader: _Reader, raw: object) -> SteppedSet | None:
    path = ("target",)
    if not isinstance(raw, dict):
        return None  # reported by the caller
    revision, slices, roles_raw = raw.get("revision"), raw.get("slices"), raw.get("roles")
    if not isinstance(revision, str):
        reader.fail(path + ("revision",), "target.revision", "must be the revision the last step rolled to")
    if not _is_count(slices) or slices < 0:
        reader.fail(path + ("slices",), "target.slices", "must be a count of slices")
    roles = []
    if not isinstance(roles_raw, list) or not roles_raw:
        reader.fail(path + ("roles",), "target.roles", "must list each role's replicas, maxSurge and maxUnavailable")
        return None
    for index, role in enumerate(roles_raw):
        role_path = path + ("roles", index)
        values = [role.get(k) for k in ("replicas", "maxSurge", "maxUnavailable")] if isinstance(role, dict) else []
        counts = [v for v in values if _is_count(v) and v >= 0]
        if not isinstance(role, dict) or not isinstance(role.get("name"), str) or len(counts) != 3:
            reader.fail(role_path, _dotted(role_path), "needs a name and counts replicas, maxSurge, maxUnavailable")
            continue
        roles.append(SteppedRole(role["name"], *counts))
    if len(roles) != len(roles_raw) or not isinstance(revision, str) or not _is_count(slices):
        return None
    return SteppedSet(revision, slices, tuple(roles))
