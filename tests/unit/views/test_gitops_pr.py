"""The pull request of every git-driven step, in golden files: a whole rollout (initial state,
every step, the removal), an abort rolled back, two slices moving together.

`pytest --update-golden` rewrites tests/data/golden/gitops_pr/ from the current output; review the
diff like any other change of what reviewers read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubectl_disagg.core.controller import planner
from kubectl_disagg.rollout.git_step import Outcome, gitops_step
from kubectl_disagg.gitops.history import WrittenBack
from kubectl_disagg.views.gitops_pr import pr_context
from kubectl_disagg.views.gitops_report import format_pr_description
from tests.fakes.argo import MemoryArgo, round_trip
from tests.fakes.cluster import MemoryCluster
from tests.support.gitops_pr import (
    GOLDEN,
    REPLICAS,
    SCENARIOS,
    STATE_FILE,
    abort_steps,
    llama,
    rollout_steps,
    steps_until_complete,
    upgraded,
)
from tests.support.sets import NS


def rollout_descriptions() -> list[tuple[str, str]]:
    return [(name, format_pr_description(ds, NS, step, STATE_FILE)) for name, ds, step in rollout_steps()]


def abort_descriptions() -> list[tuple[str, str]]:
    return [(name, format_pr_description(ds, NS, step, STATE_FILE)) for name, ds, step in abort_steps()]


def golden_files() -> list[Path]:
    return sorted(GOLDEN.glob("*.md"))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_pr_descriptions_match_their_golden_files(scenario, request):
    produced = {f"{scenario}-{name}.md": format_pr_description(ds, NS, step, STATE_FILE)
                for name, ds, step in SCENARIOS[scenario]()}
    if request.config.getoption("--update-golden"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for path in GOLDEN.glob(f"{scenario}-*.md"):
            path.unlink()
        for name, text in produced.items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in GOLDEN.glob(f"{scenario}-*.md")}
    assert sorted(on_disk) == sorted(produced), "run pytest --update-golden"
    for name, text in produced.items():
        assert text == on_disk[name], f"{name} differs: run pytest --update-golden and review the diff"


# --- what the texts say (independent of the golden files) ---------------------------------------


def test_the_rollout_reads_step_by_step_with_a_title_per_commit():
    texts = dict(rollout_descriptions())
    titles = [text.split("\n", 1)[0] for text in texts.values()]
    new = upgraded()
    old = llama()
    inputs = planner.inputs_for_set(new, [REPLICAS[r] for r in new.role_names])
    total = len(planner.plan(inputs.initial_old, inputs.target, inputs.configs)) - 1
    assert titles[0] == f"llama: initial state at {old.revision}"
    # numbered by the commits of the whole rollout (the state counts them), never backwards
    assert titles[1:-1] == [f"llama: rollout to {new.revision}, step {i}" for i in range(1, total + 1)]
    assert titles[-1] == f"llama: rollout to {new.revision}, step {total + 1}, remove {old.revision}"
    assert all(len(title) <= 72 for title in titles)
    for text in titles and list(texts.values())[1:]:
        assert "image vllm/vllm-openai `v0.11.0 → v0.11.1`" in text
        assert "prefill: args 1 item added (`--enable-prefix-caching`)" in text
    # the diff itself where a reviewer decides: the first step and the removal, not every step
    diffs = ["+  - --enable-prefix-caching" in text and "-  vllm/vllm-openai:v0.11.0" in text
             for text in list(texts.values())[1:]]
    assert diffs == [True] + [False] * (total - 1) + [True]
    last = texts["step-%02d" % (total + 1)]
    assert f"**This step removes revision `{old.revision}`.**" in last
    assert "prune deletes its 2 LeaderWorkerSets and 2 Services" in last
    assert f"leaderworkerset/`llama-0-{old.revision}-prefill`" in last


def test_each_step_marks_its_place_in_the_chart_and_the_table():
    texts = dict(rollout_descriptions())
    for index in (1, 2):
        text = texts[f"step-{index:02d}"]
        marked = re.findall(r'x-axis "step" \[([^\]]*)\]', text)
        # the charts in the first step's description (later steps: the table alone, to stay short)
        assert all(f'"{index} ◀"' in labels for labels in marked) and bool(marked) == (index == 1)
        assert re.search(rf"^\| \*\*{index} ◀ this step\*\* \|", text, re.M)


def test_why_this_is_safe_is_written_from_the_steps_numbers():
    new = upgraded()
    texts = dict(rollout_descriptions())
    text = texts["step-01"]
    # Step 1 scales prefill up by its surge of 1 while the old revision keeps all 3.
    assert "prefill 3 + 1 = 4 of at most 4 (target 3 + surge 1)" in text
    assert "prefill keeps at least 3 (target 3 − max unavailable 0): 3 old + 1 new after this step" in text
    assert "the new revision's were live at 0 replicas" in text
    assert f"`llama-0-{new.revision}-prefill` 1/1" in texts["step-02"]
    safety = [t.split("Why this step is safe:")[1].split("###")[0] for t in texts.values() if "Why this" in t]
    assert len(set(safety)) == len(safety), "every step says why in its own numbers"


def test_a_rollback_is_labelled_as_one():
    old = llama()
    texts = dict(abort_descriptions())
    titles = [text.split("\n", 1)[0] for text in texts.values()]
    # an abort reads as one: the slices it takes back, the step, why (views/fleet.py abort_sentence)
    assert titles == [f"llama: rollback of slice 0 to {old.revision}, step {i}{removal} — aborted: the template "
                      f"was set back to {old.revision}" for i, removal in ((1, ""), (2, ""),
                                                                           (3, f", remove {upgraded().revision}"))]
    assert not any("To abort" in text for text in texts.values())
    first = next(iter(texts.values()))
    assert "**Rollback.**" in first and "### What this rollback is for" in first
    assert "image vllm/vllm-openai `v0.11.1 → v0.11.0`" in first


def test_a_rollout_back_says_who_wrote_the_revision_back():
    """The set's revision written back by `rollout undo` or by a git revert: every step's title
    is a rollback's, and the body names who wrote it back."""
    name, ds, step = next(s for s in rollout_steps() if s[0] == "step-01")
    for who, said in ((WrittenBack(), "**Rollback.** `kubectl disagg rollout undo` wrote the "),
                      (WrittenBack("0123456789abcdef0123"), "**Rollback.** The revert of commit `0123456789ab` "
                                                            "wrote the templates of revision")):
        text = format_pr_description(ds, NS, step, STATE_FILE, who)
        assert text.split("\n", 1)[0].startswith(f"{ds.name}: rollback to {ds.revision}") and said in text
    assert "**Rollback.**" not in format_pr_description(ds, NS, step, STATE_FILE)


def test_the_context_of_a_step_that_does_not_advance():
    new = upgraded()
    argo = MemoryArgo()
    old = llama()
    state = round_trip(gitops_step(old, None, MemoryCluster(NS).snapshot(old.name)).state, old)
    _, state = steps_until_complete(argo, old, state)
    # The template change is committed, Argo CD has not synced it yet: the new LWS are missing.
    step = gitops_step(new, state, argo.snapshot(new))
    context = pr_context(new, NS, step, STATE_FILE)
    assert context["kind"] == "not advanced" and context["title"] == f"llama: {step.outcome}, nothing to commit"


# --- every kind of rollout reads: titles fit a subject line, the numbers are the state's -----------


def _all_steps(argo, ds, state):
    steps, state = steps_until_complete(argo, ds, state)
    return steps, state


def _check(ds, steps):
    from kubectl_disagg.views.gitops_pr import role_counts

    for step in steps:
        text = format_pr_description(ds, NS, step, STATE_FILE)
        title, blank, _ = text.split("\n", 2)
        assert blank == "" and len(title) <= 72 and title.startswith(f"{ds.name}: "), title
        context = pr_context(ds, NS, step, STATE_FILE)
        for group in context["groups"]:
            first = int(group["label"].split()[1].split("-")[0])
            after = role_counts(ds, step.state, first)
            assert {r["name"]: (r["old_after"], r["new_after"]) for r in group["roles"]} == {
                name: after.get(name, (0, 0)) for name in ds.role_names}


def test_a_second_template_change_mid_rollout_names_both_old_revisions():
    from tests.fakes.argo import deploy

    argo, state = deploy(llama())
    second = upgraded()
    for _ in range(2):
        argo.sync(second, state)
        argo.cluster.settle()
        state = round_trip(gitops_step(second, state, argo.snapshot(second)).state, second)
    third = llama("vllm/vllm-openai:v0.12.0")
    steps, _ = _all_steps(argo, third, round_trip(state, third))
    _check(third, steps)
    first = format_pr_description(third, NS, steps[0], STATE_FILE)
    assert f"From `{llama().revision}`, `{second.revision}` to `{third.revision}`" in first
    assert f" from revision {second.revision}" in first and "image vllm/vllm-openai `v0.11.1 → v0.12.0`" in first


def test_a_rollout_that_also_scales_and_one_with_an_external_role():
    from tests.fakes.argo import deploy
    from tests.support.gitops import external_set

    argo, state = deploy(llama())
    bigger = upgraded(replicas={"prefill": 4, "decode": 1})
    steps, _ = _all_steps(argo, bigger, state)
    _check(bigger, steps)
    text = format_pr_description(bigger, NS, steps[0], STATE_FILE)
    assert "decode keeps at least 1 (target 1 − max unavailable 0)" in text
    # the slice at rest takes the new replicas at once, and the rollout starts from them (design §10.1)
    assert "prefill keeps at least 4 (target 4 − max unavailable 0): 4 old + 1 new after this step" in text
    external = external_set("img:1")
    argo = MemoryArgo()
    _, state = steps_until_complete(argo, external, round_trip(
        gitops_step(external, None, MemoryCluster(NS).snapshot(external.name)).state, external))
    moved = external_set("img:2")
    steps, _ = _all_steps(argo, moved, state)
    _check(moved, steps)
    assert "autoscaled" in format_pr_description(moved, NS, steps[0], STATE_FILE)


def test_a_rollback_is_numbered_from_where_the_rollout_stood():
    """Reverted after three steps (the old revision still mostly up): the rollback's plan starts
    where the rollout stood, so its first commit is step 1, not a step of a start that never ran."""
    from tests.fakes.argo import deploy, round_trip
    from tests.support.sets import NS, make_set

    v1, v2 = make_set({"prefill": 4, "decode": 4}), make_set({"prefill": 4, "decode": 4}, image="img:2")
    argo, state = deploy(v1)
    for _ in range(3):
        argo.sync(v2, state)
        argo.cluster.settle()
        state = round_trip(gitops_step(v2, state, argo.snapshot(v2), argo.served).state, v2)
    from kubectl_disagg.rollout.served import served_object
    from kubectl_disagg.views.gitops_report import slice_views

    titles, tables, positions, messages = [], [], [], []
    for _ in range(3):
        argo.sync(v1, state)
        argo.cluster.settle()
        step = gitops_step(v1, state, argo.snapshot(v1), argo.served)
        assert step.outcome == Outcome.ADVANCED
        text = format_pr_description(v1, NS, step, "disagg-rollout-state.yaml")
        titles.append(text.splitlines()[0])
        tables.append(text)
        positions.extend(view for view in slice_views(v1, step) if view["position"])
        messages.append(served_object(v1, step.state)["rollout"]["message"])
        state = round_trip(step.state, v1)
    assert [t.split(f"to {v1.revision}, ", 1)[1].split(" — ")[0] for t in titles] == [
        "step 1", "step 2", f"step 3, remove {v2.revision}"]
    assert "### Slice 0: step 1 of 2" in tables[0]
    assert [view["position"] for view in positions] == ["1/2", "2/2"]  # rollout step --gitops says the same
    assert "slice 0 step 1 of 2 (old/new: prefill 1/4, decode 1/4)" in messages[0]  # and the RolloutState
