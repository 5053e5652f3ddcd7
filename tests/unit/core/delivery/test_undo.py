"""`rollout undo`'s choice of revision and its edits (core/delivery/undo.py): the written-back templates
hash to the revision chosen."""

from __future__ import annotations

import copy

from kubectl_disagg.core.delivery.history import ABORTED, COMPLETE, Commit, RevisionEntry, templates_of
from kubectl_disagg.core.delivery.sets import set_from_object
from kubectl_disagg.core.api.template_edit import applied
from kubectl_disagg.core.delivery.undo import target_of, undo_edits
from kubectl_disagg.manifests.source import REMOVED
from tests.support.sets import make_set

A, B, C = (make_set({"prefill": 1, "decode": 1}, image=f"img:{n}") for n in (1, 2, 3))


def entry(ds, outcome=COMPLETE):
    return RevisionEntry(ds.revision, Commit("", "alice", "t", ""), templates_of(ds), None, outcome,
                         templates=templates_of(ds))


def test_the_default_target_is_the_newest_other_revision_not_aborted():
    history = [entry(A), entry(B), entry(C, ABORTED)]
    assert target_of(history, C.revision, None).revision == B.revision
    assert target_of([entry(A), entry(B, ABORTED), entry(C)], C.revision, None).revision == A.revision
    assert target_of(history, C.revision, A.revision).revision == A.revision
    assert target_of(history, C.revision, C.revision) == f"the set is at revision {C.revision} already"
    assert target_of(history, C.revision, "deadbeef").startswith("no revision deadbeef in its history (revisions: ")
    assert target_of([entry(C)], C.revision, None).startswith("no earlier revision to go back to")


def test_the_edits_write_the_templates_back_and_the_set_names_the_revision_again():
    data = copy.deepcopy(C.source.data)
    for whole in (True, False):
        edits, refusals = undo_edits(data, templates_of(A), whole=whole)
        assert refusals == []
        assert set_from_object(applied(data, edits)).revision == A.revision
    edits, _ = undo_edits(data, templates_of(A), whole=False)
    assert edits == [(("spec", "roles", i, "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", 0,
                       "image"), "img:1") for i in (0, 1)]


def test_structural_differences_are_the_smallest_edits_a_file_can_take():
    """A key the revision lacks is removed; a list of another length, or a number, is written
    whole at its key; text values stay one edit each."""
    data = copy.deepcopy(C.source.data)
    data["spec"]["roles"][0]["spec"]["leaderWorkerTemplate"]["size"] = 2
    data["spec"]["roles"][1]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["args"] = ["x"]
    edits, refusals = undo_edits(data, templates_of(A), whole=False)
    lwt = ("spec", "roles", 1, "spec", "leaderWorkerTemplate")
    assert refusals == [] and (("spec", "roles", 0, "spec", "leaderWorkerTemplate", "size"), REMOVED) in edits
    assert (lwt + ("workerTemplate", "spec", "containers", 0, "args"), REMOVED) in edits
    assert set_from_object(applied(data, edits)).revision == A.revision
    then = copy.deepcopy(A.source.data)
    then["spec"]["roles"][1]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["args"] = \
        ["--a", "--b"]
    data["spec"]["roles"][1]["spec"]["leaderWorkerTemplate"]["size"] = 3
    back = set_from_object(then)
    edits, refusals = undo_edits(data, templates_of(back), whole=False)
    assert refusals == [] and (lwt + ("workerTemplate", "spec", "containers", 0, "args"), ["--a", "--b"]) in edits
    assert (lwt + ("size",), REMOVED) in edits
    assert set_from_object(applied(data, edits)).revision == back.revision
    edits, refusals = undo_edits(data, templates_of(A), whole=True)
    assert refusals == [] and set_from_object(applied(data, edits)).revision == A.revision
    other = make_set({"prefill": 1, "encode": 1}, image="img:1")
    _, refusals = undo_edits(data, templates_of(other), whole=True)
    assert refusals == [(("spec", "roles"), f"revision {other.revision} has the roles prefill, encode and the set "
                                            "has prefill, decode: undo writes templates back, not roles")]


def test_issue47_templates_that_do_not_make_their_revision_are_refused():
    """Templates recorded under another revision's name (a history edited by hand): no edits
    are made that would leave the set at a revision the undo does not name."""
    from dataclasses import replace

    from kubectl_disagg.core.delivery.undo import revision_of

    data = copy.deepcopy(C.source.data)
    forged = replace(templates_of(A), revision=B.revision)
    for whole in (True, False):
        _, refusals = undo_edits(data, forged, whole=whole)
        assert refusals == [(("spec", "roles"), f"the templates recorded for revision {B.revision} give revision "
                             f"{A.revision}: the history cannot explain this revision (edited by hand?)")]
    assert revision_of(data) == C.revision
