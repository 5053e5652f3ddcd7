"""The docs hold together: every citation is a design citation of a section that exists, every
relative link of README.md and docs/ resolves (file and anchor), and the exit-code tables of
the troubleshooting page are the commands' own (hack/docs.py makes and checks all three)."""

from __future__ import annotations

import ast
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Pages other branches write; a link to one is checked once it exists.
PENDING = {"docs/tutorials/terminal.md", "docs/tutorials/progressive.md", "docs/tutorials/git.md",
           "docs/reference/cli"}


def _docs():
    spec = importlib.util.spec_from_file_location("docs_tool", ROOT / "hack" / "docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


docs = _docs()
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *ROOT.glob("CONTRIBUTING.md")])


def test_design_has_every_section_the_repository_numbers():
    expected = {str(n) for n in range(1, 11)} | {"1.1", "2.1", "3.1"} | {f"4.{n}" for n in range(1, 5)} | \
        {f"8.{n}" for n in range(1, 5)} | {f"9.{n}" for n in range(1, 9)} | {f"10.{n}" for n in range(1, 5)}
    assert set(docs.sections()) == expected


def test_anchors_follow_githubs_rule():
    assert docs.anchor("§9.4 Analysis") == "94-analysis"
    assert docs.anchor("Which states render (spec §8)") == "which-states-render-spec-8"
    assert docs.anchor("Stepping: `kubectl disagg rollout step --gitops -f DIR`") == \
        "stepping-kubectl-disagg-rollout-step---gitops--f-dir"
    assert docs.anchors("# A\n```\n# not a heading\n```\n## A\n<a id=\"here\"></a>\n") == ["a", "a-1", "here"]


def test_a_citation_is_rewritten_to_the_house_spelling():
    found = docs.sections()
    page = ROOT / "docs" / "page.md"
    assert docs._cited(page, "see spec §9.4 and (§4, §5)", True, found) == (
        "see [design §9.4](design.md#94-analysis) and ([design §4](design.md#4-one-reconcile-pass), "
        "[design §5](design.md#5-the-planner))")
    assert docs._cited(ROOT / "kubectl_disagg" / "x.py", "Spec §8 rule 3, §5's", False, found) == \
        "Design §8 rule 3, design §5's"
    assert docs._cited(ROOT / "README.md", "[design §6](docs/design.md#6-rollout-config-per-role)", True, found) == \
        "[design §6](docs/design.md#6-rollout-config-per-role)"


def test_every_citation_is_a_design_citation_of_a_section_that_exists():
    problems = docs.citation_problems()
    assert not problems, "run `.venv/bin/python hack/docs.py --write`:\n" + "\n".join(problems)


def _broken(page: pathlib.Path) -> list[str]:
    broken = []
    for line, target in docs.links(page.read_text()):
        file, _, fragment = target.partition("#")
        where = (page.parent / file).resolve() if file else page
        name = where.relative_to(ROOT).as_posix() if where.is_relative_to(ROOT) else str(where)
        if not where.exists():
            if name.rstrip("/") not in PENDING:
                broken.append(f"{page.relative_to(ROOT)}:{line}: {target}: no such file")
        elif fragment and where.suffix == ".md" and fragment not in docs.anchors(where.read_text()):
            broken.append(f"{page.relative_to(ROOT)}:{line}: {target}: no heading makes #{fragment}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page):
    assert _broken(page) == []


def test_the_link_check_sees_a_missing_file_and_a_missing_anchor(tmp_path, monkeypatch):
    page = ROOT / "docs" / "index.md"
    monkeypatch.setattr(pathlib.Path, "read_text", lambda self, *a, **k: (
        "[a](design.md#no-such-heading) [b](nowhere.md) `[c](nowhere.md)` [d](https://x/y) [e](design.md#5-the-planner)"
        if self == page else _read(self, *a, **k)))
    assert [problem.split(": ", 1)[1] for problem in _broken(page)] == [
        "design.md#no-such-heading: no heading makes #no-such-heading", "nowhere.md: no such file"]


_read = pathlib.Path.read_text


def test_the_troubleshooting_exit_tables_are_the_commands_own():
    text = docs.TROUBLESHOOTING.read_text()
    assert docs.troubleshooting_with(docs.exit_tables(), text) == text, \
        "docs/howto/troubleshooting.md's exit codes are stale: run `.venv/bin/python hack/docs.py --write`"


def test_the_exit_tables_name_every_code_of_the_table():
    from kubectl_disagg import exits
    tables = docs.exit_tables()
    for table in exits.ExitCode.__subclasses__():
        for code in table:
            assert f"| {int(code)} | " in tables
    assert "| 7 | held: the set's RolloutPolicy holds the rollout" in tables
    assert "`kubectl disagg rollout step`" in tables and "| 130 |" in tables


def test_the_shell_block_extractor_finds_the_blocks_and_their_reasons():
    blocks = docs.shell_blocks("a\n<!-- not run: needs Argo CD -->\n```sh\nargocd app sync x\n```\n\n"
                               "```bash\necho one\n```\n```yaml\nkind: X\n```\n```console\n$ echo two\ntwo\n```\n"
                               "<!-- not run: -->\n~~~shell\nfalse\n~~~\n")
    assert [(b.line, b.not_run, b.commands) for b in blocks] == [
        (3, "needs Argo CD", "argocd app sync x\n"), (7, None, "echo one\n"), (13, None, "echo two\n"),
        (18, "", "false\n")]


def test_every_shell_block_a_test_runs_either_runs_or_says_why_not():
    """README.md and docs/tutorials/: a block marked `<!-- not run: REASON -->` gives its reason
    (the others run in tests/integration/test_docs_shell.py)."""
    assert ROOT / "README.md" in docs.run_pages()
    assert docs.shell_block_problems() == []


def test_a_command_the_page_says_exits_n_must_exit_n(tmp_path):
    import subprocess

    (block,) = docs.shell_blocks("```sh\necho a\n(exit 7)   # exits 7 at the gate\n(exit 6)   # exits 7\necho b\n```\n")
    script = "set -eo pipefail\n" + docs.script_of(block, "::block README.md:1")
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["::block README.md:1", "a",
                                          "exit code 6 where the page says 7: (exit 6)   # exits 7"]


def test_a_block_run_by_a_demo_names_it_and_its_commands_carry_their_codes(monkeypatch, tmp_path):
    """A "not run" reason "run by `make TARGET` ..." names the demo (`run_by`); `commands` reads
    each command with its comment dropped and the code it must end with, for the demos' test to
    compare with what a demo echoed; such a block on a page its demo's test does not check is a
    problem."""
    (block, plain) = docs.shell_blocks("<!-- not run: run by `make demo-git` and checked by its test -->\n```sh\n"
                                       "git log --oneline\n# a comment\n\nkubectl disagg rollout status   # exits 6: done\n"
                                       "grep -c '#x' f  # count\n```\n<!-- not run: needs Argo CD -->\n```sh\nx\n```\n")
    assert (block.run_by, plain.run_by) == ("demo-git", None)
    assert docs.commands(block) == [("git log --oneline", 0), ("kubectl disagg rollout status", 6),
                                    ("grep -c '#x' f", 0)]
    assert docs.command("$ kubectl disagg rollout status  # exits 6"[2:]) == ("kubectl disagg rollout status", 6)
    page = tmp_path / "docs" / "tutorials" / "x.md"
    page.parent.mkdir(parents=True)
    page.write_text("<!-- not run: run by `make demo-git` and checked by its test -->\n```sh\ngit log\n```\n"
                    "<!-- not run: run by `make demo-gti` -->\n```sh\ngit log\n```\n")
    monkeypatch.setattr(docs, "ROOT", tmp_path)
    assert docs.shell_block_problems() == [
        "docs/tutorials/x.md:2: run by `make demo-git`, but its test checks docs/tutorials/git-rollout.md",
        "docs/tutorials/x.md:6: run by `make demo-gti`, but no demo's test goes by that name"]


DEMO_TEST = ROOT / "tests" / "integration" / "test_demo.py"


def demos_checked() -> set[str]:
    """The demos (make targets) whose test in test_demo.py checks them against their tutorial: the
    first argument of each `assert_tutorial_is_the_demo(...)` call inside a test function."""
    found = set()
    for test in ast.parse(DEMO_TEST.read_text()).body:
        if isinstance(test, ast.FunctionDef) and test.name.startswith("test_"):
            for call in ast.walk(test):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                        and call.func.id == "assert_tutorial_is_the_demo" and isinstance(call.args[0], ast.Constant)):
                    found.add(call.args[0].value)
    return found


def test_a_block_run_by_a_demo_is_checked_by_the_demos_test():
    """A block whose "not run" reason says "run by `make TARGET`" is true only where TARGET is a
    demo whose test compares that very page with what the demo ran (hack/docs.py's
    DEMO_TUTORIALS, test_demo.py's `assert_tutorial_is_the_demo`)."""
    assert demos_checked() == set(docs.DEMO_TUTORIALS)  # each demo's test checks the page the table names
    assert docs.shell_block_problems() == []  # each "run by" block is on the page its demo's test checks
    assert {block.run_by for page in docs.run_pages() for block in docs.shell_blocks(page.read_text())} > {None}


def test_the_phases_the_docs_list_are_the_rolloutstates_own():
    """Issue 47: docs/rollouts.md listed a phase `Complete`; the RolloutState says `AtRest`
    (core/delivery/waves.py State, which the printer column and Argo CD's health check read)."""
    import re

    from kubectl_disagg.core.delivery.waves import State

    row = next(line for line in (ROOT / "docs" / "rollouts.md").read_text().splitlines()
               if line.startswith("| `phase` |"))
    assert set(re.findall(r"`(\w+)`", row.split("|")[2])) == {state.value for state in State}
