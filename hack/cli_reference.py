"""docs/reference/cli/, made from the click commands: one page per command (its summary, usage,
every example, the text --help leaves out, every option with its whole help, every exit code in
full) and an index. --help shows the short page (kubectl_disagg/commands/_help.py).

    python3 hack/cli_reference.py           # print every page, each after a "==> NAME <==" line
    python3 hack/cli_reference.py --write   # rewrite docs/reference/cli/ (`make docs`)

`tests/unit/test_cli_reference.py` fails when a committed page is stale or missing.
"""

from __future__ import annotations

import pathlib
import sys

import click

ROOT = pathlib.Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "reference" / "cli"
sys.path[:0] = [str(ROOT), str(ROOT / "hack")]
from kubectl_disagg.commands._help import Parts, commands, reference_page  # noqa: E402
from kubectl_disagg.commands.root import cli  # noqa: E402

MADE = "<!-- made by hack/cli_reference.py from the click commands (make docs); do not edit -->"
WIDTH = 100  # the usage line as --help prints it at kubectl-disagg's widest


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _prose(paragraph: str) -> list[str]:
    """A docstring paragraph as markdown: one kept as written (`\\b`) in a code block, else its
    lines joined."""
    lines = paragraph.strip("\n").splitlines()
    if lines[0].strip() == "\b":
        return ["```sh", *(line.strip() for line in lines[1:]), "```", ""]
    return [" ".join(" ".join(lines).split()), ""]


def exit_table(codes, title: str, words: dict | None = None) -> list[str]:
    """An exit-code section (`_help.exit_section`) as markdown: its title, then a row per code
    with its whole words. The one table of codes of the docs (this reference, the troubleshooting
    page: hack/docs.py)."""
    rows = [f"| {int(code)} | {_cell((words or {}).get(code, code.help))} |" for code in codes]
    return [title, "", "| code | meaning |", "| --- | --- |", *rows]


def _usage(command: click.Command, ctx: click.Context) -> str:
    pieces = " ".join(command.collect_usage_pieces(ctx))
    return f"kubectl disagg {' '.join(_path(ctx))} {pieces}".rstrip()


def _path(ctx: click.Context) -> list[str]:
    names = []
    while ctx.parent is not None:
        names.append(ctx.info_name)
        ctx = ctx.parent
    return names[::-1]


def _file(path: tuple[str, ...]) -> str:
    return pathlib.PurePosixPath(reference_page(path)).name


def page(path: tuple[str, ...], command: click.Command, ctx: click.Context) -> str:
    """The reference page of one command."""
    parts = Parts(command.help)
    out = [f"# kubectl disagg {' '.join(path)}", "", MADE, "", _cell(parts.summary), "",
           "```", _usage(command, ctx), "```", ""]
    if parts.examples:
        out += ["## Examples", "", "```sh", *parts.examples, "```", ""]
    for paragraph in parts.more:
        out += _prose(paragraph)
    options = [param for param in command.get_params(ctx) if isinstance(param, click.Option)]
    out += ["## Options", "", "| flag | what it does |", "| --- | --- |"]
    for param in options:
        names, help_ = param.get_help_record(ctx)
        out.append(f"| `{_cell(names)}` | {_cell(help_)} |")
    out.append("")
    modes = [mode for mode in getattr(command, "modes", ()) if mode.only]
    for mode in modes:
        spelled = [next(o for o in p.opts if o.startswith("--")) for p in options if p.name in mode.only]
        flag = next(p for p in options if p.name == mode.flag)
        verb = "goes" if len(spelled) == 1 else "go"
        out += [f"{', '.join(f'`{s}`' for s in spelled)} {verb} only with `{flag.opts[-1]}`.", ""]
    out += ["## Exit codes", ""]
    for codes, title, words in command.exit_codes:
        out += exit_table(codes, title, words) + [""]
    out += ["Every command also ends with 130 on Ctrl-C, 128 + the signal's number on SIGTERM or SIGHUP.",
            "", "[Every command](index.md)", ""]
    return "\n".join(out)


def index(entries) -> str:
    root = Parts(cli.help)
    out = ["# CLI reference", "", MADE, "",
           f"`kubectl disagg` (the plugin `kubectl-disagg`): {_cell(root.summary)}", "",
           "Each command's `--help` shows its summary, its common flags, two examples and its exit",
           "codes by name; its page here has everything.", "",
           "| command | what it does |", "| --- | --- |"]
    out += [f"| [`kubectl disagg {' '.join(path)}`]({_file(path)}) | {_cell(Parts(command.help).summary)} |"
            for path, command, _ in entries]
    out.append("")
    return "\n".join(out)


def pages() -> dict[str, str]:
    """File name under docs/reference/cli → its text."""
    entries = list(commands(cli, terminal_width=WIDTH))
    made = {_file(path): page(path, command, ctx) for path, command, ctx in entries}
    made["index.md"] = index(entries)
    return made


def main(argv: list[str]) -> int:
    from generated_text import print_or_write

    made = pages()

    def write(_text: str) -> None:
        TARGET.mkdir(parents=True, exist_ok=True)
        for stale in set(p.name for p in TARGET.glob("*.md")) - set(made):
            (TARGET / stale).unlink()
        for name, text in made.items():
            (TARGET / name).write_text(text)

    text = "".join(f"==> {name} <==\n{body}" for name, body in sorted(made.items()))
    return print_or_write(argv, "hack/cli_reference.py", text, write)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
