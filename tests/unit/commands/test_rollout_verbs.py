"""The rollout verbs' flags, and `validate` naming the policy it checked (offline)."""

from __future__ import annotations

import pytest

from tests.support.cli import run
from tests.support.policy import POLICY, SET


def test_validate_names_the_policy_beside_the_set(tmp_path, capsys):
    (tmp_path / "ds.yaml").write_text(SET + POLICY)
    code, out, _ = run(["validate", "-f", str(tmp_path)], capsys)
    assert code == 0
    assert out.splitlines()[1] == f"{tmp_path / 'ds.yaml'}: rolloutpolicy/llama: valid (paces disaggregatedset/llama: " \
                                  "3 waves)"


@pytest.mark.parametrize("argv, message", [
    (["rollout", "promote", "--gitops", "llm"], "--gitops takes -f"),
    (["rollout", "pause", "llm", "--commit"], "--pr-description, --commit and --state go with --gitops"),
    (["rollout", "abort"], "give either NAME"),
    (["rollout", "promote", "llm", "--skip-analysis"], "--skip-analysis needs --full"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    code, _, err = run(argv, capsys)
    assert code == 2 and message in err


def test_only_promote_has_full(capsys):
    assert run(["rollout", "resume", "--full", "x"], capsys)[0] == 2
    assert run(["rollout", "resume", "--skip-analysis", "x"], capsys)[0] == 2
    code, out, _ = run(["rollout", "promote", "--help"], capsys)
    assert code == 0 and "--full" in out and "Exit codes:" in out


def test_a_gitops_verb_without_a_state_is_an_error(tmp_path, capsys):
    (tmp_path / "ds.yaml").write_text(SET + POLICY)
    code, _, err = run(["rollout", "promote", "--gitops", "-f", str(tmp_path)], capsys)
    assert code == 1 and "has no rollout state beside it yet" in err


def test_a_gitops_verb_without_a_policy_is_an_error(tmp_path, capsys):
    (tmp_path / "ds.yaml").write_text(SET)
    code, _, err = run(["rollout", "pause", "--gitops", "-f", str(tmp_path)], capsys)
    assert (code, err) == (1, f"{tmp_path / 'ds.yaml'}:3: disaggregatedset/llama in serving has no RolloutPolicy: its "
                              "rollouts are not paced (nothing to promote, pause, resume, abort or retry)\n")
