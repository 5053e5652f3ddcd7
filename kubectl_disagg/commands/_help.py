"""Every command's --help in one layout, and the parts the CLI reference is made of, from one
source: the command's docstring, its options and its exit-code tables (`exits.py`).

- The docstring: its first paragraph is the summary; its first paragraph kept as written
  (click's `\\b`) holds the examples, one command a line; the other paragraphs explain the rest.
  An option's help: its first sentence says what it does, the rest when and how.
- --help (`HelpCommand.format_help`), at most 40 lines: the usage, the summary, the first two
  examples, the options with the first sentence of their help (the flags that only go with a
  mode, `Mode.only`, and kubectl's connection flags named on one line each), each exit code by
  its label (`exits.labels`), and the page of the reference that has the rest.
- The CLI reference (hack/cli_reference.py → docs/reference/cli/, a page per command): all of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import click

from kubectl_disagg.exits import Codes, ExitCode, labels

HELP_EXAMPLES = 2  # the examples --help shows; the reference shows them all
# kubectl's connection flags, and -f's companion: named on one line of --help.
KUBECTL_FLAGS = ("recursive", "kubeconfig", "context", "as_user", "as_groups", "as_uid", "verbosity")
REFERENCE = "docs/reference/cli"
ExitSection = tuple[Codes, str, dict[ExitCode, str] | None]  # words keyed by the table's own codes
Found = tuple[tuple[str, ...], click.Command, click.Context]  # what `commands` yields


def exit_section(codes: Codes, title: str = "Exit codes:", words: dict[ExitCode, str] | None = None) -> ExitSection:
    """A command's exit-code section: (table, title, words that replace the table's, or None)."""
    return (codes, title, words)


class Parts:
    """A docstring cut into what --help and the reference show: `summary`, `examples` (lines),
    `more` (the other paragraphs, as written)."""

    def __init__(self, text: str | None):
        paragraphs = [p for p in (text or "").split("\n\n") if p.strip()]
        self.summary = paragraphs[0] if paragraphs else ""
        self.examples: list[str] = []
        self.more: list[str] = []
        for paragraph in paragraphs[1:]:
            lines = paragraph.strip("\n").splitlines()
            if not self.examples and lines[0].strip() == "\b":
                self.examples = [line.strip() for line in lines[1:]]
            else:
                self.more.append(paragraph)


def commands(root: click.Group, terminal_width: int | None = None) -> Iterator[Found]:
    """(path, command, context) of every command under `root` that is not a group, in the order
    --help lists them (path: `("rollout", "step")`), for the reference and the tests."""
    def walk(group: click.Group, ctx: click.Context, path: tuple[str, ...]) -> Iterator[Found]:
        for name, command in ((n, c) for n in group.list_commands(ctx) if (c := group.get_command(ctx, n))):
            sub = click.Context(command, parent=ctx, info_name=name, terminal_width=terminal_width)
            if isinstance(command, click.Group):
                yield from walk(command, sub, (*path, name))
            else:
                yield (*path, name), command, sub
    settings = {**root.context_settings, "terminal_width": terminal_width}
    yield from walk(root, click.Context(root, info_name="kubectl-disagg", **settings), ())


def first_sentence(text: str) -> str:
    """Up to the first full stop that ends a sentence: followed by a space or the end, outside
    parentheses and not after "e.g" or "i.e" ("(e.g. 90s)" does not end one)."""
    text, depth = " ".join(text.split()), 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "." and depth <= 0 and text[index + 1:index + 2] in (" ", "") and \
                not text[:index].endswith(("e.g", "i.e")):
            return text[:index + 1]
    return text


def reference_page(path: Sequence[str]) -> str:
    """The reference page of the command `kubectl disagg PATH...`."""
    return f"{REFERENCE}/{'-'.join(path)}.md"


class HelpCommand(click.Command):
    """A command whose --help is the short page; `exit_codes`, its exit-code sections
    (`exit_section`), as --help and the reference list them."""

    def __init__(self, *args: Any, exit_codes: Sequence[ExitSection] = (), **kwargs: Any):  # (click.Command's own)
        super().__init__(*args, **kwargs)
        self.exit_codes = tuple(exit_codes)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        parts = Parts(self.help)
        self.format_usage(ctx, formatter)
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(parts.summary)
        if parts.examples:
            with formatter.section("Examples"):
                for line in parts.examples[:HELP_EXAMPLES]:
                    formatter.write(" " * formatter.current_indent + line + "\n")
        self._format_short_options(ctx, formatter)
        formatter.write_paragraph()
        for codes, title, words in self.exit_codes:
            formatter.write_text(f"{title} {labels(codes, words)}.")
        formatter.write_paragraph()
        formatter.write(f"Every flag, example and exit code: {reference_page(ctx.command_path.split()[1:])}\n")

    def _format_short_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        modes = getattr(self, "modes", ())
        with_mode = {name for mode in modes for name in mode.only}
        params = [p for p in self.get_params(ctx) if isinstance(p, click.Option)]
        rows = [(_spelled(p, ctx), _short_help(p, ctx)) for p in params
                if p.name not in with_mode and p.name not in KUBECTL_FLAGS]
        lines, listed = [], set()
        for mode in modes:
            names = [p for p in params if p.name in mode.only and p.name not in listed]
            listed |= {p.name for p in names}
            if names:
                flag = _long(next(p for p in params if p.name == mode.flag))
                lines.append(f"With {flag}: " + ", ".join(_spelled(p, ctx, long_only=True) for p in names) + ".")
        kubectl = [p for p in params if p.name in KUBECTL_FLAGS]
        if kubectl:
            lines.append("As kubectl's: " + ", ".join(_spelled(p, ctx, long_only=True) for p in kubectl) + ".")
        with formatter.section("Options"):
            formatter.write_dl(rows)
            for line in lines:
                formatter.write_text(line)


def _long(param: click.Option) -> str:
    return next((opt for opt in param.opts if opt.startswith("--")), param.opts[0])


def _spelled(param: click.Option, ctx: click.Context, long_only: bool = False) -> str:
    """The flag as --help's first column writes it (`-o, --output [text|yaml|json]`); with
    `long_only`, one spelling: kubectl's own flags by their first alone (`-v`), the others long
    with their metavar (the reference gives each flag's value)."""
    names = (param.get_help_record(ctx) or ("", ""))[0]  # (None for a hidden flag: none is)
    if not long_only:
        return names
    metavar = names.rpartition(", ")[2].partition(" ")[2]
    return param.opts[0] if param.name in KUBECTL_FLAGS else f"{_long(param)} {metavar}".strip()


def _short_help(param: click.Option, ctx: click.Context) -> str:
    """The first sentence of the option's help, and its default."""
    text, extra = first_sentence(param.help or ""), param.get_help_extra(ctx)
    return f"{text}  [default: {extra['default']}]" if "default" in extra else text
