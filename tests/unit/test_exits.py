"""The one exit table: its numbers are a contract, every --help lists its codes from it, and
`cli.py` is the one place the process exits."""

from __future__ import annotations

import ast
import re

import click
import pytest

from kubectl_disagg import exits
from tests.support.cli import COMMANDS
from tests.support.paths import PACKAGE


def test_the_numbers_stay_what_scripts_and_docs_rely_on():
    assert {code.name: int(code) for code in exits.StepExit} == {
        "OK": 0, "ERROR": 1, "USAGE": 2, "REFUSED": 3, "TIMEOUT": 4, "HELD": 7}
    assert {code.name: int(code) for code in exits.GitopsExit} == {
        "ADVANCED": 0, "ERROR": 1, "USAGE": 2, "REFUSED": 3, "TIMEOUT": 4, "WAITING": 5, "COMPLETE": 6, "HELD": 7}
    assert {code.name: int(code) for code in exits.StatusExit} == {
        "AVAILABLE": 0, "ERROR": 1, "USAGE": 2, "NOT_AVAILABLE": 3, "TIMEOUT": 4}
    assert [int(code) for code in exits.VerbExit] == [int(code) for code in exits.HandoverExit] == [0, 1, 2, 3]
    assert [int(code) for code in exits.CmpExit] == [0, 1]
    assert (exits.Exit.INTERRUPTED, exits.terminated(15)) == (130, 143)


def test_most_pressing_asks_most_of_the_operator():
    G = exits.GitopsExit
    assert exits.most_pressing([G.COMPLETE, G.ADVANCED]) == G.ADVANCED
    assert exits.most_pressing([G.ADVANCED, G.HELD, G.WAITING]) == G.WAITING
    assert exits.most_pressing([6, 4, 3]) == G.REFUSED


def test_help_text_wraps_each_code_under_its_number():
    text = exits.help_text(exits.StatusExit, "Exit codes:")
    assert text.splitlines()[:3] == ["\b", "Exit codes:",
                                    "  0  Available: every role has all replicas ready at the current revision"]
    assert all(len(line) <= exits.HELP_WIDTH for line in text.splitlines())


DOCUMENTED = {(int(code), code.help) for table in exits.ExitCode.__subclasses__() for code in table} | {
    (int(code), words) for table in (exits.GITOPS_NEXT_ACTION, exits.CMP_DISCOVER) for code, words in table.items()}


def _documented_codes(help_text: str) -> list[tuple[int, str]]:
    """(number, words) of every code listed under an "Exit codes" heading, wrapped lines joined."""
    found: list[list] = []
    for section in re.split(r"\n\s*\n", help_text):
        lines = section.splitlines()
        if not lines or "xit codes" not in lines[0]:
            continue
        for line in lines[1:]:
            if match := re.match(r"^\s+(\d+)  (\S.*)$", line):
                found.append([int(match.group(1)), match.group(2)])
            else:
                found[-1][1] += " " + line.strip()
    return [(number, words) for number, words in found]


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(path) for path, _ in COMMANDS])
def test_every_help_lists_its_exit_codes_from_the_table(path, command):
    with click.Context(command, info_name=path[-1]) as ctx:
        text = command.get_help(ctx)
    codes = _documented_codes(text)
    assert codes, f"{' '.join(path)} --help lists no exit codes"
    assert set(codes) <= DOCUMENTED, "an exit code in --help is not the table's"


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
