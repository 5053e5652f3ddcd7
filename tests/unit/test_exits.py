"""The one exit table: its numbers are a contract, every --help lists its codes from it, and
`cli.py` is the one place the process exits."""

from __future__ import annotations

import ast

import pytest

from kubectl_disagg import exits
from kubectl_disagg.commands._help import commands
from kubectl_disagg.commands.root import cli
from tests.support.paths import PACKAGE


def test_the_numbers_stay_what_scripts_and_docs_rely_on():
    """One table per command for both stores (issue 48): each number keeps its meaning in each
    mode; 5 and 6 only --gitops yields, the cluster's codes are the ones it always had."""
    assert {code.name: int(code) for code in exits.StepExit} == {
        "OK": 0, "ERROR": 1, "USAGE": 2, "REFUSED": 3, "TIMEOUT": 4, "WAITING": 5, "COMPLETE": 6, "HELD": 7}
    assert [int(code) for code in exits.STEP_CLUSTER] == [0, 1, 2, 3, 4, 7]
    assert {code.name: int(code) for code in exits.StatusExit} == {
        "AVAILABLE": 0, "ERROR": 1, "USAGE": 2, "NOT_AVAILABLE": 3, "TIMEOUT": 4, "WAITING": 5, "COMPLETE": 6,
        "HELD": 7}
    assert [int(code) for code in exits.STATUS_CLUSTER] == [0, 1, 2, 3, 4, 7]
    assert set(exits.GITOPS_STEP) == set(exits.StepExit) and set(exits.GITOPS_NEXT_ACTION) == set(exits.StatusExit)
    assert exits.StatusExit.HELD == exits.StepExit.HELD  # a hold reads the same everywhere
    assert [int(code) for code in exits.VerbExit] == [int(code) for code in exits.HandoverExit] == [0, 1, 2, 3]
    assert [int(code) for code in exits.CmpExit] == [0, 1]
    assert (exits.Exit.INTERRUPTED, exits.terminated(15)) == (130, 143)


COMMANDS = list(commands(cli))


@pytest.mark.parametrize("path, command, ctx", COMMANDS, ids=[" ".join(path) for path, _, _ in COMMANDS])
def test_every_help_lists_its_exit_codes_from_the_table(path, command, ctx):
    """Each command's exit-code sections are tables of this module (and their words), which its
    --help lists by label and the CLI reference and troubleshooting page in full."""
    assert command.exit_codes, f"{' '.join(path)} --help lists no exit codes"
    text = " ".join(command.get_help(ctx).split())
    for codes, title, words in command.exit_codes:
        assert codes in (*exits.ExitCode.__subclasses__(), exits.STEP_CLUSTER, exits.STATUS_CLUSTER)
        assert words in (None, exits.GITOPS_STEP, exits.GITOPS_NEXT_ACTION, exits.CMP_DISCOVER)
        assert f"{title} {exits.labels(codes, words)}." in text


def _exits_the_process(node: ast.AST) -> bool:
    if isinstance(node, ast.Raise) and node.exc is not None:
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(raised, ast.Name) and raised.id == "SystemExit"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        return node.func.attr == "exit" and isinstance(owner, ast.Name) and owner.id in {"sys", "ctx", "os"} or \
            node.func.attr == "_exit" and isinstance(owner, ast.Name) and owner.id == "os"
    return False


def test_cli_is_the_one_place_that_exits():
    """Commands return their code; a `sys.exit`, `ctx.exit` or `raise SystemExit` anywhere else
    would be a second way to end a run (and skip the errors' printing in cli.py)."""
    exiting = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                     if any(_exits_the_process(node) for node in ast.walk(ast.parse(path.read_text()))))
    assert exiting == ["cli.py"]


def test_the_check_sees_each_way_out():
    for source in ("raise SystemExit(3)", "raise SystemExit", "sys.exit(1)", "ctx.exit(2)", "os._exit(1)"):
        assert any(_exits_the_process(node) for node in ast.walk(ast.parse(source))), source
    assert not any(_exits_the_process(node) for node in ast.walk(ast.parse("stack.exit()")))
