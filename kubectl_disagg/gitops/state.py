"""The rollout state of a git-driven rollout: what is deployed, kept in git beside the set. Pure.

A `RolloutState` document records, per slice, the revisions deployed and the replicas of each
of their roles (and, for old revisions, the replicas they started the rollout with), plus for
every revision the fields that reach its LeaderWorkerSets (role specs, role metadata,
placement), so `render` reproduces an old revision exactly after the set's document moved on.

    apiVersion: kubectl-disagg.x-k8s.io/v1alpha1
    kind: RolloutState
    formatVersion: 1
    metadata: {name: llm, namespace: serving}
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

The file `disagg-rollout-state.yaml` beside the sets holds one such document per set (the Argo
CD plugin's `rollout-state` parameter names the same file). `find_state` picks a set's document
and checks it against the set (`parse_state`); `state_document` writes one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

from kubectl_disagg.core import revision as revision_hash  # `revision` names a revision string here
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.source import Document
from kubectl_disagg.core.model import SCALING_EXTERNAL, DisaggregatedSet, Placement, PLACEMENT_NONE
from kubectl_disagg.core.rollout_config import IntOrPercentError, resolve_config

API_VERSION = "kubectl-disagg.x-k8s.io/v1alpha1"
KIND = "RolloutState"
FORMAT_VERSION = 1
STATE_FILE = "disagg-rollout-state.yaml"  # beside the sets, one RolloutState document per set

Counts = Mapping[str, int]  # role → replicas


def is_state_document(data: object) -> bool:
    return isinstance(data, dict) and data.get("kind") == KIND and data.get("apiVersion") == API_VERSION


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
class RolloutState:
    """`revisions`: revision → RevisionRecord; `replicas` and `initial` (initial-replicas of old
    revisions): slice → revision → role → count, revisions in the order they were deployed."""

    name: str
    namespace: str
    revisions: Mapping[str, RevisionRecord]
    replicas: Mapping[int, Mapping[str, Counts]]
    initial: Mapping[int, Mapping[str, Counts]]

    def deployed(self, slice_index: int) -> Mapping[str, Counts]:
        return self.replicas.get(slice_index, {})


def record_from_set(ds: DisaggregatedSet) -> RevisionRecord:
    """The record of the set's own revision, as its document says it today."""
    roles = tuple(RoleRecord(role.name, {k: v for k, v in role.spec.items() if k != "replicas"},
                             dict(role.labels), dict(role.annotations), role.external) for role in ds.roles)
    return RevisionRecord(ds.revision, ds.placement, roles)


def record_revision(record: RevisionRecord) -> str:
    """The revision a record's role templates hash to (spec §2), to check it names itself rightly."""
    return revision_hash.compute_revision([(role.name, revision_hash.fill_defaults(copy.deepcopy(
        role.spec.get("leaderWorkerTemplate") or {}))) for role in record.roles])


# --- writing ----------------------------------------------------------------------------------


def state_document(state: RolloutState) -> dict:
    """The state as a YAML-ready document (write it with output.to_yaml)."""
    used = [rev for rev in state.revisions if any(rev in state.deployed(s) for s in state.replicas)]
    slices = []
    for slice_index in sorted(state.replicas):
        entries = []
        for revision, counts in state.replicas[slice_index].items():
            entry: dict = {"revision": revision, "replicas": dict(counts)}
            initial = state.initial.get(slice_index, {}).get(revision)
            if initial:
                entry["initialReplicas"] = dict(initial)
            entries.append(entry)
        slices.append({"slice": slice_index, "revisions": entries})
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "formatVersion": FORMAT_VERSION,
        "metadata": {"name": state.name, "namespace": state.namespace},
        "revisions": [_record_document(state.revisions[rev]) for rev in used],
        "slices": slices,
    }


def _record_document(record: RevisionRecord) -> dict:
    placement = {"type": record.placement.type}
    if record.placement.topology is not None:
        placement["topology"] = record.placement.topology
    roles = []
    for role in record.roles:
        entry: dict = {"name": role.name, "spec": role.spec}
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
    others = [d for d in documents if d not in mine and not (isinstance(d.data, dict) and d.data.get("kind") == KIND)]
    problems = [Problem(d.file, d.line(("kind",)), "kind", f"a rollout state file holds only {KIND} documents")
                for d in others]
    if len(mine) > 1:
        problems.append(Problem(mine[1].file, mine[1].line(("metadata", "name")), "metadata.name",
                                f"a second rollout state for disaggregatedset/{ds.name}"))
    if problems:
        raise UserError(problems)
    return parse_state(mine[0], ds, namespace) if mine else None


def parse_state(document: Document, ds: DisaggregatedSet, namespace: str) -> RolloutState:
    """The state in `document`, checked against the set it belongs to; every problem at once."""
    reader = _Reader(document)
    data = document.data
    if not isinstance(data, dict):
        reader.fail((), "", "a RolloutState document must be a mapping")
        reader.raise_if_failed()
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        reader.fail(("kind",), "kind", f"expected apiVersion {API_VERSION} and kind {KIND}, got "
                    f"{data.get('apiVersion')!r} and {data.get('kind')!r}")
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
    replicas, initial = _read_slices(reader, data.get("slices"), revisions)
    reader.raise_if_failed()
    state = RolloutState(ds.name, namespace, revisions, replicas, initial)
    _check_counts(reader, state, ds)
    reader.raise_if_failed()
    return state


class _Reader:
    def __init__(self, document: Document):
        self.document, self.problems = document, []

    def fail(self, path: tuple, dotted: str, message: str) -> None:
        self.problems.append(Problem(self.document.file, self.document.line(path), dotted, message))

    def raise_if_failed(self) -> None:
        if self.problems:
            raise UserError(self.problems)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dotted(path: tuple) -> str:
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


def _read_slices(reader: _Reader, raw: object, records: Mapping[str, RevisionRecord]):
    replicas: dict[int, dict[str, dict[str, int]]] = {}
    initial: dict[int, dict[str, dict[str, int]]] = {}
    if not isinstance(raw, list):
        reader.fail(("slices",), "slices", "must be a list of slices")
        return replicas, initial
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
            record = records.get(revision)
            if record is None:
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
    return replicas, {s: v for s, v in initial.items() if v}


def _check_counts(reader: _Reader, state: RolloutState, ds: DisaggregatedSet) -> None:
    """Counts a hand edit could break: a group split across 0, a role over its surge bound."""
    lines = _slice_paths(reader.document)
    for slice_index, deployed in state.replicas.items():
        for revision, counts in deployed.items():
            values = list(counts.values())
            if any(v == 0 for v in values) and any(v > 0 for v in values):
                path = lines.get((slice_index, revision), ("slices",)) + ("replicas",)
                reader.fail(path, _dotted(path), f"slice {slice_index} revision {revision} has some roles at 0 "
                            f"and others running ({_counts(counts)}): a revision group runs all its roles or none")
        if set(deployed) <= {ds.revision}:
            continue  # at rest: the set's own replicas apply (scaling is direct)
        for role in ds.roles:
            if role.external:
                continue  # an autoscaler sizes it
            total = sum(counts.get(role.name, 0) for counts in deployed.values())
            # What the old revisions started the rollout with (their count, before it starts).
            started = sum(state.initial.get(slice_index, {}).get(rev, {}).get(role.name, counts.get(role.name, 0))
                          for rev, counts in deployed.items() if rev != ds.revision)
            try:
                surge = resolve_config(role.rolling_update, role.replicas).surge
            except IntOrPercentError:
                continue  # validation of the set reports it
            ceiling = max(role.replicas, started) + max(surge, 1)
            if total > ceiling:
                first = next(iter(deployed))
                path = lines.get((slice_index, first), ("slices",)) + ("replicas", role.name)
                reader.fail(path, _dotted(path), f"slice {slice_index} runs {total} replicas of {role.name} across "
                            f"its revisions, more than its target {role.replicas} plus surge allows ({ceiling})")


def _slice_paths(document: Document) -> dict[tuple[int, str], tuple]:
    """(slice, revision) → the field path of its entry, for line numbers."""
    paths = {}
    for index, entry in enumerate(document.data.get("slices") or []):
        for rev_index, deployed in enumerate(entry.get("revisions") or []):
            paths[(entry.get("slice"), deployed.get("revision"))] = ("slices", index, "revisions", rev_index)
    return paths


def _counts(counts: Counts) -> str:
    return ", ".join(f"{role} {n}" for role, n in counts.items())
