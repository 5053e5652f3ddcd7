"""Git-driven rollouts without a cluster: the state document and render from it (the step's
pass, rollout/git_step.py, is tests/unit/rollout/test_git_step.py's).

`MemoryArgo` plays Argo CD over a MemoryCluster (apply what render says, prune the rest) and
the LWS controller (settle status); each round commits the state `gitops_step` writes.
"""

from __future__ import annotations

import pytest

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops.render import render_with_state
from kubectl_disagg.gitops.state import state_document
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from tests.fakes.argo import deploy, round_trip
from tests.support.sets import NS, make_set


def test_render_with_a_steady_state_is_the_steady_render():
    ds = make_set({"prefill": 2, "decode": 1}, slices=2)
    argo, state = deploy(ds)
    assert render_with_state(ds, state, NS) == list(render_set(ds, NS))


# --- render from a state ----------------------------------------------------------------------


def test_template_change_renders_old_at_the_sets_replicas_and_new_at_zero():
    """A rollout started from rest starts from what the slice ran at rest: the set's replicas,
    which render gave it there before any step recorded them (design §10.1)."""
    old = make_set({"prefill": 2, "decode": 1})
    _, state = deploy(old)
    new = make_set({"prefill": 3, "decode": 1}, image="img:2")
    objects = render_with_state(new, state, NS)
    lws = {o["metadata"]["labels"][naming.REVISION_LABEL] + "/" + o["metadata"]["labels"][naming.ROLE_LABEL]:
           o for o in objects if o["kind"] == "LeaderWorkerSet"}
    assert {k: o["spec"]["replicas"] for k, o in lws.items()} == {
        f"{old.revision}/prefill": 3, f"{old.revision}/decode": 1,
        f"{new.revision}/prefill": 0, f"{new.revision}/decode": 0}
    annotations = lws[f"{old.revision}/prefill"]["metadata"]["annotations"]
    assert annotations == {naming.INITIAL_REPLICAS_ANNOTATION: "3"}
    assert sum(o["kind"] == "Service" for o in objects) == 4
    # The old revision's LWS is exactly what the old document rendered, bar the annotation and its replicas.
    (before,) = [o for o in render_set(old, NS) if o["metadata"]["name"] == lws[f"{old.revision}/prefill"][
        "metadata"]["name"]]
    assert {**before["spec"], "replicas": 3} == lws[f"{old.revision}/prefill"]["spec"]


def test_placement_and_metadata_changes_never_rewrite_deployed_pod_templates():
    ds = make_set({"prefill": 2, "decode": 1})
    _, state = deploy(ds)
    data = ds.source.data
    data = {**data, "spec": {**data["spec"], "placementPolicy": {"type": "ExclusiveSlice", "topology": "zone"},
                             "roles": [{**role, "metadata": {"labels": {"team": "x"}}} for role in data["spec"]["roles"]]}}
    from kubectl_disagg.core.delivery.sets import load_sets

    (changed,) = load_sets(parse_stream(to_yaml(data), "ds.yaml"))
    assert changed.revision == ds.revision
    assert render_with_state(changed, state, NS) == list(render_set(ds, NS))


def test_strict_mode_refuses_a_set_without_state():
    ds = make_set({"prefill": 1, "decode": 1})
    with pytest.raises(UserError, match="no rollout state"):
        render_with_state(ds, None, NS, require_state=True)
    assert render_with_state(ds, None, NS) == list(render_set(ds, NS))


def test_a_scale_down_with_or_without_a_template_change_is_no_hand_edit():
    ds = make_set({"prefill": 4, "decode": 4})
    _, state = deploy(ds)
    for changed in (make_set({"prefill": 1, "decode": 1}), make_set({"prefill": 1, "decode": 1}, image="img:2")):
        assert round_trip(state, changed) == state


def test_corrupted_yaml_names_the_file_and_line():
    with pytest.raises(UserError) as raised:
        parse_stream("apiVersion: x\nkind: [\n", "disagg-rollout-state.yaml")
    assert raised.value.lines()[0].startswith("disagg-rollout-state.yaml:")


@pytest.mark.parametrize("argv", [
    ["rollout", "step", "--gitops", "llm"],
    ["rollout", "step", "--gitops", "-f", "x.yaml", "--dry-run"],
    ["rollout", "step", "--gitops", "-f", "x.yaml", "--until-complete"],
    ["rollout", "step", "-f", "x.yaml", "--wait"],
    ["rollout", "step", "-f", "x.yaml", "--pr-description", "pr.md"],
])
def test_gitops_flags_that_do_not_go_together_are_usage_errors(argv, capsys):
    from kubectl_disagg.cli import main

    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and capsys.readouterr().out == ""


def test_the_history_a_cluster_step_kept_in_the_object_is_not_part_of_the_committed_document():
    from kubectl_disagg.gitops.served import served_differences
    from kubectl_disagg.gitops.step import initial_state

    ds = make_set({"prefill": 1, "decode": 1})
    state = initial_state(ds, NS)
    live = {**state_document(state), "metadata": {"name": "llm"}, "rollout": {"phase": "AtRest"},
            "history": [{"revision": ds.revision, "outcome": "complete"}], "revisionHistoryLimit": 3}
    assert served_differences(state, live) == []
    assert served_differences(state, {**live, "commits": 7}) == [
        "rolloutstate/llm: live commits differ from the committed state (not synced)"]
