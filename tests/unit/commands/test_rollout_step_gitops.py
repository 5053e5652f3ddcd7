"""`rollout step --gitops --commit [--branch NAME]`: flags and the commit message."""

from __future__ import annotations

import pytest

from kubectl_disagg.views.gitops_report import commit_message


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
