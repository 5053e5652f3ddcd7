"""A RolloutPolicy's rollout against the cluster (design §9): the position kept in the set's
RolloutState object, read before each pass and written when the decision moved it.

`Progressive.admit` is what `stepper.drive` calls for each pass (for a set without a policy it
only brings a RolloutState a removed policy left behind to the truth, `unpaced`): it reads the RolloutState
(a GET), decides (core/delivery/waves.py) with the clock it was given, writes the position back when it
changed (a create, or a PUT pinned to the resourceVersion read: a promote in between is a
conflict, never lost), records the decision's Events, and hands reconcile the slices it may
move. A dry run reads and decides, never writes. The verbs (promote, pause, resume, abort,
retry) read, change and write the same object under the same precondition through
rollout/store.py's `ClusterStore`.

The object is the served RolloutState kind (config/crd/rolloutstates.yaml) with no slices of
its own (those are git mode's): its `position` and the `rollout` summary its columns and Argo
CD's health check read.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from dataclasses import replace

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller import planner
from kubectl_disagg.core.delivery.fleet import rollback_of
from kubectl_disagg.core.delivery.history import advance, going_back, history_of, limit_of
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.policy import policy_from_object, position_problems, verdict_problems
from kubectl_disagg.core.delivery.position import Position, parse_position, position_document, timestamp
from kubectl_disagg.core.controller.reconcile import Admission
from kubectl_disagg.core.controller.snapshot import Snapshot, live_from_snapshot
from kubectl_disagg.core.delivery.waves import Gate, Passage, Progress, State, WaveDecision, WaveEvent, admit, slice_progress
from kubectl_disagg.errors import Conflict, Problem, Unreachable, UserError
from kubectl_disagg.manifests.source import JsonObject, dotted
from kubectl_disagg.kube.client import ROLLOUT_STATE, AlreadyExists, NotFound, Resource
from kubectl_disagg.kube.seam import ClusterSession, PacingSession
from kubectl_disagg.rollout.analysis import AnalysisTimeout
from kubectl_disagg.rollout.pacer import pace
from kubectl_disagg.rollout.events import StepEvent, record_events
from kubectl_disagg.kube.who import cluster_user
from kubectl_disagg.views.stops import (  # the words it records
    abort_event_message, abort_message, policy_where, stopped_reasons)

ROLLOUT_POLICY = Resource(naming.POLICY_KIND, naming.PLUGIN_GROUP, naming.PLUGIN_VERSION, "rolloutpolicies")
STATE_API_VERSION = f"{ROLLOUT_STATE.group}/{ROLLOUT_STATE.version}"
FORMAT_VERSION = 2
EVENT_MESSAGES = {
    "WaveStarted": "Wave {wave} of {waves} started: slices up to {end} admitted",
    "WaveCompleted": "Wave {wave} of {waves} completed",
    "GatePassed": "The {detail} gate after wave {wave} passed",
    "RolloutPaused": "Rollout paused at wave {wave}: {detail}",
    "RolloutResumed": "Rollout resumed at wave {wave}",
    "RolloutPromoted": "Rollout promoted at wave {wave}: {detail}",
    "RolloutRetried": "Rollout retried from wave 1 (aborted at wave {wave}): {detail}",
}


# --- the object (pure) ------------------------------------------------------------------------


def summary(ds: DisaggregatedSet, decision: WaveDecision, step: str = "") -> JsonObject:
    """The `rollout` of the object: set, revision, the `step` of the slices with an old revision
    (`rolling_steps`; none at rest), wave "i/N", phase and one line for people."""
    wave = decision.waves[decision.wave]
    reached = f"wave {decision.wave + 1} of {len(decision.waves)} (slices 0-{max(wave.end - 1, 0)})"
    stopped = stopped_reasons(decision)
    if decision.state == State.COMPLETE:
        message = f"{ds.name}: at rest at revision {ds.revision}"
    elif stopped:
        message = f"{ds.name}: {reached}; {stopped[0]}"
    elif decision.state == State.ABORTED:
        message = abort_message(ds.name, decision)
    else:
        message = f"{ds.name}: {reached}; next: kubectl disagg rollout step"
    return {"set": ds.name, "revision": ds.revision, **({"step": step} if step else {}),
            "wave": f"{decision.wave + 1}/{len(decision.waves)}", "phase": str(decision.state), "message": message}


def rolling_steps(ds: DisaggregatedSet, snapshot: Snapshot) -> str:
    """`rollout.step`, what `kubectl get rolloutstates` shows (its STEP column): the distinct
    "i/N" plan steps of the slices with an old revision (0 for one not started), in slice order,
    as the git store writes them (gitops/served.py)."""
    steps: list[str] = []
    for live in live_from_snapshot(ds, snapshot):
        placed = planner.place_of(ds, live.runs, live.initial)
        step = None if placed is None else planner.format_position((placed[1], len(placed[0]) - 1))
        if step is not None and step not in steps:
            steps.append(step)
    return ",".join(steps)


def unpaced_summary(ds: DisaggregatedSet, progress: Iterable[Progress], step: str = "") -> JsonObject:
    """The `rollout` of a set whose RolloutPolicy was removed: it rolls as the controller does
    (one wave, no gates), Rolling while a slice has the old revision, AtRest once none has."""
    moving = any(p in (Progress.PENDING, Progress.IN_FLIGHT) for p in progress)
    where = (f"rolling to revision {ds.revision}; next: kubectl disagg rollout step" if moving
             else f"at rest at revision {ds.revision}")
    return {"set": ds.name, "revision": ds.revision, **({"step": step} if step and moving else {}), "wave": "1/1",
            "phase": str(State.ROLLING if moving else State.COMPLETE),
            "message": f"{ds.name}: no RolloutPolicy: paced as the controller; {where}"}


def measuring(body: JsonObject, gate: Gate, since: datetime.datetime) -> JsonObject:
    """`body` while the analysis of `gate` is measured: Rolling (Progressing in Argo CD)."""
    rollout = body["rollout"]
    return {**body, "rollout": {**rollout, "phase": str(State.ROLLING), "message": (
        f"{rollout['set']}: wave {gate.wave + 1}: measuring analysis {', '.join(gate.checks)} since "
        f"{since.strftime('%Y-%m-%dT%H:%M:%SZ')}")}}


def state_object(ds: DisaggregatedSet, namespace: str, position: Position, decision: WaveDecision,
                 stored: Mapping[str, Any] | None, history: list[JsonObject] | None = None, step: str = ""
                 ) -> JsonObject:
    """The RolloutState to write: `stored`'s resourceVersion pins it (None: created); its
    `history` (None: as stored) and revisionHistoryLimit kept; `step`: the rolling slices'."""
    metadata: JsonObject = {"name": ds.name, "namespace": namespace,
                      "labels": {naming.NAME_LABEL: ds.name, naming.MANAGED_BY_LABEL: naming.MANAGER}}
    if stored is not None:
        metadata["resourceVersion"] = stored["metadata"]["resourceVersion"]
    return {"apiVersion": STATE_API_VERSION, "kind": ROLLOUT_STATE.kind, "metadata": metadata,
            "formatVersion": FORMAT_VERSION, "revisions": [], "slices": [],
            "position": position_document(position), "rollout": summary(ds, decision, step),
            **_kept(stored, history)}


def _kept(stored: Mapping[str, Any] | None, history: list[JsonObject] | None) -> JsonObject:
    """The history fields of the object (`history` when given, else as stored)."""
    out: JsonObject = {}
    if stored is not None and stored.get("revisionHistoryLimit") is not None:
        out["revisionHistoryLimit"] = stored["revisionHistoryLimit"]
    entries = history if history is not None else history_of(stored)
    if entries:
        out["history"] = entries
    return out


def history_after(ds: DisaggregatedSet, stored: Mapping[str, Any] | None, decision: WaveDecision | None, now: str,
                  who: Callable[[], str], *, complete: bool = False) -> list[JsonObject]:
    """The object's history once `decision` (None: a set without a policy, `complete` or not)
    is recorded: core/delivery/history.py's `advance`, with the abort or retry of this revision."""
    position = decision.position if decision is not None else None
    mine = position is not None and position.revision == ds.revision
    return advance(history_of(stored), ds, now=now, who=who,
                   complete=decision.state == State.COMPLETE if decision is not None else complete,
                   aborted=position.aborted if mine and position is not None else None,
                   retried=position.retried if mine and position is not None else None, limit=limit_of(stored))


def recorded_position(stored: Mapping[str, Any] | None, ds: DisaggregatedSet) -> Position | None:
    """The position in a stored RolloutState (None: none yet), its verdicts each one an analysis
    run of `ds`'s policy wrote and its wave and gates ones the planner could have written (as a
    state file's are, gitops/rules.py rule 5). A git-driven set's state (it has slices) is
    refused: its rollout goes through commits, not `rollout step`."""
    if stored is None:
        return None
    name = (stored.get("metadata") or {}).get("name")
    if stored.get("slices"):
        raise UserError(f"rolloutstate/{name} records a git-driven rollout (its slices): step it with "
                        "`kubectl disagg rollout step --gitops -f DIR`")
    if stored.get("position") is None:
        return None
    position, problems = parse_position(stored["position"], f"rolloutstate/{name}", lambda path: 0)
    if problems:
        raise UserError(problems)
    found = verdict_problems(ds, position) + position_problems(ds, position)
    if found:
        raise UserError([Problem(f"rolloutstate/{name}", 0, dotted(("position",) + path), message)
                         for path, message in found])
    return position


def wave_events(decision: WaveDecision, events: Sequence[WaveEvent], regarding: Mapping[str, str]) -> list[StepEvent]:
    """The decision's changes of the position as Events (wave numbers counted from 1)."""
    out = []
    for event in events:
        end = decision.waves[min(event.wave, len(decision.waves) - 1)].end
        message = abort_event_message(decision) if event.reason == "RolloutAborted" else \
            EVENT_MESSAGES[event.reason].format(wave=event.wave + 1, waves=len(decision.waves),
                                                end=max(end - 1, 0), detail=event.detail)
        out.append(StepEvent(event.reason, message, regarding, "Warning" if event.reason == "RolloutAborted"
                             else "Normal"))
    return out


# --- against the cluster ----------------------------------------------------------------------


class Progressive:
    """One set's paced rollout in the cluster: `admit` for each pass of `drive`."""

    def __init__(self, cluster: PacingSession, namespace: str, *, dry_run: bool = False,
                 clock: Clock = SYSTEM_CLOCK, warn: Callable[[str], None] | None = None,
                 analyze: Callable[[DisaggregatedSet, str, WaveDecision], Position | None] | None = None):
        self.cluster, self.namespace, self.dry_run, self.clock = cluster, namespace, dry_run, clock
        self.analyze = analyze  # at an analysis gate without a verdict: measure it (rollout/analysis.py)
        self.warn = warn or (lambda message: None)
        self.passage: Passage | None = None
        self._served = False  # the RolloutState kind, asked once
        self._no_state = False  # a set without a policy whose RolloutState may not be kept (not served, forbidden)
        self._stored: JsonObject | None = None  # that set's RolloutState as last read or written

    def admit(self, ds: DisaggregatedSet, snapshot: Snapshot) -> tuple[DisaggregatedSet, Admission]:
        if ds.policy is None:
            return ds, Admission({}, returning=self.unpaced(ds, snapshot))
        if not self._served:
            self._served = ensure_served(self.cluster, ds.name)
        stored = self.cluster.rollout_state(ds.name, self.namespace)
        recorded = recorded_position(stored, ds)

        at_gate: list[WaveDecision] = []

        def shown(decision: WaveDecision, gate: Gate) -> None:  # Progressing while it measures (Argo CD reads the phase)
            nonlocal stored
            stored = write_state(self.cluster, measuring(state_object(ds, self.namespace, decision.position,
                                                                      decision, stored, step=step),
                                                         gate, self.clock.now()))
            at_gate.append(decision)

        step = rolling_steps(ds, snapshot)
        try:
            passage = pace(ds, snapshot, recorded, self.clock, None if self.dry_run else self.analyze, measuring=shown)
        except AnalysisTimeout:  # no verdict, nothing recorded: the state waits at the gate again, not measuring
            for decision in at_gate:
                write_state(self.cluster, state_object(ds, self.namespace, decision.position, decision, stored,
                                                       step=step))
            raise
        self.passage = passage
        decision = passage.decision
        history = history_after(ds, stored, decision, timestamp(self.clock.now()), self.who)
        if not self.dry_run and (stored is None or decision.position != recorded
                                 or (stored.get("rollout") or {}) != summary(ds, decision, step)
                                 or history != history_of(stored)):
            written = write_state(self.cluster, state_object(ds, self.namespace, decision.position, decision, stored,
                                                             history, step))
            self.record(wave_events(decision, decision.events, reference(written)))
        return passage.reconciled, replace(passage.admission, stopped=stopped_reasons(passage.decision),
                                           rollback=rollback_of(passage.decision),
                                           returning=going_back(history_of(stored), history, ds.revision))

    def unpaced(self, ds: DisaggregatedSet, snapshot: Snapshot) -> bool:
        """A set without a policy rolls as the controller does; its RolloutState (where the
        kind is served) keeps its revision history and a summary: Rolling while slices move,
        AtRest once done (a summary a removed policy left, AtGate or Paused, brought to the
        truth). Read once a run, then kept as written; bookkeeping, so a failure only warns.
        Whether the pass goes back to a revision the set ran before (an undo)."""
        if self._no_state:
            return False
        try:
            stored = self._stored if self._stored is not None else self.cluster.rollout_state(ds.name, self.namespace)
        except Unreachable:
            raise  # waited out like any read of the pass
        except UserError:
            self._no_state = True  # not ours to read here: a set without a policy does not need it
            return False
        if (stored is not None and stored.get("slices")) or (stored is None and not self.cluster.client.serves(
                ROLLOUT_STATE)):
            self._no_state = True  # git's state (its rollout goes through commits), or no kind to keep one in
            return False
        progress = slice_progress(ds.name, ds.revision, ds.slices, snapshot)
        rollout = unpaced_summary(ds, progress, rolling_steps(ds, snapshot))
        history = history_after(ds, stored, None, timestamp(self.clock.now()), self.who,
                                complete=rollout["phase"] == str(State.COMPLETE))
        returning = going_back(history_of(stored), history, ds.revision)
        if self.dry_run or (stored is not None and stored.get("rollout") == rollout
                            and history == history_of(stored)):
            self._stored = stored
            return returning
        metadata = (stored or {}).get("metadata") or {}
        body: JsonObject = {"apiVersion": STATE_API_VERSION, "kind": ROLLOUT_STATE.kind, "formatVersion": FORMAT_VERSION,
                      "metadata": {"name": ds.name, "namespace": self.namespace,
                                   "labels": metadata.get("labels") or {naming.NAME_LABEL: ds.name,
                                                                        naming.MANAGED_BY_LABEL: naming.MANAGER}},
                      "revisions": [], "slices": [],
                      **({"position": stored["position"]} if stored and stored.get("position") is not None else {}),
                      "rollout": rollout, **_kept(stored, history)}
        if metadata.get("resourceVersion"):
            body["metadata"]["resourceVersion"] = metadata["resourceVersion"]
        try:
            self._stored = write_state(self.cluster, body)
        except Unreachable:
            raise
        except UserError as err:  # bookkeeping: the rollout itself does not wait on it
            if stored is not None:
                self.warn(f"could not bring rolloutstate/{ds.name} up to date: {err}")
            self._no_state = True
        return returning

    def who(self) -> str:
        """Who runs this step, asked once a session (a SelfSubjectReview) when a history entry needs it."""
        return cluster_user(self.cluster)

    def record(self, events: list[StepEvent]) -> None:
        record_events(self.cluster, events, self.clock, self.warn)


def reference(obj: Mapping[str, Any]) -> dict[str, str]:
    metadata = obj.get("metadata") or {}
    return {"apiVersion": STATE_API_VERSION, "kind": ROLLOUT_STATE.kind, "name": metadata.get("name", ""),
            "namespace": metadata.get("namespace", ""), "uid": metadata.get("uid", "")}


def ensure_served(cluster: ClusterSession, name: str) -> bool:
    """True, or refused where the cluster does not serve the RolloutState kind."""
    if not cluster.client.serves(ROLLOUT_STATE):
        raise UserError(f"disaggregatedset/{name} has a RolloutPolicy, whose position is kept in a RolloutState, "
                        "and this cluster does not serve that kind: install it with "
                        "`kubectl disagg crds | kubectl apply --server-side -f -`")
    return True


def read_state(cluster: ClusterSession, name: str, namespace: str) -> JsonObject | None:
    """The set's RolloutState (None: none yet); refused where the kind is not served."""
    ensure_served(cluster, name)
    return cluster.rollout_state(name, namespace)


def write_state(cluster: ClusterSession, body: JsonObject) -> JsonObject:
    """Create the object, or replace it pinned to the resourceVersion it was read at."""
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    if "resourceVersion" not in body["metadata"]:
        try:
            return cluster.client.create(ROLLOUT_STATE, namespace, body)
        except AlreadyExists:
            raise Conflict(f"rolloutstate/{name} was created by someone else since it was read") from None
    return cluster.client.replace(ROLLOUT_STATE, namespace, body)


def with_stored_policy(cluster: ClusterSession, ds: DisaggregatedSet, namespace: str) -> DisaggregatedSet:
    """A stored set (NAME) with the RolloutPolicy of the cluster that names it, if any."""
    if not cluster.client.serves(ROLLOUT_POLICY):
        return ds
    try:
        listed = cluster.client.list(ROLLOUT_POLICY, namespace, "")
    except NotFound:
        return ds
    mine = [item for item in listed.get("items") or []
            if ((item.get("spec") or {}).get("targetRef") or {}).get("name") == ds.name]
    if len(mine) > 1:
        names = ", ".join(f"rolloutpolicy/{item['metadata']['name']}" for item in mine)
        raise UserError(f"disaggregatedset/{ds.name} in {namespace} has more than one RolloutPolicy ({names}); "
                        "a set has at most one")
    if not mine:
        return ds
    policy, problems = policy_from_object(mine[0])
    if problems:
        raise UserError(problems)
    return replace(ds, policy=policy)


def position_lines(decision: WaveDecision, gitops: bool = False) -> tuple[str, ...]:
    """Where a paced rollout stands, for `rollout status`: the wave, the budget, what holds it."""
    wave = decision.waves[decision.wave]
    budget = "" if decision.budget is None else (f"; {len(decision.in_flight)} of at most {decision.budget} "
                                                 "slices in flight")
    where = policy_where(decision.state, decision.wave, len(decision.waves), wave.end) + budget
    return (where, *(f"held: {reason}" for reason in stopped_reasons(decision, gitops)))


def record_complete(cluster: PacingSession, ds: DisaggregatedSet, namespace: str, snapshot: Snapshot,
                    warn: Callable[[str], None]) -> None:
    """A rollout observed complete by `rollout status` (design §10.3), recorded as the pass of
    `rollout step` that observed it would record it: the history's entry complete, the summary at
    rest (Argo CD's Healthy), so a rollout driven by single steps does not stay Rolling until one
    more step. Nothing is written when the RolloutState says so already; a write refused (a
    role that may only read, a stepper's write first) only warns: the next step records it."""
    try:
        Progressive(cluster, namespace, warn=warn).admit(ds, snapshot)
    except Unreachable:
        raise
    except UserError as err:
        warn(f"could not record the rollout of disaggregatedset/{ds.name} complete in its RolloutState: {err}")


def paced_view(cluster: ClusterSession, ds: DisaggregatedSet, namespace: str, snapshot: Snapshot,
               clock: Clock = SYSTEM_CLOCK) -> tuple[Passage, tuple[str, ...], str]:
    """The decision a step would take now, read only (nothing written), its lines, and the
    resourceVersion of the RolloutState it read ("" for none): a watch from there sees the
    next step's or verb's write."""
    stored = read_state(cluster, ds.name, namespace)
    passage = admit(ds, snapshot, recorded_position(stored, ds), clock.now())
    version = str(((stored or {}).get("metadata") or {}).get("resourceVersion") or "")
    return passage, position_lines(passage.decision), version
