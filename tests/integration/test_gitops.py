"""Git-driven rollouts against the real kube-apiserver, in a real git repository.

Each round does what Argo CD and a reviewer would: `cmp generate` over the committed tree (for
a cluster that serves the RolloutState kind, so the state is emitted as an object), apply it
with server-side apply as `argocd-controller` after Argo CD's own RespectIgnoreDifferences
normalization against the live objects (the Application of deploy/argocd, through the
harness: tests/oracles/argocd_harness.py `sync_targets`), prune what it applied before and no longer
renders; the LWS simulator makes the LWS ready; `rollout step --gitops` (as a user who may only
get, list and watch LeaderWorkerSets and get RolloutStates) writes the next state; the round
commits it. After every sync the rollout invariants hold on the live objects, and Argo CD's
health of the live state object (its Lua VM, with deploy/argocd's argocd-cm) is Suspended
mid-rollout and Healthy at rest.
"""

from __future__ import annotations

import json
import os
import re
import time

import pytest
import yaml

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.naming import STATE_FILE
from kubectl_disagg.exits import StepExit
from tests.support.git_repo import GitopsRepo, READER, deploy
from tests.support.stepping import Live, SET, assert_matches_render, model
from tests.support.sets import set_selector


def assert_done(repo: GitopsRepo) -> None:
    ds = model(repo.set_file)
    assert_matches_render(ds, repo.live)
    state = yaml.safe_load(repo.state_file.read_text())
    assert [r["revision"] for r in state["revisions"]] == [ds.revision]


def test_first_deploy_then_template_change_with_two_slices(repo):
    deploy(repo, {"prefill": 2, "decode": 2}, slices=2)
    repo.change_set("new image", {"prefill": 2, "decode": 2}, slices=2, image="img:2")
    runs = repo.roll()
    assert len(runs) > 3
    assert_done(repo)


def test_template_and_scale_change(repo):
    deploy(repo, {"prefill": 2, "decode": 1})
    repo.change_set("new image, more decode", {"prefill": 3, "decode": 3}, image="img:2",
                    rolling={"decode": {"maxSurge": 1}})
    repo.roll()
    assert_done(repo)


def test_placement_change_alone_rewrites_no_deployed_pod_template(repo):
    deploy(repo, {"prefill": 1, "decode": 1})
    before = {o["metadata"]["name"]: (o["metadata"]["generation"], o["spec"]) for o in repo.live.lws()}
    document = yaml.safe_load(repo.set_file.read_text())
    document["spec"]["placementPolicy"] = {"type": "ExclusiveSlice", "topology": "topology.kubernetes.io/zone"}
    repo.set_file.write_text(yaml.safe_dump(document, sort_keys=False))
    repo.commit("exclusive placement")
    repo.sync()
    after = {o["metadata"]["name"]: (o["metadata"]["generation"], o["spec"]) for o in repo.live.lws()}
    assert after == before
    repo.simulator.sync(repo.namespace)
    assert repo.step().code == StepExit.COMPLETE
    assert repo.clean()


def test_second_template_change_mid_rollout(repo):
    deploy(repo, {"prefill": 2, "decode": 2})
    repo.change_set("image 2", {"prefill": 2, "decode": 2}, image="img:2")
    repo.advance(3)
    assert len(repo.live.groups()[0]) == 2
    repo.change_set("image 3", {"prefill": 2, "decode": 2}, image="img:3")
    repo.roll()
    assert_done(repo)


def test_a_step_before_the_previous_one_is_synced_or_ready_waits_and_writes_nothing(repo, tmp_path):
    deploy(repo, {"prefill": 2, "decode": 2})
    repo.change_set("image 2", {"prefill": 2, "decode": 2}, image="img:2")
    run = repo.step()  # committed, not synced
    assert run.code == StepExit.WAITING, run.out
    assert "not live yet" in run.out and repo.clean()
    repo.sync()
    repo.simulator.sync(repo.namespace)
    description = tmp_path / "pr.md"
    run = repo.step("--pr-description", str(description))
    assert run.code == StepExit.OK
    text = description.read_text()
    assert text.startswith(f"llm: rollout to {model(repo.set_file).revision}, step 1\n")
    assert "Why this step is safe" in text and "→" in text and "```mermaid" in text
    repo.commit("step 1")
    repo.sync()  # synced, but the LWS controller has not seen the new spec yet
    run = repo.step()
    assert run.code == StepExit.WAITING and "status is stale" in run.out and repo.clean()
    new_revision = model(repo.set_file).revision
    repo.simulator.never_ready(labels={naming.REVISION_LABEL: new_revision})
    repo.simulator.sync(repo.namespace)  # seen, not ready
    run = repo.step()
    assert run.code == StepExit.WAITING and "0/1 ready" in run.out and repo.clean()
    repo.simulator.clear()
    run = repo.step("-o", "json")
    document = json.loads(run.out)
    assert run.code == StepExit.WAITING and document["outcome"] == "waiting" and not document["written"]
    run = repo.step("--wait", "--timeout", "2s")
    assert run.code == StepExit.TIMEOUT and repo.clean()
    with repo.simulator.running(repo.namespace, delay=0.5):
        run = repo.step("--wait", "--timeout", "60s")
    assert run.code == StepExit.OK and not repo.clean()


def test_a_set_rolled_by_rollout_step_moves_to_git_mid_rollout(repo):
    repo.change_set("add the set", {"prefill": 2, "decode": 2})
    live_step = ("rollout", "step", "-f", str(repo.set_file), "--kubeconfig", str(repo.control_plane.kubeconfig),
                 "--context", "admin")
    assert repo.cli(*live_step).code == 0
    repo.simulator.sync(repo.namespace)
    repo.change_set("image 2", {"prefill": 2, "decode": 2}, image="img:2")
    for _ in range(3):  # rollout started, then two steps, all live
        assert repo.cli(*live_step).code == 0
        repo.simulator.sync(repo.namespace)
    before = repo.live.groups()
    run = repo.step()
    assert run.code == StepExit.OK and "adopted" in run.out, run
    repo.commit("adopt the live rollout")
    repo.sync()  # Argo CD takes the objects over: nothing moves
    assert repo.live.groups() == before
    repo.roll()
    assert_done(repo)


# --- mistakes: each refused at the sync with one line, or harmless --------------------------------


def test_a_set_committed_without_its_state_is_refused_until_init(repo):
    repo.change_set("add the set", {"prefill": 2, "decode": 2})
    line = repo.refused_sync()
    assert "disaggregatedset/llm: no rollout state" in line and "rollout state init" in line
    assert repo.live.groups() == {}
    run = repo.cli("rollout", "state", "init", "-f", str(repo.root))
    assert run.code == 0, run.err
    repo.commit("rollout state")
    assert len(repo.roll()) == 1
    repo.change_set("image 2", {"prefill": 2, "decode": 2}, image="img:2")
    repo.roll()
    assert_done(repo)


def test_a_directory_for_steady_states_only_turns_the_requirement_off(repo):
    repo.parameters = {"ARGOCD_ENV_REQUIRE_ROLLOUT_STATE": "false"}
    repo.change_set("add the set", {"prefill": 1, "decode": 1})
    repo.sync()
    assert_matches_render(model(repo.set_file), repo.live)


def _edit_state(repo, edit) -> str:
    """Commit a hand edit of the state, expect the sync refused with one line, then revert it."""
    document = yaml.safe_load(repo.state_file.read_text())
    edit(document)
    repo.state_file.write_text(yaml.safe_dump(document, sort_keys=False))
    repo.commit("hand edit")
    try:
        return repo.refused_sync()
    finally:
        repo.git("revert", "--no-edit", "HEAD")


def _entry(document, slice_index, revision):
    entry = next(e for e in document["slices"] if e["slice"] == slice_index)
    return next(r for r in entry["revisions"] if r["revision"] == revision)


def _two_steps_in(repo, replicas: dict[str, int], slices: int):
    """A rollout two steps in, synced and ready: (old revision, new revision, live groups)."""
    deploy(repo, replicas, slices=slices)
    old = model(repo.set_file).revision
    repo.change_set("image 2", replicas, slices=slices, image="img:2")
    repo.advance(2)
    repo.sync()
    repo.simulator.sync(repo.namespace)
    return old, model(repo.set_file).revision, repo.live.groups()


def test_hand_edits_that_break_the_plan_are_refused_at_the_sync(repo):
    old, new, before = _two_steps_in(repo, {"prefill": 2, "decode": 2}, 2)

    def old_at_zero(document):
        _entry(document, 0, old)["replicas"] = {"prefill": 0, "decode": 0}

    def jump_to_the_end(document):
        for entry in document["slices"]:
            entry["revisions"] = [{"revision": new, "replicas": {"prefill": 2, "decode": 2}}]

    def remove_old(document):
        entry = document["slices"][0]
        entry["revisions"] = [r for r in entry["revisions"] if r["revision"] == new]

    def skip_a_step(document):
        _entry(document, 0, new)["replicas"] = {"prefill": 2, "decode": 2}

    def other_set(document):
        document["metadata"]["name"] = "mistral"

    def seventh_slice(document):
        document["slices"].append({**document["slices"][0], "slice": 7})

    cases = {
        old_at_zero: "capacity never below the floor",
        jump_to_the_end: "a revision leaves only once drained",
        remove_old: "a revision leaves only once drained",
        skip_a_step: "one step at a time",
        (lambda d: d["slices"].pop(1)): "slice 1 has no counts",
        (lambda d: d.update(slices=[])): "slice 0 has no counts",
        seventh_slice: "slice 7 is recorded",
        other_set: "every state matches a set",
    }
    for edit, rule in cases.items():
        line = _edit_state(repo, edit)
        assert line.startswith("disagg-rollout-state.yaml:") or "disagg-rollout-state.yaml:" in line, line
        assert rule in line, (rule, line)
    assert repo.live.groups() == before  # nothing ever synced
    repo.roll()
    assert_done(repo)


def _refused_everywhere(repo, edit) -> list[str]:
    """Commit a hand edit of the state: `cmp generate` and `render -f DIR` both exit 1 with
    FILE:LINE lines and nothing on stdout, nothing syncs; then revert it."""
    document = yaml.safe_load(repo.state_file.read_text())
    edit(document)
    repo.state_file.write_text(yaml.safe_dump(document, sort_keys=False))
    repo.commit("hand edit")
    try:
        generated = repo.generate_committed()
        rendered = repo.cli("render", "-f", str(repo.root))
        for run in (generated, rendered):
            assert run.code == 1 and run.out == "", run
        lines = [line.removeprefix(f"{repo.root}/") for line in rendered.err.splitlines()]
        assert all(re.match(rf"{STATE_FILE}:\d+: \S+: ", line) and line in generated.err for line in lines), (
            rendered.err, generated.err)  # (the plugin's one line for Argo CD's message holds them all)
        return lines
    finally:
        repo.git("revert", "--no-edit", "HEAD")


def test_state_edits_that_would_replace_slices_whole_are_refused_and_a_slice_is_added_by_a_step(repo):
    """Issue 34, items 1 and 2, through `render -f DIR` and `cmp generate`: from three slices
    mid-rollout (old 6 and new 2 of 7 per slice), edits that rendered a big bang with exit 0."""
    old, new, before = _two_steps_in(repo, {"prefill": 3, "decode": 4}, 3)
    assert {rev: sum(counts.values()) for rev, counts in before[2].items()} == {old: 6, new: 2}

    def no_slices(document):
        document["target"]["slices"] = 0
        document["slices"] = []

    def two_slices(document):
        document["target"]["slices"] = 2
        document["slices"] = [entry for entry in document["slices"] if entry["slice"] != 2]

    def format_1(document):
        document["formatVersion"] = 1
        del document["target"]
        for entry in document["slices"]:
            del entry["previous"]
            _entry(document, entry["slice"], old)["replicas"] = {"prefill": 0, "decode": 0}
            _entry(document, entry["slice"], new)["replicas"] = {"prefill": 3, "decode": 4}

    def copied(counts):
        def edit(document):
            for entry in document["slices"]:
                _entry(document, entry["slice"], counts[0])["replicas"] = counts[1]
                entry["previous"] = [dict(r) for r in entry["revisions"]]
        return edit

    cases = {
        no_slices: (3, "slice 0 has no counts: the set has 3 slices, the state's last step was for 0"),
        two_slices: (1, "slices: slice 2 has no counts: the set has 3 slices, the state's last step was for 2"),
        format_1: (1, "formatVersion: a format 1 state records no previous point"),
        copied((old, {"prefill": 0, "decode": 0})): (6, "(rule: capacity never below the floor)"),
        copied((new, {"prefill": 3, "decode": 4})): (6, "(rule: within target + maxSurge)"),
    }
    for edit, (count, rule) in cases.items():
        lines = _refused_everywhere(repo, edit)
        assert len(lines) == count and rule in lines[0], (rule, lines)
    assert repo.live.groups() == before  # nothing ever synced

    repo.change_set("a fourth slice", {"prefill": 3, "decode": 4}, slices=4, image="img:2")
    line = repo.refused_sync()
    assert "slice 3 has no counts: the set has 4 slices" in line and "rollout step --gitops" in line, line
    run = repo.step()  # reads the live LWS: the state's render for its three slices
    assert run.code == StepExit.OK and "create leaderworkerset/llm-3-" in run.out, run
    repo.commit("rollout step: a fourth slice")
    repo.roll()
    assert_done(repo)


def test_an_abort_rolls_back_step_by_step(repo):
    deploy(repo, {"prefill": 3, "decode": 2})
    repo.change_set("image 2", {"prefill": 3, "decode": 2}, image="img:2")
    repo.advance(3)
    repo.change_set("revert image 2", {"prefill": 3, "decode": 2})
    runs = repo.roll()
    assert len(runs) > 1
    assert_done(repo)


def test_a_scale_mid_rollout(repo):
    """A scale mid-rollout syncs at once (design §10.1, issue 40): the rolling slice keeps the
    counts its last step wrote, the slice removed goes, and the steps roll to the new targets."""
    deploy(repo, {"prefill": 2, "decode": 3}, slices=2)
    repo.change_set("image 2", {"prefill": 2, "decode": 3}, slices=2, image="img:2")
    repo.advance(2)
    repo.sync()
    repo.simulator.sync(repo.namespace)
    rolling = repo.live.groups()[0]
    assert len(rolling) == 2, rolling
    repo.change_set("fewer decode, one slice", {"prefill": 2, "decode": 1}, slices=1, image="img:2")
    repo.sync()  # no refusal: the commit renders as it is
    assert repo.live.groups() == {0: rolling}
    assert repo.step().code == StepExit.OK
    state = yaml.safe_load(repo.state_file.read_text())
    assert {r["name"]: r["replicas"] for r in state["target"]["roles"]} == {"prefill": 2, "decode": 1}
    repo.commit("rollout step: toward the new targets")
    repo.roll()
    assert_done(repo)


def test_a_state_file_of_another_name_and_adopting_what_argo_cd_synced(repo):
    repo.state_file = repo.root / "llm-state.yaml"
    repo.parameters = {"ARGOCD_ENV_ROLLOUT_STATE": "llm-state.yaml"}
    repo.step_args = ["--state", str(repo.state_file)]
    deploy(repo, {"prefill": 2, "decode": 2})
    repo.label_tracking = True
    assert not (repo.root / STATE_FILE).exists()
    repo.change_set("image 2", {"prefill": 2, "decode": 2}, image="img:2")
    repo.advance(2)
    repo.sync()
    repo.simulator.sync(repo.namespace)
    # A plain rollout step would fight the sync: refused while the set is driven through git.
    plain = repo.cli("rollout", "step", "-f", str(repo.set_file), "--kubeconfig",
                     str(repo.control_plane.kubeconfig), "--context", "admin")
    assert plain.code == 0  # the state has another name: nothing beside the set says "git"
    repo.git("rm", "-q", "llm-state.yaml")
    repo.commit("the state is lost mid-rollout")
    assert "no rollout state" in repo.refused_sync()  # not a big-bang: nothing synced
    run = repo.step()
    assert run.code == StepExit.OK and "adopted" in run.out, run
    text = repo.state_file.read_text()
    assert "app.kubernetes.io/instance" not in text and "source-revision" not in text and "argocd" not in text
    repo.commit("adopt")
    repo.roll()
    repo.label_tracking = False
    repo.sync()
    # Annotation tracking leaves the instance label it finds live (util/argo/resource_tracking.go
    # Normalize drops it from the live side only), and RespectIgnoreDifferences carries it over.
    objects = repo.live.lws() + repo.live.services()
    assert objects and all(o["metadata"]["labels"]["app.kubernetes.io/instance"] == "llm" for o in objects)
    repo.control_plane.kubectl("label", "leaderworkerset,service", "-l", set_selector(SET),
                               "app.kubernetes.io/instance-", "-n", repo.namespace)
    assert_done(repo)


def test_a_plain_rollout_step_refuses_a_set_driven_through_git(repo):
    deploy(repo, {"prefill": 1, "decode": 1})
    live_step = ("rollout", "step", "-f", str(repo.set_file), "--kubeconfig", str(repo.control_plane.kubeconfig),
                 "--context", "admin")
    run = repo.cli(*live_step)
    assert run.code == 3 and "driven through git" in run.err
    assert repo.cli(*live_step, "--ignore-rollout-state").code == 0


# --- autoscaled roles ---------------------------------------------------------------------------

AUTOSCALER = "autoscaler"  # the field manager of what an HPA or KEDA writes through /scale


def _autoscale(repo, revision: str, replicas: int) -> None:
    name = f"{SET}-0-{revision}-decode"
    repo.control_plane.kubectl("patch", "leaderworkerset", name, "-n", repo.namespace, "--subresource=scale",
                               "--type=merge", "-p", json.dumps({"spec": {"replicas": replicas}}),
                               f"--field-manager={AUTOSCALER}")


def _decode_sizes(repo) -> dict[str, int]:
    return {revision: roles["decode"] for revision, roles in repo.live.groups().get(0, {}).items()}


def _external(repo, prefill: int = 2, **kwargs) -> None:
    repo.change_set("set", {"prefill": prefill, "decode": 1}, **kwargs)
    _decode_external(repo, "decode is autoscaled")


def _decode_external(repo, message: str) -> None:
    """Commit the set file with decode's `scaling.mode: External`."""
    document = yaml.safe_load(repo.set_file.read_text())
    document["spec"]["roles"][1]["scaling"] = {"mode": "External"}
    repo.set_file.write_text(yaml.safe_dump(document, sort_keys=False))
    repo.commit(message)


def _decode_owners(repo) -> dict[str, str | None]:
    return {o["metadata"]["name"]: (o["metadata"].get("annotations") or {}).get(naming.REPLICAS_OWNER_ANNOTATION)
            for o in repo.live.lws() if o["metadata"]["labels"][naming.ROLE_LABEL] == "decode"}


def test_an_autoscaled_role_keeps_its_size_at_every_sync(repo):
    """The sync's field manager vs an autoscaler writing through /scale with its own: the
    autoscaled size survives every sync at rest, the start of a rollout, each step and its end
    (each sync is Argo CD's: `GitopsRepo.sync` fails on an LWS falling below its live size)."""
    def external(**kwargs):
        _external(repo, **kwargs)

    external()
    assert repo.cli("rollout", "state", "init", "-f", str(repo.root)).code == 0
    repo.commit("rollout state")
    assert len(repo.roll()) == 1
    old = model(repo.set_file).revision
    _autoscale(repo, old, 4)
    repo.simulator.sync(repo.namespace)
    repo.sync()
    assert _decode_sizes(repo) == {old: 4}
    assert repo.step().code == StepExit.COMPLETE and repo.clean()  # only the autoscaler moved: no commit
    external(image="img:2")
    new = model(repo.set_file).revision
    for round_ in range(20):
        repo.sync()
        sizes = _decode_sizes(repo)
        assert sum(sizes.values()) >= 4, (round_, sizes)  # never below the autoscaled capacity
        assert sum(sizes.values()) <= 4 + 1, (round_, sizes)  # target + surge
        repo.simulator.sync(repo.namespace)
        run = repo.step()
        if run.code == StepExit.COMPLETE:
            break
        assert run.code == StepExit.OK, run
        repo.commit(f"step {round_}")
    assert _decode_sizes(repo) == {new: 4}
    _autoscale(repo, new, 6)  # the autoscaler has the role back
    repo.simulator.sync(repo.namespace)
    repo.sync()
    assert _decode_sizes(repo) == {new: 6}
    assert repo.step().code == StepExit.COMPLETE and repo.clean()
    run = repo.cli("rollout", "plan", "-f", str(repo.set_file), "--from", "2,6", "-o", "json")
    assert run.code == 0 and json.loads(run.out)["steps"][-1]["new"] == [2, 6]  # the stepper's target


def test_a_role_made_external_at_rest_is_handed_back_without_a_drop(repo):
    """The state sized decode (Argo CD's field manager owns its replicas) until a commit makes
    it External, which is no part of the revision: that commit renders `handing-back`, so the
    sync keeps the state's count, and the step after it hands the size to the autoscaler."""
    deploy(repo, {"prefill": 2, "decode": 3})
    revision = model(repo.set_file).revision
    _decode_external(repo, "decode is autoscaled now")
    assert model(repo.set_file).revision == revision
    repo.sync()  # (fails on an LWS falling below its live size unless the commit said so)
    assert _decode_sizes(repo) == {revision: 3}
    assert set(_decode_owners(repo).values()) == {naming.REPLICAS_OWNER_HANDING_BACK}
    run = repo.step()
    assert run.code == StepExit.OK and "hands the size of the External roles back" in run.out, run
    repo.commit("hand decode to its autoscaler")
    repo.sync()
    assert set(_decode_owners(repo).values()) == {naming.REPLICAS_OWNER_AUTOSCALER}
    _autoscale(repo, revision, 5)
    repo.simulator.sync(repo.namespace)
    repo.sync()
    assert _decode_sizes(repo) == {revision: 5}
    assert repo.step().code == StepExit.COMPLETE and repo.clean()


def test_an_hpa_on_the_role_scaler_is_refused_at_the_sync_and_one_on_the_lws_autoscales(repo):
    """docs/autoscaling.md's HPA targets the RoleScaler, which nothing creates when git drives the
    set: committed beside it, the sync is refused with one line naming the LWS to target; the
    HPA pointed there syncs, and what it writes through /scale survives the next sync."""
    _external(repo)
    assert repo.cli("rollout", "state", "init", "-f", str(repo.root)).code == 0
    repo.commit("rollout state")
    repo.roll()
    revision = model(repo.set_file).revision
    lws = f"llm-0-{revision}-decode"
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "llm-decode", "namespace": repo.namespace},
           "spec": {"minReplicas": 1, "maxReplicas": 8, "scaleTargetRef": {
               "apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSetRoleScaler",
               "name": "llm-decode"}}}
    (repo.root / "hpa.yaml").write_text(yaml.safe_dump(hpa, sort_keys=False))
    repo.commit("autoscale decode as docs/autoscaling.md says")
    before = repo.live.groups()
    line = repo.refused_sync()
    assert line.startswith("hpa.yaml:") and "spec.scaleTargetRef" in line and "driven through git" in line
    assert f"target the LeaderWorkerSet {lws} " in line
    assert repo.live.groups() == before
    hpa["spec"]["scaleTargetRef"] = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                                     "name": lws}
    (repo.root / "hpa.yaml").write_text(yaml.safe_dump(hpa, sort_keys=False))
    repo.commit("autoscale the LWS")
    repo.sync()
    _autoscale(repo, revision, 3)
    repo.sync()
    assert _decode_sizes(repo) == {revision: 3}


def test_an_autoscaled_role_through_a_rollout_an_abort_and_a_scale(repo):
    """Argo CD's sync of an External role across a git rollout that is aborted (the template
    reverted mid-way), rolled back, handed back to the autoscaler, then a scale of another role:
    at no synced point does an LWS fall below its live size unless the state commanded it, the
    rollback ends at the size the state gave, and the hand-back goes through `handing-back` on
    the live object before `autoscaler`."""
    _external(repo)
    assert repo.cli("rollout", "state", "init", "-f", str(repo.root)).code == 0
    repo.commit("rollout state")
    repo.roll()
    old = model(repo.set_file).revision
    _autoscale(repo, old, 3)
    repo.simulator.sync(repo.namespace)
    _external(repo, image="img:2")
    new = model(repo.set_file).revision
    repo.advance(3)  # the rollout is under way: the state sizes decode
    assert set(_decode_owners(repo).values()) == {None}
    _external(repo)  # abort: the template reverted
    seen = []
    for _ in range(30):
        repo.sync()  # (an LWS below its live size fails it, unless the state commanded that size:
        owners = set(_decode_owners(repo).values())  # a rollout over a rollout drains a group at a time)
        if not seen or seen[-1] != owners:
            seen.append(owners)
        repo.simulator.sync(repo.namespace)
        run = repo.step()
        if run.code == StepExit.COMPLETE:
            break
        assert run.code == StepExit.OK, run
        repo.commit("step")
    assert seen[-2:] == [{naming.REPLICAS_OWNER_HANDING_BACK}, {naming.REPLICAS_OWNER_AUTOSCALER}], seen
    (rest,) = yaml.safe_load(repo.state_file.read_text())["slices"][0]["revisions"]
    assert new != old and _decode_sizes(repo) == {old: rest["replicas"]["decode"]}  # the size the state gave
    _autoscale(repo, old, 5)
    repo.simulator.sync(repo.namespace)
    repo.sync()
    assert _decode_sizes(repo) == {old: 5}
    _external(repo, prefill=3)  # a scale of the other role: direct, decode stays the autoscaler's
    for _ in range(5):
        repo.sync()
        assert _decode_sizes(repo) == {old: 5}
        repo.simulator.sync(repo.namespace)
        run = repo.step()
        if run.code == StepExit.COMPLETE:
            break
        repo.commit("step")
    assert run.code == StepExit.COMPLETE and repo.live.groups() == {0: {old: {"prefill": 3, "decode": 5}}}


def test_rollout_status_gitops_names_the_next_action_at_every_point(repo):
    deploy(repo, {"prefill": 2, "decode": 1})
    assert repo.next_action() == ("complete", StepExit.COMPLETE)
    started = time.monotonic()  # -w on a complete rollout: nothing to wait for (it waited out --timeout)
    run = repo.status("-w", "--timeout", "30s")
    assert (run.code, "next: complete" in run.out) == (StepExit.COMPLETE, True) and time.monotonic() - started < 20
    repo.change_set("image 2", {"prefill": 2, "decode": 1}, image="img:2")
    assert repo.next_action() == ("wait for the sync", StepExit.WAITING)  # committed, not synced
    run = repo.status("-w", "--timeout", "2s")
    assert run.code == StepExit.TIMEOUT and "next: wait for the sync" in run.out
    for _ in range(20):
        repo.sync()
        repo.check_state_health()
        action, code = repo.next_action()
        if action == "complete":
            break
        assert (action, code) in {("wait for readiness", StepExit.WAITING), ("run rollout step --gitops", StepExit.OK)}
        repo.simulator.sync(repo.namespace)
        assert repo.next_action() == ("run rollout step --gitops", StepExit.OK)
        assert repo.step().code == StepExit.OK
        repo.commit("step")
        assert repo.next_action() == ("wait for the sync", StepExit.WAITING)
    assert_done(repo)
    text = repo.status().out
    assert "next: complete" in text and "slice 0: at rest" in text


def test_rollout_status_gitops_watch_ends_when_the_next_action_changes(repo):
    deploy(repo, {"prefill": 1, "decode": 1})
    repo.change_set("image 2", {"prefill": 1, "decode": 1}, image="img:2")
    repo.sync()
    repo.simulator.sync(repo.namespace)
    assert repo.step().code == StepExit.OK
    repo.commit("step 1")
    repo.sync()
    assert repo.next_action() == ("wait for readiness", StepExit.WAITING)
    with repo.simulator.running(repo.namespace, delay=0.5):
        run = repo.status("-w", "--timeout", "60s")
    assert run.code == StepExit.OK
    assert run.out.index("next: wait for readiness") < run.out.index("next: run rollout step --gitops")


def test_step_commit_writes_the_state_and_commits_it_with_the_pull_request_text(repo, monkeypatch):
    for variable in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(variable, "rollout bot")  # the committer's identity, as a bot would set it
    for variable in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(variable, "bot@example.invalid")
    deploy(repo, {"prefill": 2, "decode": 1})
    repo.change_set("image 2", {"prefill": 2, "decode": 1}, image="img:2")
    repo.sync()
    repo.simulator.sync(repo.namespace)
    state_before = repo.state_file.read_text()
    (repo.root / "notes.txt").write_text("unrelated\n")
    run = repo.step("--commit")
    assert run.code == 1 and "changes beyond the rollout state (notes.txt)" in run.err
    assert repo.state_file.read_text() == state_before  # refused before anything was written
    (repo.root / "notes.txt").unlink()
    repo.git("branch", "taken")
    run = repo.step("--commit", "--branch", "taken")
    assert run.code == 1 and "the branch exists already" in run.err and repo.clean()
    head = repo.git("rev-parse", "HEAD").strip()
    run = repo.step("--commit", "--branch", "rollout/llm-1")
    assert run.code == StepExit.OK and repo.clean(), run
    revision = model(repo.set_file).revision
    assert repo.git("rev-parse", "--abbrev-ref", "HEAD").strip() == "rollout/llm-1"
    assert repo.git("rev-parse", "HEAD~1").strip() == head
    assert repo.git("log", "-1", "--format=%s").strip() == f"llm: rollout to {revision}, step 1"
    body = repo.git("log", "-1", "--format=%b")
    assert "### What this rollout is for" in body and "```mermaid" in body and "### Slice 0: step 1 of 4" in body
    assert repo.git("show", "--name-only", "--format=", "HEAD").split() == [STATE_FILE]
    # The next run waits (not synced): nothing to commit, nothing committed.
    assert repo.step("--commit").code == StepExit.WAITING and repo.git("rev-parse", "HEAD~1").strip() == head
    repo.sync()
    repo.simulator.sync(repo.namespace)
    assert repo.step("--commit").code == StepExit.OK and repo.clean()
    assert repo.git("log", "-1", "--format=%s").strip() == f"llm: rollout to {revision}, step 2"


def test_an_abort_names_the_next_action_at_every_point_and_reads_suspended_until_rolled_back(repo):
    deploy(repo, {"prefill": 2, "decode": 2})
    old_revision = model(repo.set_file).revision
    repo.change_set("image 2", {"prefill": 2, "decode": 2}, image="img:2")
    for round_ in range(3):
        repo.sync()
        repo.check_state_health()
        repo.simulator.sync(repo.namespace)
        assert repo.step().code == StepExit.OK
        repo.commit(f"step {round_}")
    repo.sync()
    repo.simulator.sync(repo.namespace)
    assert repo.state_health()["status"] == "Suspended"
    repo.change_set("revert to image 1", {"prefill": 2, "decode": 2})  # the abort: the template reverted
    assert model(repo.set_file).revision == old_revision
    assert repo.next_action() == ("wait for the sync", StepExit.WAITING)  # the revert is not synced yet
    actions = []
    for _ in range(20):
        repo.sync()
        repo.check_state_health()
        live = repo.live_state()
        assert live["rollout"]["revision"] == old_revision  # the target is the old revision again
        action, code = repo.next_action()
        actions.append(action)
        if action == "complete":
            break
        assert (action, code) in {("wait for readiness", StepExit.WAITING), ("run rollout step --gitops", StepExit.OK)}
        repo.simulator.sync(repo.namespace)
        assert repo.next_action() == ("run rollout step --gitops", StepExit.OK)
        assert repo.step().code == StepExit.OK
        repo.commit("roll back")
        assert repo.next_action() == ("wait for the sync", StepExit.WAITING)
    assert actions[-1] == "complete" and len(actions) > 1
    assert_done(repo)
    assert repo.state_health() == {"status": "Healthy", "message": f"llm: at rest at revision {old_revision}"}


def test_a_commit_whose_state_object_is_not_synced_yet_waits_though_the_lws_match(repo):
    deploy(repo, {"prefill": 2, "decode": 2})
    repo.change_set("image 2", {"prefill": 2, "decode": 2}, image="img:2")
    repo.sync()
    repo.simulator.sync(repo.namespace)
    assert repo.step().code == StepExit.OK
    repo.commit("step 1")
    repo.sync(kinds=("LeaderWorkerSet", "Service"))  # the LWS are synced; the state object is not yet
    repo.simulator.sync(repo.namespace)
    assert repo.live_state()["slices"] != yaml.safe_load(repo.state_file.read_text())["slices"]
    run = repo.status("-o", "json")
    document = json.loads(run.out)
    assert (document["sync"]["nextAction"], run.code) == ("wait for the sync", StepExit.WAITING)
    assert document["sync"]["synced"] is False
    run = repo.step()
    assert run.code == StepExit.WAITING and repo.clean()
    # The only reason: every LWS is what the commit renders to (the LWS checks alone would step).
    assert run.out.splitlines()[1:] == [
        "  rolloutstate/llm: live commits, revisions, slices, target differ from the committed state (not synced)"]
    repo.sync()
    repo.check_state_health()
    assert repo.next_action() == ("run rollout step --gitops", StepExit.OK)


def test_where_argo_cd_does_not_emit_the_state_the_lws_alone_tell(repo):
    # KUBE_API_VERSIONS without the kind: cmp generate emits no state object (and says so), and
    # the step decides on the LWS as it always did.
    repo.serves_states = False
    deploy(repo, {"prefill": 1, "decode": 1})
    repo.change_set("image 2", {"prefill": 1, "decode": 1}, image="img:2")
    repo.roll()
    assert_done(repo)
    assert repo.live_state() is None


def test_a_user_who_may_not_read_the_served_state_is_refused(repo):
    deploy(repo, {"prefill": 1, "decode": 1})
    repo.control_plane.kubectl("create", "role", "lws-only", "-n", repo.namespace, "--verb=get,list,watch",
                               "--resource=leaderworkersets.leaderworkerset.x-k8s.io")
    repo.control_plane.kubectl("delete", "rolebinding", "lws-reader", "-n", repo.namespace)
    repo.control_plane.kubectl("create", "rolebinding", "lws-only", "-n", repo.namespace, "--role=lws-only",
                               f"--user={READER}")
    run = repo.step()
    assert run.code == 1 and "rolloutstate/llm: forbidden" in run.err and repo.clean()


@pytest.mark.parametrize("where", ["the repository's top", "the set's directory"])
def test_the_bot_loop_commits_every_step_of_a_set_two_directories_down(where, tmp_path, control_plane, namespace,
                                                                       lws_simulator, api_client, capsys,
                                                                       monkeypatch):
    """docs/gitops.md's bot loop (`--commit --branch` per step, merged, synced) for a set in
    serving/llama, run from the repository's top (`-f serving/llama`) and from the set's own
    directory (`-f .`): git runs at the top with paths relative to it."""
    for variable, value in (("GIT_AUTHOR_NAME", "bot"), ("GIT_COMMITTER_NAME", "bot"),
                            ("GIT_AUTHOR_EMAIL", "bot@example.invalid"), ("GIT_COMMITTER_EMAIL", "bot@example.invalid")):
        monkeypatch.setenv(variable, value)
    control_plane.kubectl("create", "role", "lws-reader", "-n", namespace, "--verb=get,list,watch",
                          "--resource=leaderworkersets.leaderworkerset.x-k8s.io",
                          "--resource=rolloutstates.kubectl-disagg.x-k8s.io")
    control_plane.kubectl("create", "rolebinding", "lws-reader", "-n", namespace, "--role=lws-reader",
                          f"--user={READER}")
    repo = GitopsRepo(tmp_path / "repo", control_plane, namespace, lws_simulator, Live(api_client, namespace), capsys,
                      app_path="serving/llama")
    cwd = repo.root if where == "the repository's top" else repo.set_file.parent
    monkeypatch.chdir(cwd)
    repo.target = os.path.relpath(repo.set_file.parent, cwd)
    deploy(repo, {"prefill": 2, "decode": 1})
    repo.change_set("image 2", {"prefill": 2, "decode": 1}, image="img:2")
    committed = []
    for number in range(1, 20):
        repo.sync()
        repo.simulator.sync(repo.namespace)
        repo.git("switch", "-q", "--detach", "main")
        run = repo.step("--commit", "--branch", f"rollout/llm-{number}")
        if run.code == StepExit.COMPLETE:
            break
        assert run.code == StepExit.OK and repo.clean(), run
        assert repo.git("show", "--name-only", "--format=", "HEAD").split() == ["serving/llama/" + STATE_FILE]
        committed.append(repo.git("log", "-1", "--format=%s").strip())
        repo.git("switch", "-q", "main")
        repo.git("merge", "-q", "--ff-only", f"rollout/llm-{number}")  # the pull request, merged
    else:
        raise AssertionError(f"not complete after {number} steps: {committed}")
    # numbered by the rollout's commits, one PR after the other
    assert len(committed) >= 2 and [t.split(", step ")[1].split(",")[0] for t in committed] == [
        str(n) for n in range(1, len(committed) + 1)]
    assert_done(repo)


def test_a_commit_git_cannot_make_leaves_the_tree_and_branches_as_they_were(repo, monkeypatch):
    """A concurrent git (its index.lock held) or a refusing hook: exit 1 with git's own words,
    the state file as it was, no branch created, HEAD where it was."""
    for variable, value in (("GIT_AUTHOR_NAME", "bot"), ("GIT_COMMITTER_NAME", "bot"),
                            ("GIT_AUTHOR_EMAIL", "bot@example.invalid"), ("GIT_COMMITTER_EMAIL", "bot@example.invalid")):
        monkeypatch.setenv(variable, value)
    deploy(repo, {"prefill": 2, "decode": 1})
    repo.change_set("image 2", {"prefill": 2, "decode": 1}, image="img:2")
    repo.sync()
    repo.simulator.sync(repo.namespace)
    before, head = repo.state_file.read_bytes(), repo.git("rev-parse", "HEAD").strip()
    hook = repo.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'pre-commit: rollout commits are frozen today' >&2\nexit 1\n")
    hook.chmod(0o755)
    run = repo.step("--commit", "--branch", "rollout/llm-1")
    assert run.code == 1 and "pre-commit: rollout commits are frozen today" in run.err, run
    assert "nothing was written" in run.err
    assert repo.state_file.read_bytes() == before and repo.clean()
    assert repo.git("branch", "--list", "rollout/llm-1") == "" and repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    hook.unlink()
    lock = repo.root / ".git" / "index.lock"
    lock.write_text("")  # another git holds the index
    run = repo.step("--commit")
    assert run.code == 1 and "index.lock" in run.err and "File exists" in run.err, run
    lock.unlink()
    assert repo.state_file.read_bytes() == before and repo.clean() and repo.git("rev-parse", "HEAD").strip() == head
    assert repo.step("--commit").code == StepExit.OK and repo.clean()


def test_adopting_a_set_rendered_and_applied_whose_image_changed_before_its_first_git_step(repo):
    """issue 29's fourth layout: v1 deployed with `render | kubectl apply --server-side` (Argo CD's
    tracking label on its objects), the image changed in git, then the first step: it adopts v1
    at its live replicas (it was refused as a hand edit), and the steps after it roll to v2."""
    repo.change_set("add the set", {"prefill": 2, "decode": 3}, slices=2)
    rendered = repo.cli("render", "-f", str(repo.set_file), "-n", repo.namespace)
    assert rendered.code == 0, rendered.err
    objects = [o for o in yaml.safe_load_all(rendered.out) if o]
    for obj in objects:
        obj["metadata"].setdefault("labels", {})["app.kubernetes.io/instance"] = "llm"
    repo.control_plane.kubectl("apply", "--server-side", "-f", "-",
                               input="".join("---\n" + yaml.safe_dump(o) for o in objects))
    repo.simulator.sync(repo.namespace)
    v1 = model(repo.set_file).revision
    repo.change_set("image 2", {"prefill": 2, "decode": 3}, slices=2, image="img:2")
    run = repo.step()
    assert run.code == StepExit.OK and "adopted" in run.out, run
    state = yaml.safe_load(repo.state_file.read_text())
    assert state["target"]["revision"] == v1
    assert [[(r["revision"], r["replicas"]) for r in s["revisions"]] for s in state["slices"]] == [
        [(v1, {"prefill": 2, "decode": 3})]] * 2
    repo.commit("adopt")
    runs = repo.roll()
    assert len(runs) > 2
    assert_done(repo)
