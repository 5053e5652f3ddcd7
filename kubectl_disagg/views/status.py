"""What `rollout status` prints for -o yaml|json, in both stores: each report as one document
(`data_format`), a DisaggregatedSet with its status (core/delivery/status.py `to_document`), and
through git a `sync` object beside it: where the committed state stands against the cluster and
the next action. For people, `status_text.format_reports` (one Jinja2 template); the looks
themselves, and -w, are `rollout/status.py`'s. Also the words of how a -w ended (`held_words`,
`timeout_words`)."""

from __future__ import annotations

from typing import Any, cast

from kubectl_disagg.core.controller.planner import format_position
from kubectl_disagg.core.delivery.status import NextAction, SetStatus, Sync, Until, to_document
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.manifests.writer import format_objects
from kubectl_disagg.rollout.status import Format
from kubectl_disagg.views.stops import Spell, measure_sentence, stop_sentence


# Through git, the next action in words (text and -o json|yaml's `nextAction`).
NEXT_WORDS = {NextAction.STEP: "run rollout step --gitops", NextAction.SYNC: "wait for the sync",
              NextAction.READY: "wait for readiness", NextAction.COMPLETE: "complete",
              NextAction.REFUSED: "a person must look",
              NextAction.HELD: "held by the RolloutPolicy: a --gitops verb's commit passes it"}


def data_format(output: str) -> Format:
    """-o yaml|json: each report as a document (several: a YAML stream, a JSON List)."""
    def format(reports: list[SetStatus], now: str) -> str:
        return format_objects([document(report, now) for report in reports], output)
    return format


def document(report: SetStatus, now: str) -> JsonObject:
    """The report's document: the set with its status, and through git its `sync` object."""
    base = to_document(report, now)
    return base if report.sync is None else base | {"sync": sync_document(report, report.sync)}


def committed_groups(status: SetStatus, sync: Sync) -> list[dict[str, Any]]:
    """The slices' committed points, slices alike in one group (label, position, revisions)."""
    from kubectl_disagg.views.templating import grouped_by_slice  # Jinja2: only for git's reports

    items: list[tuple[int, object]] = [
        (s.slice, (format_position(s.position), tuple((rev, tuple(c.items())) for rev, c in s.revisions.items())))
        for s in sync.slices]
    groups: list[dict[str, Any]] = []
    for label, point in grouped_by_slice(items):
        position, revisions = cast(tuple[str, tuple[tuple[str, tuple[tuple[str, int], ...]], ...]], point)
        groups.append({"label": label, "position": position,
                       "revisions": [{"revision": rev, "replicas": dict(counts), "new": rev == status.revision}
                                     for rev, counts in revisions]})
    return groups


def sync_document(status: SetStatus, sync: Sync) -> JsonObject:
    """Git's part: the state file, whether the cluster shows it, the next action and its
    reasons, and the slices' committed points (`slices`, slices alike in one group)."""
    return {
        "stateFile": sync.state_file, "hasState": sync.has_state,
        "synced": sync.synced, "pruned": sync.pruned, "ready": sync.ready,
        "nextAction": NEXT_WORDS[sync.next_action], "reasons": list(sync.reasons),
        "slices": [{"slices": group["label"], "position": group["position"],
                    "revisions": [{"revision": r["revision"], "replicas": r["replicas"]} for r in group["revisions"]]}
                   for group in committed_groups(status, sync)],
    }


def held_words(report: SetStatus, spell: Spell | None = None) -> str:
    """What holds a set where -w ended held, and the command that passes it (spelled as the
    user typed this one): the step's own reasons through git, else the policy's stop."""
    if report.sync is not None:
        return "; ".join(report.sync.reasons)
    assert report.paced is not None  # only a paced set is still
    held, gate = report.paced.held, report.paced.unmeasured
    if held is not None:
        return stop_sentence(held, spell=spell)
    assert gate is not None
    return measure_sentence(gate, spell=spell)


def timeout_words(until: Until | None) -> str:
    """What -w waited for when it timed out (`until` None: git's next action to change)."""
    if until is None:
        return "the next action to change"
    return "the rollout to " + ("complete" if until == Until.COMPLETE else "become Available")
