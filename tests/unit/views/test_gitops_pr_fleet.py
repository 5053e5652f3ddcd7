"""The pull requests of a fleet rollout through git (issue 39): 12 slices in 3 waves (a canary
with an analysis gate, 25 % with a pause, 100 %), at most 3 slices in flight, driven by the pure
`gitops_step` (tests/support/gitops_pr.py `fleet_steps`). A reviewer reads one in a minute: a
mid-rollout description is short, roles are named once, the slices a step leaves alone are
folded away, and the titles count the rollout's commits without going back.

The golden files of each kind of these pull requests (wave start, mid-wave step, analysis
passed, abort, rollback step, last step) are compared in test_gitops_pr.py (scenario `fleet`).
"""

from __future__ import annotations

import re

from kubectl_disagg.gitops.state import state_document
from kubectl_disagg.manifests.writer import to_yaml
from kubectl_disagg.views.gitops_pr import pr_context
from kubectl_disagg.views.gitops_report import format_pr_description
from tests.support.gitops_pr import (GOLDEN, NEW_IMAGE, OLD_IMAGE, STATE_FILE, fleet_pr_kinds, fleet_runs, fleet_steps,
                                     llama)
from tests.support.paths import REPO
from tests.support.sets import NS

STEP = re.compile(r"^llama: (rollout|rollback)\b.*?, step (\d+)\b")


def _described(steps) -> list[tuple[dict, str]]:
    return [(pr_context(ds, NS, step, STATE_FILE), format_pr_description(ds, NS, step, STATE_FILE))
            for ds, step in steps]


def _mid_rollout(described) -> list[str]:
    """The descriptions of the steps that are neither a rollout's first, a wave's start nor a
    removal (those carry the charts and the template diff)."""
    return [text for context, text in described
            if context["kind"] in ("rolling", "record") and context["commits"] > 1 and context["wave"] is None]


def test_issue39_a_mid_rollout_description_fits_60_lines_at_12_slices():
    good, bad = fleet_runs()
    mid = _mid_rollout(_described(good + bad))
    assert len(mid) > 30  # nearly every commit of the rollout is one
    assert max(len(text.splitlines()) for text in mid) <= 60


def test_issue39_a_mid_rollout_description_fits_80_lines_at_100_slices():
    # the canary, the analysis and three batches of wave 2 (75 held slices, 3 in flight)
    mid = _mid_rollout(_described(fleet_steps(100, until=24)))
    assert len(mid) > 15
    assert max(len(text.splitlines()) for text in mid) <= 80


def test_issue39_roles_are_named_once():
    """Leader and worker of one role are one role: no list repeats a role ('prefill, prefill')."""
    good, bad = fleet_runs()
    for _, text in _described(good + bad):
        for listed in re.findall(r"\b(?:prefill|decode)(?:, (?:prefill|decode))+\b", text):
            names = listed.split(", ")
            assert len(names) == len(set(names)), listed
        assert re.search(r"^- prefill, decode: image vllm/vllm-openai `v0\.11\.[01] → v0\.11\.[01]`$", text, re.M)


def test_issue39_steady_and_held_slices_are_folded_into_details():
    """What moves is in the open; the slices a step leaves alone are one folded table, and only
    the slices that move are argued safe."""
    good, bad = fleet_runs()
    for context, text in _described(good + bad):
        outside = re.sub(r"<details>.*?</details>", "", text, flags=re.S)
        assert not re.search(r"\| (steady|held) \|", outside), context["title"]
        assert not re.search(r"^### Slices? [\d, -]+: (steady|held)", outside, re.M)
        still = [f"{g['label']} ({g['phase']})" for g in context["groups"] if not g["moves"]]
        if still:
            summary = re.search(r"<details><summary>Slices this step leaves as they are: (.*)</summary>", text)
            assert summary and summary.group(1) == ", ".join(still)
        assert text.count("Why this step is safe:") == sum(1 for g in context["groups"] if g["moves"])
    mid = next(text for context, text in _described(good) if "step 22 " in context["title"])
    assert "slices 0-2 (steady), slices 6-11 (held)</summary>" in mid


def _numbers(steps) -> list[tuple[str, int, int]]:
    """(rollout|rollback, the title's step number, the state's commits) of each commit."""
    out = []
    for ds, step in steps:
        title = format_pr_description(ds, NS, step, STATE_FILE).split("\n", 1)[0]
        match = STEP.match(title)
        assert match, title
        out.append((match.group(1), int(match.group(2)), step.state.commits))
    return out


def test_issue39_titles_count_every_commit_of_a_whole_rollout_without_going_back():
    """Walk every commit of the 12-slice rollout (a good one to the end; a bad canary and its
    rollback): the title's number is the state's count, it rises by one with every commit and
    never repeats; the rollback is counted afresh (it goes toward another revision)."""
    good, bad = fleet_runs()
    numbers = _numbers(good)
    assert [n for _, n, _ in numbers] == list(range(1, len(good) + 1))
    assert all(kind == "rollout" and n == commits for kind, n, commits in numbers)
    titles = [format_pr_description(ds, NS, step, STATE_FILE).split("\n", 1)[0] for ds, step in good]
    assert len(set(titles)) == len(titles)
    done = [int(m.group(1)) for t in titles if (m := re.search(r"(\d+) of 12 slices done", t))]
    assert done == sorted(done) and done[-1] == 9  # the last commit removes the old revision instead
    waves = [int(m.group(1)) for t in titles if (m := re.search(r"wave (\d) of 3", t))]
    assert waves == sorted(waves) and set(waves) == {1, 2, 3}
    back = _numbers(bad)
    forward = [n for kind, n, _ in back if kind == "rollout"]
    rollback = [n for kind, n, _ in back if kind == "rollback"]
    assert [kind for kind, _, _ in back] == ["rollout"] * len(forward) + ["rollback"] * len(rollback)
    assert forward == list(range(1, len(forward) + 1)) and rollback == list(range(1, len(rollback) + 1))
    assert all(n == commits for _, n, commits in back)


def test_issue39_the_commits_of_the_fleet_rollout():
    """The figures docs/gitops.md gives for 12 slices: 42 step commits to the end (besides the
    template change and the `promote` at the pause); a bad canary 8, and its rollback 7."""
    good, bad = fleet_runs()
    back = _numbers(bad)
    assert len(good) == 42
    assert (sum(kind == "rollout" for kind, _, _ in back), sum(kind == "rollback" for kind, _, _ in back)) == (8, 7)
    doc = (REPO / "docs" / "gitops.md").read_text(encoding="utf-8")
    assert "| 12 | good, to the end | 42 |" in doc and "| 12 | bad canary: aborted after wave 1, rolled back | " \
        "15 (8 forward, 7 back) |" in doc


def test_issue39_the_state_file_holds_each_revisions_template_once():
    """Not once per slice: the 12 slices record replica counts, the templates are one entry per
    revision (each image once per role: prefill and decode)."""
    good, _ = fleet_runs()
    for _, step in good[:-1]:
        text = to_yaml(state_document(step.state))
        assert (text.count(OLD_IMAGE), text.count(NEW_IMAGE)) == (2, 2)
    text = to_yaml(state_document(good[-1][1].state))  # the old revision removed
    assert (text.count(OLD_IMAGE), text.count(NEW_IMAGE)) == (0, 2)


def test_issue39_each_kind_of_pull_request_has_a_golden_file():
    kinds = [kind for kind, _, _ in fleet_pr_kinds()]
    assert kinds == ["wave-start", "mid-wave-step", "analysis-passed", "paused", "abort", "rollback-step",
                     "last-step"]
    assert sorted(p.name for p in GOLDEN.glob("fleet-*.md")) == sorted(f"fleet-{kind}.md" for kind in kinds)
    titles = {kind: format_pr_description(ds, NS, step, STATE_FILE).split("\n", 1)[0]
              for kind, ds, step in fleet_pr_kinds()}
    assert titles["wave-start"].endswith("step 19 · wave 3 of 3 · slices 3-5 · 3 of 12 slices done; wave 3 starts")
    assert titles["analysis-passed"].endswith("; analysis after wave 1 passed; wave 2 starts")
    assert titles["paused"].endswith("step 18 · wave 2 of 3 · 3 of 12 slices done; wave 2 is paused")
    paused = next(format_pr_description(ds, NS, step, STATE_FILE) for kind, ds, step in fleet_pr_kinds()
                  if kind == "paused")
    assert "The rollout stops here until a person decides: wave 2 is paused: `kubectl disagg rollout promote " \
           "--gitops -f .` starts the next wave." in paused
    assert "run `kubectl disagg rollout step --gitops` again" not in paused
    assert " — aborted: analysis failed after wave 1: ttft:" in titles["abort"]
    assert titles["rollback-step"].startswith("llama: rollback of slice 0 to ")
    assert ", step 42, remove " in titles["last-step"]


def test_issue39_a_policy_abort_reads_as_a_rollback_in_the_body():
    """After the canary's analysis failed, the set still names the aborted revision; the pull
    requests of its rollback speak of the way back (from the aborted revision to the stable one,
    'rollback started'), and their per-step table says what their plan table marks."""
    good, bad = fleet_runs()
    stable, aborted = llama().revision, good[0][0].revision
    rollback = [text for context, text in _described(bad) if context["title"].startswith("llama: rollback")]
    assert rollback
    for text in rollback:
        assert "**Rollback.** The rollout to `%s` was aborted" % aborted in text
        assert "### What this rollout is for" not in text and "rollout started" not in text
        assert "To abort, revert" not in text
    first = rollback[0]
    assert "### What this rollback is for\n\nFrom `%s` to `%s`:" % (aborted, stable) in first
    assert "image vllm/vllm-openai `v0.11.1 → v0.11.0`" in first and "### Slice 0: rollback started" in first
    for context, _ in _described(good + bad):
        for group in context["groups"]:
            if group["position"] is None:
                continue
            at = group["chart"]["steps"][group["chart"]["current"]]
            assert [(r["old_after"], r["new_after"]) for r in group["roles"]] == list(zip(at.old, at.new)), \
                context["title"]


def test_issue39_the_titles_mark_the_commits_a_person_decides():
    """A bot merges the mechanical steps; a title says when a commit is a decision: a wave
    starts, the rollout stops at a pause, a rollback after an abort. Every other title is a step."""
    good, bad = fleet_runs()
    titles = [format_pr_description(ds, NS, step, STATE_FILE).split("\n", 1)[0] for ds, step in good + bad]
    decided = {int(STEP.match(t).group(2)): t.rsplit("; ", 1)[1] for t in titles
               if t.startswith("llama: rollout") and ("starts" in t or "paused" in t)}
    assert decided == {9: "wave 2 starts", 18: "wave 2 is paused", 19: "wave 3 starts"}
    assert sum(" — aborted: " in t for t in titles) == 7  # every step of the rollback, its removal of the revision too
