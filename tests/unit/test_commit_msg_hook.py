"""hack/githooks/commit-msg: the commit message rule (a subject of at most 72 characters, a body)."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

HOOK = pathlib.Path(__file__).resolve().parents[2] / "hack" / "githooks" / "commit-msg"


def check(tmp_path, message: str) -> subprocess.CompletedProcess:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message)
    return subprocess.run([str(HOOK), str(path)], capture_output=True, text=True)


@pytest.mark.parametrize("message", [
    "render: quote keys go-yaml reads as numbers\n\nA key 017 was read as 15.\n",
    "x" * 72 + "\n\nwhy\n",
    "Merge branch 'waves'\n",
    "gitops: one replay\n\nbecause\n# Please enter the commit message\n",
])
def test_a_message_by_the_rule_passes(tmp_path, message):
    assert check(tmp_path, message).returncode == 0


@pytest.mark.parametrize("message, problem", [
    ("x" * 73 + "\n\nwhy\n", "73 characters: at most 72"),
    ("subject only\n", "the body is empty"),
    ("subject\nno blank line\n", "the second line must be blank"),
    ("subject\n\n# only a comment\n", "the body is empty"),
])
def test_a_message_against_the_rule_is_refused_naming_why(tmp_path, message, problem):
    result = check(tmp_path, message)
    assert result.returncode == 1
    assert problem in result.stderr
