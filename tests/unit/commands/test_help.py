"""Every command's --help is the short page (`commands/_help.py`): at most 40 lines, a summary,
two examples, every flag named, its exit codes by the labels of exits.py's table, and where the
reference has the rest."""

from __future__ import annotations

import re

import click
import pytest

from kubectl_disagg import exits
from kubectl_disagg.commands._help import Parts, commands, first_sentence, reference_page
from kubectl_disagg.commands.root import cli

WIDTH = 80  # a terminal's usual width: --help is judged where it is longest
MAX_LINES = 40
COMMANDS = list(commands(cli, terminal_width=WIDTH))
IDS = [" ".join(path) for path, _, _ in COMMANDS]


def _groups(group: click.Group, ctx: click.Context):
    yield group, ctx
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from _groups(command, click.Context(command, parent=ctx, info_name=name))


@pytest.mark.parametrize("path, command, ctx", COMMANDS, ids=IDS)
def test_help_fits_in_40_lines_with_examples_and_exit_codes(path, command, ctx):
    text = command.get_help(ctx)
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES, f"kubectl disagg {' '.join(path)} --help is {len(lines)} lines"
    assert [line for line in lines if len(line) > WIDTH] == []
    examples = text.split("Examples:\n")[1].split("\n\n")[0].splitlines()
    assert len(examples) == 2 and all(line.startswith("  ") and line.strip() for line in examples)
    assert "\nExit codes" in text or "\nWith --gitops" in text
    assert text.rstrip().endswith(reference_page(path))


@pytest.mark.parametrize("path, command, ctx", COMMANDS, ids=IDS)
def test_help_names_every_flag(path, command, ctx):
    """Nothing is hidden: a flag --help does not explain is named on a "With --gitops" or
    "As kubectl's" line, and explained in the reference."""
    text = command.get_help(ctx)
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            assert any(re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text) for opt in param.opts), \
                f"{' '.join(path)} --help does not name {param.opts}"


@pytest.mark.parametrize("path, command, ctx", COMMANDS, ids=IDS)
def test_help_lists_each_exit_code_by_its_label_from_the_table(path, command, ctx):
    text = " ".join(command.get_help(ctx).split())
    assert command.exit_codes, f"{' '.join(path)} declares no exit codes"
    for codes, title, words in command.exit_codes:
        assert f"{title} {exits.labels(codes, words)}." in text


def test_groups_help_fits_too():
    for group, ctx in _groups(cli, click.Context(cli, info_name="kubectl-disagg", terminal_width=WIDTH,
                                                  **cli.context_settings)):
        assert len(group.get_help(ctx).splitlines()) <= MAX_LINES


def test_rollout_step_help_is_the_short_page():
    (step,) = [(command, ctx) for path, command, ctx in COMMANDS if path == ("rollout", "step")]
    text = step[0].get_help(step[1])
    assert "Exit codes: 0 done, 1 error, 2 usage, 3 refused, 4 timeout, 7 held." in text
    assert "With --gitops: --wait, --pr-description FILE, --commit, --branch NAME," in text
    assert "As kubectl's: -R, --kubeconfig, --context, --as, --as-group, --as-uid, -v." in text
    assert "SelfSubjectAccessReview" not in text  # the long explanation is the reference's


def test_a_label_is_a_codes_words_up_to_its_first_colon_bracket_or_semicolon():
    assert exits.label(exits.StepExit.REFUSED.help) == "refused"
    assert exits.label(exits.HandoverExit.OK.help) == "handed over"
    assert exits.label("complete") == "complete"
    every = [(table, words) for table in exits.ExitCode.__subclasses__() for words in (None,)] + [
        (exits.StepExit, exits.GITOPS_STEP), (exits.StatusExit, exits.GITOPS_NEXT_ACTION),
        (exits.CmpExit, exits.CMP_DISCOVER)]
    for table, words in every:
        for code in table:
            if code is not exits.Exit.INTERRUPTED:
                assert len(exits.label((words or {}).get(code, code.help))) <= 24, code


def test_first_sentence_stops_at_a_full_stop_outside_brackets():
    assert first_sentence("Give up after this long (e.g. 90s; 0. no limit). More.") == \
        "Give up after this long (e.g. 90s; 0. no limit)."
    assert first_sentence("Old replicas, e.g. 5,2. When it starts.") == "Old replicas, e.g. 5,2."
    assert first_sentence("No stop") == "No stop"


def test_a_docstring_is_cut_into_summary_examples_and_the_rest():
    parts = Parts("Do it.\n\nWhy.\n\n\b\nkubectl disagg a\nkubectl disagg b\n\nMore.")
    assert (parts.summary, parts.examples, parts.more) == ("Do it.", ["kubectl disagg a", "kubectl disagg b"],
                                                           ["Why.", "More."])
