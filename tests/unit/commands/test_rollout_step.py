"""`rollout step` (both modes): flags, the commit message of --gitops --commit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_disagg.views.gitops_report import commit_message, commit_subject


@pytest.mark.parametrize("argv", [
    ["rollout", "step", "-f", "x.yaml", "--commit"],
    ["rollout", "step", "-f", "x.yaml", "--branch", "b"],
    ["rollout", "step", "--gitops", "-f", "x.yaml", "--branch", "b"],
])
def test_commit_flags_go_with_gitops_and_branch_with_commit(argv, capsys):
    from kubectl_disagg.cli import main

    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and capsys.readouterr().out == ""


def test_the_commit_message_is_the_pull_request_text():
    one = "llama: rollout to 7b04d5c1, step 2 of 4\n\nbody\n"
    assert commit_message([one]) == one
    two = commit_message([one, "qwen: rollout to 1a2b3c4d, step 1 of 3\n\nother\n"])
    subject, blank, rest = two.split("\n", 2)
    assert subject == "rollout steps of 2 sets: llama, qwen" and blank == "" and "body" in rest and "other" in rest
    short = commit_message(["a: x\n\n1\n", "b: y\n\n2\n"])
    assert short.split("\n", 1)[0] == "a: x; b: y"


def test_rollout_step_gitops_loads_its_directory_once(tmp_path, monkeypatch, capsys):
    """Issue 38: `rollout step --gitops` loaded its sets once to check them, then again with the
    context's namespace; the kubeconfig is read first now and the directory loaded once."""
    import shutil

    from kubectl_disagg.inputs import directory
    from tests.fakes.cluster import MemorySession
    from tests.support.cli import on, run
    from tests.support.paths import REPO

    shutil.copy(REPO / "examples" / "prefill-decode.yaml", tmp_path / "ds.yaml")
    kubeconfig = tmp_path.parent / f"{tmp_path.name}-kubeconfig"  # its context's namespace places the set
    kubeconfig.write_text("current-context: c\ncontexts: [{name: c, context: {cluster: c, namespace: serving}}]\n"
                          "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    loads = []
    load = directory.load
    monkeypatch.setattr(directory, "load", lambda *args, **kwargs: loads.append(kwargs) or load(*args, **kwargs))
    code, out, err = run(["rollout", "step", "--gitops", "-f", str(tmp_path)], capsys,
                         options=on(MemorySession(watches=False)))
    assert len(loads) == 1 and loads[0]["fallback"] == "serving", (code, err)
    assert (tmp_path / "ds.yaml").exists() and out


TITLE_PARTS = st.sampled_from(["llama", "llama-70b-instruct-serving-prod-eu-west", ": ", " — ", "; ", " · ", ", ",
                               " ", "rollback to 7b04d5c1", "slices 11-99", "step 12", "wave 2 of 3",
                               "analysis ttft-p99: 0.42 > 0.3 (request latency too slow)", "x" * 90])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(TITLE_PARTS, min_size=1, max_size=12).map("".join).map(str.strip).filter(bool),
                min_size=1, max_size=3))
def test_every_commit_subject_fits_72_characters_and_loses_nothing(titles):
    """Issue 47: subjects up to 174 characters (a rollback's title carried the analysis message).
    The subject is cut to 72 at most; the whole title stays in the message."""
    descriptions = [f"{title}\n\nbody {n}\n" for n, title in enumerate(titles)]
    message = commit_message(descriptions)
    subject, blank, rest = message.split("\n", 2)
    assert 0 < len(subject) <= 72 and blank == ""
    assert all(title in message for title in titles)
    if len(titles) == 1 and len(titles[0]) <= 72:
        assert message == descriptions[0]


def test_a_long_title_is_cut_at_its_strongest_break():
    title = ("llama: rollback of slices 11-99 to 7b04d5c1, step 3 — analysis after wave 2 failed: "
             "ttft-p99 0.42 > 0.3")
    assert commit_subject(title) == ("llama: rollback of slices 11-99 to 7b04d5c1, step 3", title)
    assert commit_subject("a " * 50)[0].endswith("…") and len(commit_subject("a " * 50)[0]) <= 72
