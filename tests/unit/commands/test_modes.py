"""Mode flags declared once (`_modes.Mode`) and checked by one function: kubectl's usage errors,
the same words for every command that declares them."""

from __future__ import annotations

import inspect

import click
import click.testing
import pytest

from kubectl_disagg.commands import _options
from kubectl_disagg.commands._modes import GITOPS_INPUT, Command, Mode
from tests.support.cli import run
from tests.support.paths import EXAMPLES

SET = str(EXAMPLES / "prefill-decode.yaml")


@click.command(cls=Command, modes=[Mode("gitops", needs=GITOPS_INPUT, refuses=("name", "dry_run")),
                                   Mode("commit", only=("branch",))])
@click.argument("name", required=False)
@_options.filenames(required=False)
@click.option("--gitops", is_flag=True)
@click.option("--dry-run", default="none")
@click.option("--commit", is_flag=True)
@click.option("--branch")
def toy(**_) -> None:
    """A command with modes."""


@pytest.mark.parametrize(("args", "message"), [
    (["--gitops", "-f", "x"], None),
    (["--gitops", "-f", "x", "--dry-run", "none"], None),  # its default is not a flag given
    (["--gitops"], "--gitops takes -f (the set's file or directory, where its state is kept) and neither NAME "
                   "nor --dry-run"),
    (["--gitops", "-f", "x", "llm"], "neither NAME nor --dry-run"),
    (["--branch", "b"], "--branch goes with --commit"),
    (["--branch", "b", "--commit"], None),
])
def test_one_check_for_every_declared_combination(args, message):
    result = click.testing.CliRunner().invoke(toy, args)
    if message is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2 and message in result.output


@pytest.mark.parametrize(("argv", "message"), [
    (["rollout", "step", "--gitops", "llm"], "--gitops takes -f (the set's file or directory, where its state is "
                                             "kept) and neither NAME, --dry-run nor --wait-for-lease"),
    (["rollout", "step", "--gitops", "-f", SET, "--wait-for-lease"], "neither NAME, --dry-run"),
    (["rollout", "step", "--gitops", "-f", SET, "--branch", "b"], "Error: --branch goes with --commit"),
    (["rollout", "step", "-f", SET, "--branch", "b"],
     "--wait, --pr-description, --commit, --branch, --state and --push go with --gitops"),
    (["rollout", "step", "-f", SET, "--wait"], "--wait, --pr-description, --commit, --branch, --state and --push go with"),
    (["rollout", "step", "--gitops", "-f", SET, "--until-complete"], "--gitops --until-complete takes --push REMOTE"),
    (["rollout", "step", "--gitops", "-f", SET, "--review", "none"],
     "--review, --decisions-to and --on-decision go with --push"),
    (["rollout", "step", "--gitops", "-f", SET, "--push", "origin", "--commit"], "neither --commit, --branch"),
    (["rollout", "status", "--gitops", "llm"],
     "--gitops takes -f (the set's file or directory, where its state is kept), not NAME"),
    (["rollout", "resume", "-f", SET, "--state", "s.yaml"], "--pr-description, --commit and --state go with --gitops"),
])
def test_the_commands_declare_their_gitops_flags(argv, message, capsys):
    code, out, err = run([*argv, "--kubeconfig", "/nonexistent"], capsys)
    assert (code, out) == (2, "") and message in err


def test_commands_take_one_options_object():
    """The flags every command shares reach it as `Options`, never as parameters of its own."""
    from kubectl_disagg.commands._help import commands
    from kubectl_disagg.commands.root import cli

    shared = {"filenames", "recursive", "namespace", "output", "kubeconfig", "context"}
    for path, command, _ in commands(cli):
        flags = {param.name for param in command.params} & shared
        exposed = {param.name for param in command.params if param.expose_value} & shared
        assert exposed == set(), path
        if flags:
            assert next(iter(inspect.signature(command.callback).parameters)) == "options", path
