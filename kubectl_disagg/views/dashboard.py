"""What `rollout dashboard` draws, as data: each set's look turned into the one JSON document the
page renders (kubectl_disagg/dashboard/assets/app.js). Pure: the looks in, a document out.

Per set: a grid of slices × roles, each cell what the slice's role runs (its revisions with
their replicas and ready counts) and its class, `new` (the rollout's revision), `stable`,
`aborted` (the rollout's revision after an abort) or `other`, and whether it is ready; the
waves as bands (done, in flight, pending) with the slices of each; the gate ahead and what it
waits for (a soak's end, each analysis check's latest value against its condition, a promote);
the budget in use; the rollout's history (who, when, why, outcome) and the set's recent Events;
and the resourceVersion of its RolloutState, which an action sends back as its guard. Text is
text: the page sets it with `textContent`, never as markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.snapshot import LiveLWS
from kubectl_disagg.core.delivery.history import RevisionEntry
from kubectl_disagg.core.delivery.position import ANALYSIS
from kubectl_disagg.core.delivery.status import SetStatus
from kubectl_disagg.core.delivery.waves import VerbRefused
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.rollout.verbs import VerbResult
from kubectl_disagg.views.stops import stop_sentence
from kubectl_disagg.views.verbs import refusal_sentence, verb_line

NEW, STABLE, ABORTED, OTHER = "new", "stable", "aborted", "other"
EVENTS_SHOWN = 20  # the most recent Events of a set the page lists
HISTORY_SHOWN = 10  # a RolloutState keeps the last 10 revisions
VERBS = ("promote", "pause", "resume", "abort", "retry")
UNDO = "undo"


@dataclass(frozen=True)
class SetLook:
    """One set as the dashboard saw it: its status (`report`, None where it could not be
    derived: `problem` says why), its LWS, the roles in the set's order, the budget (slices in
    flight at most; None: no limit), its history and Events, and the resourceVersion of its
    RolloutState as read ("" for none)."""

    name: str
    namespace: str
    report: SetStatus | None
    lws: tuple[LiveLWS, ...] = ()
    roles: tuple[str, ...] = ()
    budget: int | None = None
    history: tuple[RevisionEntry, ...] = ()
    events: tuple[JsonObject, ...] = ()
    state_version: str = ""
    problem: str = ""
    commands: Mapping[str, str] | None = None  # through git: each verb's command instead of a button


def page_document(looks: Sequence[SetLook], now: str, *, behind: Sequence[Mapping[str, str]] = (),
                  actions: bool = True, mode: str = "cluster", scope: str = "") -> JsonObject:
    """The page's document: every set's drawing, the time of the look, whether the page is
    `behind` the cluster (each watch not current: kind, namespace, since, why), and whether it
    may act (`actions`: the cluster's mode without --read-only)."""
    return {"now": now, "mode": mode, "scope": scope, "actions": actions, "behind": [dict(b) for b in behind],
            "sets": [set_document(look) for look in sorted(looks, key=lambda one: (one.namespace, one.name))]}


def set_document(look: SetLook) -> JsonObject:
    doc: JsonObject = {"key": f"{look.namespace}/{look.name}", "name": look.name, "namespace": look.namespace,
                       "stateVersion": look.state_version, "problem": look.problem,
                       "commands": dict(look.commands) if look.commands else None}
    report = look.report
    if report is None:
        return doc
    paced = report.paced
    roles = list(look.roles) or sorted({role.name for role in report.roles})
    slices = max(len(report.slices), paced.slices if paced else 0, len(report.sync.slices) if report.sync else 0,
                 *(obj.identity.slice + 1 for obj in look.lws if obj.identity.slice is not None))
    classes = _classes(report)
    by_place = _by_place(look.lws)
    grid = [_row(index, roles, by_place, classes, _wave_of(paced, index)) for index in range(slices)]
    doc.update({
        "revision": report.revision, "serving": report.serving or report.revision,
        "available": report.available, "complete": report.complete,
        "phase": str(paced.phase) if paced else ("Available" if report.available else "Progressing"),
        "stable": paced.stable if paced else "", "target": paced.target if paced else report.revision,
        "rolloutRevision": paced.revision if paced else report.revision,
        "lines": list(report.rollout), "problems": list(report.problems), "warnings": list(report.warnings),
        "roles": roles,
        "grid": grid,
        "waves": _waves(report, grid), "gate": _gate(report), "budget": _budget(report, look.budget),
        "verdict": _verdict(paced.verdict) if paced and paced.verdict else None,
        "paused": _stamp(paced.paused) if paced else None, "aborted": _stamp(paced.aborted) if paced else None,
        "history": [_entry(entry) for entry in reversed(look.history[-HISTORY_SHOWN:])],
        "events": _events(look.events),
        "sync": _sync(report),
    })
    return doc


def _sync(report: SetStatus) -> JsonObject | None:
    """Through git: the committed position against the cluster, and the next action."""
    sync = report.sync
    if sync is None:
        return None
    return {"nextAction": str(sync.next_action), "synced": sync.synced, "pruned": sync.pruned, "ready": sync.ready,
            "reasons": list(sync.reasons), "stateFile": sync.state_file or "",
            "committed": [{"slice": s.slice, "position": list(s.position) if s.position else None}
                          for s in sync.slices]}


def _classes(report: SetStatus) -> dict[str, str]:
    """Revision → the class its cells are drawn in."""
    paced = report.paced
    if paced is None:
        return {report.revision: NEW}
    classes = {paced.stable: STABLE} if paced.stable else {}
    classes[paced.revision] = ABORTED if paced.aborted is not None else NEW
    return classes


def _wave_of(paced: Any, index: int) -> int | None:
    if paced is None:
        return None
    return next((number for number, (start, end) in enumerate(paced.waves, 1) if start <= index < end), None)


def _row(index: int, roles: Sequence[str], by_place: Mapping[tuple[int, str], Sequence[LiveLWS]],
         classes: Mapping[str, str], wave: int | None) -> JsonObject:
    cells = []
    for role in roles:
        groups = sorted(by_place.get((index, role), ()), key=lambda obj: (obj.identity.revision or "", obj.name))
        runs: list[dict[str, Any]] = [{"revision": obj.identity.revision or "",
                                       "class": classes.get(obj.identity.revision or "", OTHER),
                                       "replicas": obj.replicas, "ready": obj.ready, "name": obj.name}
                                      for obj in groups if obj.replicas > 0 or obj.ready > 0]
        ready = all(run["ready"] >= run["replicas"] for run in runs)
        cells.append({"role": role, "runs": runs, "ready": ready and bool(runs),
                      "class": runs[0]["class"] if len(runs) == 1 else ("mixed" if runs else "absent")})
    return {"slice": index, "wave": wave, "cells": cells}


def _by_place(lws: Sequence[LiveLWS]) -> dict[tuple[int, str], list[LiveLWS]]:
    """Each slice's and role's LWS, indexed once (a fleet's grid asks for each of its cells)."""
    out: dict[tuple[int, str], list[LiveLWS]] = {}
    for obj in lws:
        if obj.identity.slice is not None and obj.identity.role is not None:
            out.setdefault((obj.identity.slice, obj.identity.role), []).append(obj)
    return out


def _waves(report: SetStatus, grid: Sequence[JsonObject]) -> list[JsonObject]:
    """Each wave's band, its state read from what its slices run: `done` (the rollout's revision
    alone, ready), `pending` (the stable one alone, none started), else `in-flight`; after an abort,
    `at stable` and `rolling back` instead of the last two (the new revision is what goes)."""
    paced = report.paced
    if paced is None:
        return []
    out = []
    back = paced.aborted is not None
    for number, (start, end) in enumerate(paced.waves, 1):
        cells = [cell for row in grid[start:end] for cell in row["cells"]]
        if not back and cells and all(cell["class"] == NEW and cell["ready"] for cell in cells):
            state = "done"
        elif all(cell["class"] in (STABLE, "absent") for cell in cells) and not (
                not back and any(s in paced.in_flight for s in range(start, end))):
            state = "at stable" if back else "pending"
        else:
            state = "rolling back" if back else "in-flight"
        out.append({"wave": number, "start": start, "end": end, "state": state,
                    "current": number - 1 == paced.wave})  # the wave reached, counted from 0
    return out


def _gate(report: SetStatus) -> JsonObject | None:
    """The gate the rollout waits at or the next one ahead, and what it waits for."""
    paced = report.paced
    if paced is None or paced.gate is None:
        return None
    gate = paced.gate
    doc: JsonObject = {"wave": gate.wave, "kind": gate.kind, "atGate": paced.at_gate, "until": gate.until,
                       "failed": gate.failed, "checks": [], "held": None}
    if paced.held is not None:
        doc["held"] = stop_sentence(paced.held)
    recorded = paced.verdict[1] if paced.verdict is not None and paced.verdict[0] == gate.wave else {}
    by_name = {str(check.get("check")): check for check in recorded.get("checks") or () if isinstance(check, Mapping)}
    doc["checks"] = [_check(by_name[name]) if name in by_name else
                     {"name": name, "condition": "", "phase": "pending", "value": None, "ok": None, "error": None,
                      "measured": 0} for name in gate.checks]
    doc["waitsFor"] = (ANALYSIS if gate.kind == ANALYSIS else
                       "soak" if gate.until else "promote")
    return doc


def _verdict(verdict: tuple[int, Mapping[str, Any]]) -> JsonObject:
    """The last analysis verdict recorded: each check's latest value against its condition."""
    wave, record = verdict
    return {"wave": wave, "phase": record.get("phase", ""), "message": record.get("message", ""),
            "checks": [_check(check) for check in record.get("checks") or () if isinstance(check, Mapping)]}


def _check(check: Mapping[str, Any]) -> JsonObject:
    measurements = check.get("measurements") or [{}]
    latest = measurements[-1] if isinstance(measurements[-1], Mapping) else {}
    values = latest.get("values") or []
    return {"name": str(check.get("check", "")), "condition": str(check.get("successCondition", "")),
            "phase": str(check.get("phase", "")), "value": values[-1] if values else None, "ok": latest.get("ok"),
            "error": latest.get("error"), "measured": len(check.get("measurements") or ())}


def _budget(report: SetStatus, budget: int | None) -> JsonObject | None:
    paced = report.paced
    if paced is None:
        return None
    return {"inFlight": len(paced.in_flight), "max": budget, "done": len(paced.done), "slices": paced.slices,
            "held": len(paced.held_slices)}


def _stamp(stamp: Any) -> JsonObject | None:
    return None if stamp is None else {"at": stamp.at, "by": stamp.by, "reason": stamp.reason}


def _entry(entry: RevisionEntry) -> JsonObject:
    return {"revision": entry.revision, "started": entry.started.date, "by": entry.started.author or entry.by,
            "outcome": entry.outcome, "ended": entry.ended.date if entry.ended else "",
            "endedBy": entry.by, "why": entry.why, "back": entry.back, "retry": entry.retry}


def _events(events: Sequence[JsonObject]) -> list[JsonObject]:
    def when(event: JsonObject) -> str:
        return str(event.get("eventTime") or (event.get("metadata") or {}).get("creationTimestamp") or "")

    latest = sorted(events, key=when, reverse=True)[:EVENTS_SHOWN]
    return [{"time": when(event), "type": str(event.get("type") or ""), "reason": str(event.get("reason") or ""),
             "note": str(event.get("note") or event.get("message") or ""),
             "regarding": str((event.get("regarding") or {}).get("name") or "")} for event in latest]


class ActionWords:
    """A verb's printer (rollout/verbs.py `VerbPrinter`) for the page: what the verb did, or why
    not, in the CLI's own sentences, collected instead of printed; `conflict`: the position had
    changed since the page showed it (or a stepper kept writing it)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.refusal = self.conflict = self.failed = False

    def done(self, result: VerbResult) -> None:
        self.lines.append(verb_line(result).strip())

    def refused(self, verb: str, ds: DisaggregatedSet, namespace: str, refused: VerbRefused,
                together: bool) -> None:
        self.refusal = True
        self.lines.append(f"refusing to {verb} disaggregatedset/{ds.name} in {namespace}: {refusal_sentence(refused)}")

    def conflicted(self, verb: str, ds: DisaggregatedSet, namespace: str, what: str, attempts: int) -> None:
        self.conflict = True
        self.lines.append(f"not done: {what}; look again and act again")

    def warn(self, message: str) -> None:
        self.lines.append(f"Warning: {message}")

    def error(self, lines: list[str]) -> None:
        self.failed = True
        self.lines.extend(lines)


def changed_since(kind_name: str, shown: str, now: str) -> str:
    """The guard's refusal: the position changed since the page showed it."""
    return f"{kind_name} changed since the page showed it (resourceVersion {shown or 'none'}, now {now or 'none'})"


def exposed_warning(address: str) -> str:
    return (f"Warning: listening on {address}, not loopback: anyone who can reach it and has the URL's token "
            "can see the fleet and act on it")


def serving_line(url: str, scope: str, actions: bool) -> str:
    return f"Serving the dashboard of {scope}{'' if actions else ' (read-only)'} at {url}\nPress Ctrl-C to stop."


def git_commands(where: str) -> dict[str, str]:
    """Through git, what each action is: the verb's command, committed (no button writes git)."""
    commands = {verb: f"kubectl disagg rollout {verb} --gitops -f {where} --commit --reason '...'" for verb in VERBS}
    return {**commands, UNDO: f"kubectl disagg rollout undo --gitops -f {where} --commit"}


def undo_words(name: str, namespace: str, revision: str) -> str:
    """What an undo from the page did, and what rolls it out (as `rollout undo` says it)."""
    return (f"disaggregatedset/{name} in {namespace} rolled back to revision {revision}: the rollout back is paced "
            f"like any other: kubectl disagg rollout step {name} -n {namespace}")
