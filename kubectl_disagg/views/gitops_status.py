"""`rollout status --gitops` for people (text) and programs (-o yaml|json). Pure: a
`GitopsStatus` in, text or a document out."""

from __future__ import annotations

from kubectl_disagg.core.controller.planner import format_position
from kubectl_disagg.core.delivery.rollout_status import rollout_document
from kubectl_disagg.gitops.status import GitopsStatus
from kubectl_disagg.manifests.writer import to_json, to_yaml
from kubectl_disagg.views.stops import aborted_words, policy_where
from kubectl_disagg.views.templating import grouped_by_slice, render_template


def _groups(status: GitopsStatus) -> list[dict]:
    items = [(s.slice, (format_position(s.position), tuple((rev, tuple(c.items())) for rev, c in s.revisions.items())))
             for s in status.slices]
    return [{"label": label, "position": position,
             "revisions": [{"revision": rev, "replicas": dict(counts), "new": rev == status.revision}
                           for rev, counts in revisions]}
            for label, (position, revisions) in grouped_by_slice(items)]


def to_document(status: GitopsStatus, state_file: str | None) -> dict:
    """`rollout`: the RolloutPolicy's rollout, with the fields `rollout status -o json` gives in
    the cluster (absent without a policy)."""
    document = {
        "name": status.name, "namespace": status.namespace, "revision": status.revision,
        "stateFile": state_file, "hasState": status.has_state,
        "synced": status.synced, "pruned": status.pruned, "ready": status.ready,
        "available": status.available, "complete": status.complete,
        "nextAction": str(status.next_action), "reasons": list(status.reasons),
        "slices": [{"slices": group["label"], "position": group["position"],
                    "revisions": [{"revision": r["revision"], "replicas": r["replicas"]} for r in group["revisions"]]}
                   for group in _groups(status)],
    }
    if status.paced is not None:
        document["rollout"] = rollout_document(status.paced)
    return document


def policy_line(status: GitopsStatus) -> str:
    """Where the committed position of a RolloutPolicy's rollout stands, in the words of the
    cluster's `rollout status` (`RolloutPolicy: AtGate, wave 1 of 3 (slices 0-0)`) and the fleet's
    count; empty without a policy."""
    paced = status.paced
    if paced is None:
        return ""
    done = f"; {len(paced.done)} of {paced.slices} slices done" if paced.slices > 1 else ""
    return policy_where(paced.phase, paced.wave, len(paced.waves), paced.waves[paced.wave][1]) + done


def set_words(status: GitopsStatus) -> str:
    """The live set: Available or not, and complete; after an abort, rolled back or rolling back
    to the stable revision (the words of the cluster's `rollout status`)."""
    if status.aborted:
        return ("Available, " if status.available else "not Available, ") + aborted_words(status.serving,
                                                                                          status.available)
    if not status.available:
        return "not Available"
    return "Available, complete" if status.complete else "Available, not complete"


def format_text(status: GitopsStatus, state_file: str | None) -> str:
    return render_template("gitops_status.txt.j2", status=status, state_file=state_file, groups=_groups(status),
                           policy=policy_line(status), set_words=set_words(status))


def format_looks(looks, output: str) -> str:
    """One look at every set (`gitops.watch.SetLook`s): text, or one YAML/JSON document (a
    list under `items` for several sets)."""
    if output == "text":
        return "".join(format_text(s.status, s.path) for s in looks)
    documents = [to_document(s.status, s.path) for s in looks]
    document = documents[0] if len(documents) == 1 else {"items": documents}
    return to_yaml(document) if output == "yaml" else to_json(document)
