"""`rollout status` for people (-o text), in both stores: each set's roles, slices (those alike
on one row), waits and next actions, laid out by the `status.txt.j2` template; a report with a
`sync` part (git's) is its committed state against the cluster and the next action instead."""

from __future__ import annotations

from kubectl_disagg.core.delivery.fleet import situations
from collections.abc import Mapping

from kubectl_disagg.core.api.naming import spans
from kubectl_disagg.core.controller.planner import format_position
from kubectl_disagg.core.controller.reconcile import Action, Phase
from kubectl_disagg.core.delivery.status import SetStatus, conditions
from kubectl_disagg.views.status import NEXT_WORDS, committed_groups
from kubectl_disagg.views.stops import aborted_words, policy_where
from kubectl_disagg.views.templating import grouped_by_slice, render_template, table


def format_reports(reports: list[SetStatus], now: str, wide: bool = False) -> str:
    """One look at every set (a `rollout.status.Format`); `wide` (-o wide, as kubectl's: more
    columns): each slice row also says what it waits for and how many actions a step takes."""
    return "\n".join(format_text(report, now, wide) for report in reports)


def format_text(status: SetStatus, now: str, wide: bool = False) -> str:
    if status.sync is not None:
        return render_template("status.txt.j2", status=status, sync=status.sync,
                               next=NEXT_WORDS[status.sync.next_action], groups=committed_groups(status, status.sync), policy=policy_line(status),
                               set_words=set_words(status))
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
    return render_template("status.txt.j2", status=status, sync=None, state=state_words(status),
                           conditions=conditions(status, now),
                           role_table=role_table, slice_table=slice_table, waits=waits,
                           next_actions=next_actions)


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


def policy_line(status: SetStatus) -> str:
    """Through git, where the committed position of a RolloutPolicy's rollout stands, in the
    words of the cluster's `rollout status` (`RolloutPolicy: AtGate, wave 1 of 3 (slices 0-0)`)
    and the fleet's count; empty without a policy."""
    paced = status.paced
    if paced is None:
        return ""
    done = f"; {len(paced.done)} of {paced.slices} slices done" if paced.slices > 1 else ""
    return policy_where(paced.phase, paced.wave, len(paced.waves), paced.waves[paced.wave][1]) + done


def set_words(status: SetStatus) -> str:
    """Through git, the live set: Available or not, and complete; after an abort, rolled back or
    rolling back to the stable revision (the words of the cluster's `rollout status`)."""
    if status.aborted:
        return ("Available, " if status.available else "not Available, ") + aborted_words(status.serving,
                                                                                          status.available)
    if not status.available:
        return "not Available"
    return "Available, complete" if status.complete else "Available, not complete"


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

