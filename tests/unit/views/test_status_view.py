"""Issue 48: one status view for both stores. A git report is shown as the cluster's is (header,
conditions, role and slice tables, waits, next steps, from the same SetStatus) with a compact
`sync` part last; -o json|yaml is one shape, the cluster's document with a `sync` object."""

from __future__ import annotations

from dataclasses import replace

from kubectl_disagg.clock import SYSTEM_CLOCK
from kubectl_disagg.core.controller.reconcile import reconcile
from kubectl_disagg.core.delivery.status import NextAction, derive_status, to_document
from kubectl_disagg.rollout.git_status import gitops_status
from kubectl_disagg.views.status import document
from kubectl_disagg.views.status_text import format_text
from tests.fakes.argo import deploy
from tests.support.gitops import mid_rollout
from tests.support.sets import make_set

NOW = "2026-12-08T00:00:00Z"


def git_status(argo, ds, state, state_file="apps/llm/disagg-rollout-state.yaml"):
    return gitops_status(ds, state, argo.snapshot(ds), argo.served, now=SYSTEM_CLOCK.now(), state_file=state_file)


def test_the_git_store_reads_the_live_set_as_the_cluster_store_does():
    """The git store's SetStatus holds what the cluster's holds of the same live LWS: a report per
    slice (phase, revisions, position), stale names, leftover revisions, the conditions' inputs."""
    argo, new, state = mid_rollout(slices=3)
    live = argo.snapshot(new)
    git, cluster = git_status(argo, new, state), derive_status(new, live, reconcile(new, live))
    assert git.sync is not None and git.sync.next_action == NextAction.STEP

    def seen(status):
        return [(r.slice, r.phase, dict(r.revisions), r.position, r.waiting_for) for r in status.slices]
    assert len(git.slices) == 3 and seen(git) == seen(cluster)
    assert (git.roles, git.stale, git.leftover, git.been_available) == (
        cluster.roles, cluster.stale, cluster.leftover, cluster.been_available)


def test_a_git_report_reads_as_the_clusters_view_then_its_sync_part():
    argo, new, state = mid_rollout(slices=3)
    report = git_status(argo, new, state)
    text = format_text(report, NOW)
    live_part, _, git_part = text.partition("\n\n  git: ")
    assert live_part + "\n" == format_text(replace(report, sync=None), NOW)  # the one body, as the cluster's
    assert live_part.startswith(f"disaggregatedset/llm in {report.namespace}, revision {new.revision}: Progressing\n")
    assert "\n  ROLE " in live_part and "\n  SLICE " in live_part and " next step: " in live_part
    assert git_part.splitlines() == [
        "apps/llm/disagg-rollout-state.yaml; cluster synced, pruned, new revision ready",
        f"  committed slices 0-2: step 2 of 4 ({_old(report)} old prefill 1, decode 1; {new.revision} new prefill 1, "
        "decode 1)",
        "  next: run rollout step --gitops"]


def _old(report):
    return next(rev for rev in report.sync.slices[0].revisions if rev != report.revision)


def test_a_twelve_slice_fleet_not_synced_keeps_its_sync_part_compact():
    """Reasons that differ per slice only by the LWS's name fold into one line per run of slices."""
    old = make_set({"prefill": 2, "decode": 2}, slices=12)
    new = make_set({"prefill": 2, "decode": 2}, image="img:2", slices=12)
    argo, state = deploy(old)
    report = git_status(argo, new, state)
    assert report.sync.next_action == NextAction.SYNC and len(report.sync.reasons) == 48
    text = format_text(report, NOW)
    git_part = text.partition("\n\n  git: ")[2].splitlines()
    assert len(git_part) == 4, git_part  # the state line, one committed group, next, one folded reason
    assert git_part[-1].startswith("  slices 0-11: leaderworkerset/") and "llm-0-" not in git_part[-1]
    assert not any(" next step: " in line for line in text.splitlines())  # nothing acts on the live LWS but a sync


def test_the_document_is_the_clusters_with_a_sync_object():
    argo, new, state = mid_rollout(slices=3)
    report = git_status(argo, new, state)
    doc = document(report, NOW)
    assert {k: v for k, v in doc.items() if k != "sync"} == to_document(report, NOW)
    assert document(replace(report, sync=None), NOW) == to_document(report, NOW)  # the cluster's: no sync
    assert doc["sync"] == {
        "stateFile": "apps/llm/disagg-rollout-state.yaml", "hasState": True, "synced": True, "pruned": True,
        "ready": True, "nextAction": "run rollout step --gitops", "reasons": [],
        "slices": [{"slices": "slices 0-2", "position": "2/4",
                    "revisions": [{"revision": _old(report), "replicas": {"prefill": 1, "decode": 1}},
                                  {"revision": new.revision, "replicas": {"prefill": 1, "decode": 1}}]}]}
    assert len(doc["slices"]) == 3 and doc["slices"][0]["phase"] == "rolling"
