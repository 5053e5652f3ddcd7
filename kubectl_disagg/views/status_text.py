"""`rollout status` for people (-o text), in both stores, one view: each set's conditions, roles,
slices (those alike on one row), waits and next actions, laid out by the `status.txt.j2`
template; a report with a `sync` part (git's) adds it last, compact: the state file, whether
the cluster shows it, the committed points (slices alike in one line), the next action and its
reasons (those not said above)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from kubectl_disagg.core.delivery.fleet import situations

from kubectl_disagg.core.api.naming import spans
from kubectl_disagg.core.controller.planner import format_position
from kubectl_disagg.core.controller.reconcile import Action, Phase
from kubectl_disagg.core.delivery.status import SetStatus, conditions
from kubectl_disagg.views.status import NEXT_WORDS, committed_groups
from kubectl_disagg.views.stops import aborted_words
from kubectl_disagg.views.templating import grouped_by_slice, render_template, table


def format_reports(reports: list[SetStatus], now: str, wide: bool = False) -> str:
    """One look at every set (a `rollout.status.Format`); `wide` (-o wide, as kubectl's: more
    columns): each slice row also says what it waits for and how many actions a step takes."""
    return "\n".join(format_text(report, now, wide) for report in reports)


def format_text(status: SetStatus, now: str, wide: bool = False) -> str:
    role_table = table(
        ["ROLE", "DESIRED", "REPLICAS", "READY", "UPDATED"],
        [[r.name, r.desired, r.replicas, r.ready, r.updated] for r in status.roles], indent="  ")
    # Slices alike (phase, revisions, step) share a row: a fleet of 100 is a few rows, not 100.
    rows = situations([(r.phase.label, _revisions(r.revisions, status), _position(r.position),
                        *(("; ".join((*r.waiting_for, *r.blocked)) or "-", len(r.actions)) if wide else ()))
                       for r in status.slices])
    slice_table = table(
        ["SLICE", "PHASE", "REVISIONS (replicas per role)", "STEP", *(["WAITING FOR", "NEXT ACTIONS"] if wide else [])],
        [[spans([status.slices[i].slice for i in members]), *row] for members, row in rows],
        indent="  ")
    # After an abort the slices it holds wait for nothing: the policy's `held:` line says why and what ends it.
    waits = grouped_by_slice([(r.slice, (*r.waiting_for, *r.blocked)) for r in status.slices
                              if (r.waiting_for or r.blocked) and not (status.aborted and r.phase == Phase.HELD)])
    # Next actions differ per slice only by name: group them by what they do.
    next_actions = grouped_by_slice([(r.slice, tuple(_unsliced(a, status.name, r.slice) for a in r.actions))
                                     for r in status.slices if r.actions])
    return render_template("status.txt.j2", status=status, state=state_words(status),
                           conditions=conditions(status, now),
                           role_table=role_table, slice_table=slice_table, waits=waits,
                           next_actions=next_actions, **_sync_part(status))


def _sync_part(status: SetStatus) -> dict[str, object]:
    """Git's part of the view (`sync`: None in the cluster's store): the line of the state file
    and whether the cluster shows it, the committed points, the next action and those of its
    reasons the lines above do not say already (a hold, a problem, a wait)."""
    sync = status.sync
    if sync is None:
        return {"sync": None}
    said = {*status.problems, *status.waiting_for(),
            *(line.removeprefix("held: ") for line in status.rollout if line.startswith("held: "))}
    stale = tuple(f"leaderworkerset/{name}: status is stale" for name in status.stale)
    where = sync.state_file or "the rollout state"
    if not sync.has_state:
        line = f"{where} (none yet)" if sync.state_file else "no rollout state yet"
    else:
        line = (f"{where}; cluster {'synced' if sync.synced else 'not synced'}, "
                f"{'pruned' if sync.pruned else 'not pruned'}, new revision {'ready' if sync.ready else 'not ready'}")
    return {"sync": sync, "sync_line": line, "next": NEXT_WORDS[sync.next_action],
            "groups": committed_groups(status, sync),
            "reasons": _folded([r for r in sync.reasons if r not in said and not r.startswith(stale)], status.name)}


def _folded(reasons: list[str], set_name: str) -> list[str]:
    """Reasons that differ per slice only by an LWS name, one line per run of slices alike
    (`slices 0-11: leaderworkerset/<rev>-prefill: ...; ...`): a fleet of 12 is a line, not 48."""
    per_slice: dict[int, list[str]] = {}
    alone: list[str] = []
    for reason in reasons:
        named = re.match(rf"leaderworkerset/{re.escape(set_name)}-(\d+)-", reason)
        if named is None:
            alone.append(reason)
        else:
            per_slice.setdefault(int(named.group(1)), []).append(reason.replace(named.group(0), "leaderworkerset/", 1))
    folded = grouped_by_slice([(index, tuple(said)) for index, said in sorted(per_slice.items())])
    return [*alone, *(f"{label}: {'; '.join(said)}" for label, said in folded)]


def state_words(status: SetStatus) -> str:
    """Progressing, or Available and whether the rollout is complete (`Until.COMPLETE`): what
    is left of it when not (old revisions' LWS, drained or not, go in the rollout's last step).
    After an abort: rolling back, or rolled back, to the stable revision the fleet serves."""
    if status.aborted:
        return ("Available, " if status.available else "Progressing, ") + aborted_words(status.serving,
                                                                                        status.available)
    if not status.available:
        return "Progressing"
    if status.complete:
        return "Available, complete"
    left = "; ".join(f"revision {revision}'s LeaderWorkerSets remain in {_slices(slices)}"
                     for revision, slices in status.leftover)
    return f"Available, not complete: {left or 'a rollout step has work left (next step below)'}"


def _slices(slices: tuple[int, ...]) -> str:
    return ", ".join(label for label, _ in grouped_by_slice([(s, None) for s in slices]))


def _unsliced(action: Action, set_name: str, slice_index: int) -> str:
    """An action in words that are the same for every slice: names lose their "<set>-<slice>-"."""
    return action.describe().replace(f"/{set_name}-{slice_index}-", "/")


def _revisions(revisions: Mapping[str, Mapping[str, int]], status: SetStatus) -> str:
    """Each revision a slice runs, marked new or old; after an abort, stable or aborted."""
    parts = []
    for revision, roles in revisions.items():
        if status.aborted:
            marker = "stable" if revision == status.serving else "aborted"
        else:
            marker = "new" if revision == status.revision else "old"
        counts = " ".join(f"{role}={count}" for role, count in roles.items())
        parts.append(f"{revision} ({marker}) {counts}")
    return "; ".join(parts) or "none"


def _position(position: tuple[int, int] | None) -> str:
    return format_position(position, missing="-") or "-"

