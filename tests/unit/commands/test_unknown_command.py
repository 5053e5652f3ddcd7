"""A mistyped verb gets kubectl's answer: `unknown command`, "Did you mean this?", exit 2 (issue 39)."""

from __future__ import annotations

import pytest

from kubectl_disagg.commands import suggestions_for
from tests.support.cli import run


def test_a_mistyped_subcommand_is_answered_as_kubectl_answers(capsys):
    code, out, err = run(["rollout", "stpe"], capsys)
    assert (code, out) == (2, "")
    assert err == ('error: unknown command "stpe" for "kubectl disagg rollout"\n\n'
                   "Did you mean this?\n\tstate\n\tstep\n")


def test_a_mistyped_verb_at_the_top(capsys):
    code, _, err = run(["rolout", "status"], capsys)
    assert code == 2
    assert err == 'error: unknown command "rolout" for "kubectl disagg"\n\nDid you mean this?\n\trollout\n'


def test_nothing_close_says_where_help_is(capsys):
    code, _, err = run(["rollout", "frobnicate"], capsys)
    assert code == 2
    assert err == ('error: unknown command "frobnicate" for "kubectl disagg rollout"\n'
                   "See 'kubectl disagg rollout -h' for help and examples.\n")


@pytest.mark.parametrize("typed, expected", [
    ("stauts", ["state", "status"]),  # two edits each
    ("STEP", ["step"]),            # case ignored
    ("pro", ["promote"]),          # a prefix
    ("abrot", ["abort"]),
    ("xyzzy", []),
])
def test_suggestions_as_cobra_finds_them(typed, expected):
    names = ["abort", "pause", "plan", "promote", "resume", "state", "status", "step"]
    assert suggestions_for(typed, names) == expected


def test_known_commands_and_help_are_untouched(capsys):
    assert run(["rollout", "-h"], capsys)[0] == 0
    assert run(["rollout", "plan", "--from", "2,1"], capsys)[0] == 0
