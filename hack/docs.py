"""The docs' made parts and their links: design citations, the exit-code tables, anchors.

- Citations: every section reference (the section sign and a number) in the repository is
  written "design §N" and names a section of docs/design.md; in markdown prose it links there
  (`docs/design.md#…`). `rewrite_citations` turns any other spelling ("spec §N", a bare "§N")
  into that one, fixing the links to headings whose anchors it changes.
- Exit codes: docs/howto/troubleshooting.md holds, between two markers, one table per group of
  commands, made from each command's exit-code sections (kubectl_disagg/exits.py's tables).
- Anchors: `anchor` is GitHub's rule for a heading's fragment; `links` lists the relative
  links of a markdown file. tests/unit/test_docs.py checks all three against these functions.
- Shell blocks: `shell_blocks` reads the fenced sh/bash/shell/console blocks of a page; those of
  README.md and docs/tutorials/ run, in order, in a test against a fresh local control plane
  with the LWS simulator (tests/integration/test_docs_shell.py), unless a line
  `<!-- not run: REASON -->` just above a block says why it cannot. Each command must succeed,
  but one whose comment says `# exits N`, which must end with N (`script_of`). A reason that
  begins "run by `make TARGET`" (`ShellBlock.run_by`) names the demo that runs the block: its
  test (tests/integration/test_demo.py) checks that the demo ran the page's commands
  (`commands`), in order, with the codes the page says.

    .venv/bin/python hack/docs.py           # list what --write would change
    .venv/bin/python hack/docs.py --write   # rewrite citations and the exit-code tables
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"
TROUBLESHOOTING = ROOT / "docs" / "howto" / "troubleshooting.md"
EXIT_BEGIN = "<!-- exit codes: made by hack/docs.py from each command's --help (kubectl_disagg/exits.py) -->"
EXIT_END = "<!-- end of the exit codes -->"
# The one file that quotes the other spellings on purpose, to test the rewrite of them.
QUOTING = ROOT / "tests" / "unit" / "test_docs.py"
PACKAGE_TABLE = ("<!-- package table:", "<!-- end of the package table -->")  # made from docstrings

SECTION = r"\d+(?:\.\d+)?"
# A citation: an optional word before the section sign, and the section's number.
CITATION = re.compile(rf"(?<![\w§])(?:(?P<word>[A-Za-z]+) )?§(?P<section>{SECTION})")
LINKED = re.compile(rf"\[(?P<word>[Dd]esign) §(?P<section>{SECTION})\]\((?P<target>[^)\s]*)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+).*?\1")


# --- anchors and links ------------------------------------------------------------------------

def anchor(heading: str) -> str:
    """GitHub's fragment for a heading: its text as rendered (links, code marks and emphasis
    gone), lower case, only letters, digits, `_`, `-` and spaces, each space a `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[`*]", "", text).lower()
    text = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def prose_lines(text: str):
    """(line number, line, is a heading) of the lines outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line, bool(HEADING.match(line))


def anchors(text: str) -> list[str]:
    """Every fragment a markdown file defines, in order: its headings (a repeated one gets -1,
    -2, …, as GitHub numbers them) and explicit `<a id|name="…">` anchors."""
    found, seen = [], {}
    for _, line, heading in prose_lines(text):
        found += re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line)
        if heading:
            base = anchor(HEADING.match(line).group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.append(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every relative link of a markdown file (outside code)."""
    found = []
    for number, line, _ in prose_lines(text):
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            target = match.group("target").strip("<>")
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                found.append((number, target))
    return found


# --- shell blocks ----------------------------------------------------------------------------

SHELLS = ("sh", "bash", "shell", "console")
NOT_RUN = re.compile(r"^\s*<!--\s*not run:(?P<reason>.*?)-->\s*$")
# The pages whose shell blocks tests/integration/test_docs_shell.py runs, in a fresh playground each.
RUN_PAGES = ("README.md", "docs/tutorials/*.md")


# A "not run" reason naming the demo that runs the block instead: its `make` target.
RUN_BY = re.compile(r"^run by `make (?P<target>[\w-]+)`")
# Each demo's `make` target → the tutorial its test checks it against (tests/integration/
# test_demo.py, `assert_tutorial_is_the_demo`): every command of the page's blocks that run, or
# that say they are run by that demo, is one the demo ran, in the page's order, with its code.
DEMO_TUTORIALS = {"demo": "docs/tutorials/terminal-rollout.md",
                  "demo-progressive": "docs/tutorials/progressive-analysis.md",
                  "demo-git": "docs/tutorials/git-rollout.md"}


class ShellBlock:
    """A fenced shell block of a markdown page: `line`, its fence's line number; `commands`, its
    text as a shell runs it (a `console` block: its `$ ` lines, the prompt taken off);
    `not_run`, the reason given by a `<!-- not run: REASON -->` line just above the fence."""

    def __init__(self, line: int, commands: str, not_run: str | None):
        self.line, self.commands, self.not_run = line, commands, not_run

    @property
    def run_by(self) -> str | None:
        """The demo's `make` target where the reason is "run by `make TARGET` ...", else None."""
        found = RUN_BY.match(self.not_run or "")
        return found.group("target") if found else None

    def __repr__(self) -> str:
        return f"ShellBlock(line={self.line}, not_run={self.not_run!r})"


def shell_blocks(text: str) -> list[ShellBlock]:
    """Every fenced block of a shell language (`SHELLS`) of a markdown page, in order."""
    blocks, lines, index = [], text.splitlines(), 0
    while index < len(lines):
        match = re.match(r"^(\s*)(```+|~~~+)\s*([\w-]*)", lines[index])
        if not match:
            index += 1
            continue
        fence, language, start = match.group(2), match.group(3).lower(), index
        index += 1
        body = []
        while index < len(lines) and not lines[index].strip().startswith(fence):
            body.append(lines[index])
            index += 1
        index += 1
        if language not in SHELLS:
            continue
        if language == "console":
            body = [line.strip()[2:] for line in body if line.strip().startswith("$ ")]
        above = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
        marker = NOT_RUN.match(above)
        blocks.append(ShellBlock(start + 1, "\n".join(body) + "\n", marker.group("reason").strip() if marker else None))
    return blocks


EXITS = re.compile(r"#\s*exits\s+(?P<code>\d+)\b")
COMMENT = re.compile(r"(?:^|\s+)#(?:\s.*)?$")  # a shell comment: `#` at the start of a word, to the line's end


def command(line: str) -> tuple[str, int] | None:
    """A command line as (its command, comment and outer spaces dropped; the exit code it must
    end with: 0, or the N of its `# exits N` comment); None for a blank or comment-only line."""
    text = COMMENT.sub("", line).strip()
    if not text:
        return None
    expected = EXITS.search(line)
    return text, int(expected.group("code")) if expected else 0


def commands(block: ShellBlock) -> list[tuple[str, int]]:
    """The block's commands, one a line (`command`), in order."""
    return [found for line in block.commands.splitlines() if (found := command(line)) is not None]


def script_of(block: ShellBlock, mark: str) -> str:
    """The block as bash runs it in the docs' test, after an `echo` of `mark`: each command must
    succeed, but for a line whose comment says `# exits N`, which must end with N (a rollout held
    at a gate: `# exits 7`)."""
    out = [f"echo {shlex.quote(mark)}"]
    for line in block.commands.splitlines():
        found = command(line)
        if found is None or found[1] == 0 or line.rstrip().endswith("\\"):
            out.append(line)
            continue
        code = found[1]
        out += ["set +e", line, "rc=$?", "set -e",
                f'if [ "$rc" -ne {code} ]; then echo "exit code $rc where the page says {code}: "'
                f'{shlex.quote(line.strip())}; exit 1; fi']
    return "\n".join(out) + "\n"


def run_pages() -> list[Path]:
    """The pages whose shell blocks run in a test: README.md and every tutorial."""
    return sorted({path for pattern in RUN_PAGES for path in ROOT.glob(pattern)})


def shell_block_problems() -> list[str]:
    """`FILE:LINE: …` for a "not run" marker without its reason, or run by a demo whose test does
    not check the page (`DEMO_TUTORIALS`)."""
    problems = []
    for page in run_pages():
        name = page.relative_to(ROOT).as_posix()
        for block in shell_blocks(page.read_text()):
            if block.not_run == "":
                problems.append(f"{name}:{block.line}: a shell block marked not run gives no reason")
            elif block.run_by is not None and DEMO_TUTORIALS.get(block.run_by) != name:
                checks = DEMO_TUTORIALS.get(block.run_by)
                problems.append(f"{name}:{block.line}: run by `make {block.run_by}`, but "
                                + (f"its test checks {checks}" if checks else "no demo's test goes by that name"))
    return problems


# --- citations --------------------------------------------------------------------------------

def sections() -> dict[str, str]:
    """Section number → its heading's anchor in docs/design.md."""
    found = {}
    for _, line, heading in prose_lines(DESIGN.read_text()):
        if heading and (match := re.match(rf"§({SECTION}) ", HEADING.match(line).group(2))):
            found[match.group(1)] = anchor(HEADING.match(line).group(2))
    return found


def tracked_files() -> list[Path]:
    """The repository's tracked text files but docs/design.md (whose own references are to
    itself) and the test that quotes other spellings."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = []
    for name in names.decode().split("\0"):
        path = ROOT / name
        if name and path not in (DESIGN, QUOTING) and path.is_file() and not path.is_symlink():
            try:
                path.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            files.append(path)
    return files


def design_link(path: Path, section: str, found: dict[str, str]) -> str:
    return f"{Path(os.path.relpath(DESIGN, path.parent)).as_posix()}#{found[section]}"


def _linkable_lines(path: Path, text: str) -> set[int]:
    """The lines of a markdown file where a citation is a link: prose, not headings, not code,
    not the package table (made from the docstrings, which cite in plain words)."""
    lines, inside = set(), False
    for number, line, heading in prose_lines(text):
        if line.startswith(PACKAGE_TABLE[0]):
            inside = True
        elif line.startswith(PACKAGE_TABLE[1]):
            inside = False
        elif not heading and not inside:
            lines.add(number)
    return lines


def citation_problems() -> list[str]:
    """`FILE:LINE: …` for every citation not written as a design citation of an existing section."""
    found, problems = sections(), []
    for path in tracked_files():
        text = path.read_text()
        if "§" not in text:
            continue
        name = path.relative_to(ROOT).as_posix()
        linkable = _linkable_lines(path, text) if path.suffix == ".md" else set()
        for number, line in enumerate(text.splitlines(), 1):
            if path.suffix == ".md":  # inline code is quoted, not cited: blank it, keeping columns
                line = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
            linked = {m.start("word") for m in LINKED.finditer(line)}
            for match in LINKED.finditer(line):
                if match.group("section") in found and match.group("target") != design_link(path, match.group("section"), found):
                    problems.append(f"{name}:{number}: design §{match.group('section')} links "
                                    f"{match.group('target')}, not {design_link(path, match.group('section'), found)}")
            for match in CITATION.finditer(line):
                section = match.group("section")
                if (match.group("word") or "").lower() != "design":
                    problems.append(f"{name}:{number}: §{section} is not written \"design §{section}\"")
                elif section not in found:
                    problems.append(f"{name}:{number}: docs/design.md has no §{section}")
                elif number in linkable and match.start("word") not in linked:
                    problems.append(f"{name}:{number}: design §{section} does not link docs/design.md")
    return problems


def _cited(path: Path, line: str, linkable: bool, found: dict[str, str]) -> str:
    def one(match: re.Match) -> str:
        word = match.group("word")
        section = match.group("section")
        before = "" if word is None or word.lower() in ("spec", "design") else f"{word} "
        citation = f"{'Design' if before == '' and word and word[0].isupper() else 'design'} §{section}"
        if linkable and section in found:
            return f"{before}[{citation}]({design_link(path, section, found)})"
        return before + citation

    if not linkable:
        return CITATION.sub(one, line)
    # Leave the citations already linked as they are; rewrite the rest.
    parts, last = [], 0
    for match in LINKED.finditer(line):
        parts.append(CITATION.sub(one, line[last:match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(CITATION.sub(one, line[last:]))
    return "".join(parts)


def _outside_code(line: str, rewrite) -> str:
    """`rewrite` applied to a line's text outside inline code spans."""
    parts, last = [], 0
    for match in INLINE_CODE.finditer(line):
        parts += [rewrite(line[last:match.start()]), match.group(0)]
        last = match.end()
    return "".join(parts + [rewrite(line[last:])])


def rewrite_citations() -> dict[Path, str]:
    """Path → its new text, for every file whose citations change."""
    found, changed, renamed = sections(), {}, {}
    for path in tracked_files():
        text = path.read_text()
        if "§" not in text:
            continue
        linkable = _linkable_lines(path, text) if path.suffix == ".md" else set()
        lines = text.split("\n")
        for index, line in enumerate(lines):
            if path.suffix == ".md":
                lines[index] = _outside_code(line, lambda part, n=index + 1, path=path, linkable=linkable:
                                             _cited(path, part, n in linkable, found))
            else:
                lines[index] = _cited(path, line, False, found)
        new = "\n".join(lines)
        if new != text:
            changed[path] = new
            if path.suffix == ".md":
                renamed[path] = dict(zip(anchors(text), anchors(new)))
    # Links to a heading whose anchor changed (its citation was rewritten) follow it.
    for path in [p for p in tracked_files() if p.suffix == ".md"]:
        text = changed.get(path, path.read_text())
        new = LINK.sub(lambda m, path=path: _relinked(m, path, renamed), text)
        if new != text:
            changed[path] = new
    return changed


def _relinked(match: re.Match, path: Path, renamed: dict[Path, dict[str, str]]) -> str:
    target = match.group("target")
    file, _, fragment = target.partition("#")
    if not fragment:
        return match.group(0)
    where = (path.parent / file).resolve() if file else path
    new = renamed.get(where, {}).get(fragment)
    if new is None or new == fragment:
        return match.group(0)
    return match.group(0).replace(f"#{fragment})", f"#{new})")


# --- the exit-code tables ---------------------------------------------------------------------

def exit_tables() -> str:
    """The markdown between the exit-code markers: per group of commands with the same codes, a
    table of each of their exit-code sections (`exit_codes`, as --help and the CLI reference
    list them), in the table's own (unwrapped) words."""
    from kubectl_disagg import exits
    from kubectl_disagg.commands._help import commands
    from kubectl_disagg.commands.root import cli

    sys.path.insert(0, str(ROOT / "hack"))
    from cli_reference import exit_table

    groups: dict[tuple, list[str]] = {}
    for path, command, _ in commands(cli):
        key = tuple((table, title, tuple((words or {}).items())) for table, title, words in command.exit_codes)
        groups.setdefault(key, []).append(" ".join(("kubectl disagg", *path)))
    out = []
    for key, names in groups.items():
        out.append("### " + ", ".join(f"`{name}`" for name in names))
        for table, title, words in key:
            out += ["", *exit_table(table, title, dict(words))]
        out.append("")
    interrupted = exits.Exit.INTERRUPTED
    out += ["### Every command", "", "| code | meaning |", "| --- | --- |",
            f"| {int(interrupted)} | {interrupted.help} (SIGTERM: {exits.terminated(15)}, SIGHUP: {exits.terminated(1)}) |"]
    return "\n".join(out)


def troubleshooting_with(tables: str, text: str) -> str:
    begin, end = text.index(EXIT_BEGIN) + len(EXIT_BEGIN), text.index(EXIT_END)
    return text[:begin] + "\n\n" + tables + "\n\n" + text[end:]


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    changed = rewrite_citations()
    current = TROUBLESHOOTING.read_text()
    wanted = troubleshooting_with(exit_tables(), changed.get(TROUBLESHOOTING, current))
    if wanted != current:
        changed[TROUBLESHOOTING] = wanted
    for path, text in sorted(changed.items()):
        print(path.relative_to(ROOT))
        if "--write" in argv:
            path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
