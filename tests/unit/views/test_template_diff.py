"""The template difference between two revisions, as a pull request shows it."""

from __future__ import annotations

from kubectl_disagg.core.api.model import Placement
from kubectl_disagg.gitops.state import RevisionRecord, RoleRecord
from kubectl_disagg.views.template_diff import MAX_DIFF_LINES, changes, flatten


def record(revision, **roles):
    return RevisionRecord(revision, Placement(), tuple(RoleRecord(name, {"leaderWorkerTemplate": spec}, {}, {}, False)
                                                       for name, spec in roles.items()))


def pod(*containers, **extra):
    return {"workerTemplate": {"spec": {"containers": list(containers), **extra}}}


def test_named_items_match_by_name_and_plain_lists_item_by_item():
    old = record("a", prefill=pod({"name": "main", "image": "r/x:1", "args": ["--a", "--b"]},
                                  {"name": "side", "image": "s:1"}))
    new = record("b", prefill=pod({"name": "init", "image": "i:1"},  # inserted first: no renumbering
                                  {"name": "main", "image": "r/x:2", "args": ["--a", "--c", "--b"]},
                                  {"name": "side", "image": "s:1"}))
    out = changes([old], new)
    assert out["summary"] == ["prefill: image r/x `1 → 2`", "prefill: args 1 item added (`--c`)",
                              "prefill: `workerTemplate.spec.containers[init].image` added: `i:1`"]
    assert out["diff"] == [" prefill: workerTemplate.spec.containers[main].image", "-  r/x:1", "+  r/x:2",
                           " prefill: workerTemplate.spec.containers[main].args", "+  - --c",
                           " prefill: workerTemplate.spec.containers[init].image", "+  i:1"]


def test_roles_added_and_removed_and_a_shared_change_named_once():
    old = record("a", prefill=pod({"name": "c", "image": "m:1"}), decode=pod({"name": "c", "image": "m:1"}))
    new = record("b", prefill=pod({"name": "c", "image": "m:2"}), encode=pod({"name": "c", "image": "m:2"}))
    out = changes([old], new)
    assert out["summary"] == ["prefill: image m `1 → 2`", "encode: role added", "decode: role removed"]
    assert "+role encode" in out["diff"] and "-role decode" in out["diff"]


def test_a_long_diff_is_cut_and_says_how_much_is_left_and_control_characters_are_escaped():
    old = record("a", prefill=pod({"name": "c", "image": "m:1", "args": [f"--x{i}" for i in range(60)]}))
    new = record("b", prefill=pod({"name": "c", "image": "m:1", "args": ["evil\n```"]}))
    out = changes([old], new)
    assert len(out["diff"]) == MAX_DIFF_LINES and out["truncated"] == 62 - MAX_DIFF_LINES
    assert all("\n" not in line and "`" not in line for line in out["diff"])


def test_replicas_are_no_template_change():
    assert flatten({"replicas": 3, "leaderWorkerTemplate": {"size": 2}}) == {"size": 2}
