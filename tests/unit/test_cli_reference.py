"""docs/reference/cli/ is what hack/cli_reference.py makes from the click commands: a page per
command with all that --help leaves out, and an index linking each."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click

from kubectl_disagg.commands._help import Parts, commands
from kubectl_disagg.commands.root import cli
from tests.support.hack_modules import hack_module

ROOT = Path(__file__).resolve().parents[2]


def _made() -> dict[str, str]:
    """The pages as `hack/cli_reference.py` prints them, from a fresh interpreter: the click
    commands as the command line builds them (a test's own contexts may have cached another
    help option on a command)."""
    printed = subprocess.run([sys.executable, str(ROOT / "hack" / "cli_reference.py")], capture_output=True,
                             text=True, check=True).stdout
    pages = re.split(r"^==> (\S+) <==\n", printed, flags=re.MULTILINE)[1:]
    return dict(zip(pages[::2], pages[1::2]))


def test_the_committed_cli_reference_is_current():
    generator = hack_module("cli_reference.py")
    made = _made()
    committed = {path.name: path.read_text() for path in generator.TARGET.glob("*.md")}
    assert committed.keys() == made.keys(), "docs/reference/cli/ has other pages: run `make docs`"
    stale = sorted(name for name in made if committed[name] != made[name])
    assert not stale, f"docs/reference/cli/ is stale ({', '.join(stale)}): run `make docs`"


def test_each_page_has_what_help_leaves_out():
    made = _made()
    for path, command, ctx in commands(cli):
        page = made[f"{'-'.join(path)}.md"]
        parts = Parts(command.help)
        assert all(example in page for example in parts.examples)
        assert all(" ".join(paragraph.split()) in page for paragraph in parts.more if not paragraph.startswith("\b"))
        for param in command.get_params(ctx):
            if isinstance(param, click.Option) and param.help:
                assert " ".join(param.help.split()).replace("|", "\\|") in page, param.name
        for codes, _, words in command.exit_codes:
            assert all((words or {}).get(code, code.help) in page for code in codes)
        assert f"]({'-'.join(path)}.md)" in made["index.md"]
