"""The one input reader (inputs/tree.py): what the -f inputs hold, read from disk once.

The directory pipeline as a whole (globs, Argo CD's skipped files, states beside their sets,
every command agreeing) is tested in tests/unit/gitops/test_directory.py; these are the reader's
own cases, moved here with the reader (the walk manifests/reader.py had is gone).
"""

from __future__ import annotations

import os
import pathlib

import pytest

from kubectl_disagg.core.api.naming import STATE_FILE
from kubectl_disagg.errors import UserError
from kubectl_disagg.inputs import tree as inputs

EXAMPLE = (pathlib.Path(__file__).resolve().parents[3] / "examples" / "prefill-decode.yaml").read_text()


def test_directories_are_read_sorted_and_recursive_with_dot_names_skipped(tmp_path):
    (tmp_path / "b.yaml").write_text("kind: B\n")
    (tmp_path / "a.yml").write_text("kind: A\n")
    (tmp_path / ".hidden.yaml").write_text("kind: H\n")
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.json").write_text('{"kind": "C"}')
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "d.yaml").write_text("kind: D\n")
    top = inputs.read_tree([str(tmp_path)], inputs.Reading())
    assert [os.path.basename(p) for p in top.chosen] == ["a.yml", "b.yaml"]
    every = inputs.read_tree([str(tmp_path)], inputs.Reading(recursive=True))
    assert [os.path.relpath(p, tmp_path) for p in every.chosen] == ["a.yml", "b.yaml", "sub/c.json"]


def test_every_missing_input_is_reported_at_once(tmp_path):
    with pytest.raises(UserError) as caught:
        inputs.read_tree([str(tmp_path / "nope.yaml"), str(tmp_path / "nada.yaml")], inputs.Reading())
    assert caught.value.lines() == [f"{tmp_path / 'nope.yaml'}: no such file or directory",
                                    f"{tmp_path / 'nada.yaml'}: no such file or directory"]


def test_a_path_that_is_not_a_regular_file_says_what_it_is(tmp_path):
    """A FIFO or /dev/zero given to -f was reported as "no such file or directory": issue 34 fixed
    the message in manifests/reader's walk, which no command used; the commands read with
    gitops/directory's, which kept the old message (the two readers of issue 38)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UserError) as caught:
        inputs.read_tree([str(fifo), "/dev/zero", str(tmp_path / "missing.yaml")], inputs.Reading())
    assert caught.value.lines() == [
        f"{fifo}: not a regular file (a named pipe); give a file, a directory or - for stdin",
        "/dev/zero: not a regular file (a character device); give a file, a directory or - for stdin",
        f"{tmp_path / 'missing.yaml'}: no such file or directory",
    ]


def test_the_state_file_beside_a_file_is_read_with_it(tmp_path):
    """The state file beside a set's file is read with the inputs, once: the commands that need
    it (a git-driven set's refusal, a step's check that nobody wrote meanwhile) take its bytes
    from the tree instead of opening it again."""
    (tmp_path / "ds.yaml").write_text(EXAMPLE)
    (tmp_path / STATE_FILE).write_text("# state\n")
    tree = inputs.read_tree([str(tmp_path / "ds.yaml")], inputs.Reading())
    assert tree.chosen == (str(tmp_path / "ds.yaml"),)
    assert tree.files[str(tmp_path / STATE_FILE)] == b"# state\n"


def test_a_git_driven_set_is_told_from_the_state_file_as_read(tmp_path):
    """`rollout step -f` refuses a set whose state file names it from the bytes read with the
    set (gitops/files.git_driven read the file a third way, through manifests/reader)."""
    from kubectl_disagg.gitops import directory
    from kubectl_disagg.gitops.files import refuse_git_driven

    (tmp_path / "ds.yaml").write_text(EXAMPLE + "---\n" + EXAMPLE.replace("name: llama\n", "name: other\n", 1))
    state = tmp_path / STATE_FILE
    state.write_text("apiVersion: kubectl-disagg.x-k8s.io/v1alpha1\nkind: RolloutState\nmetadata: {name: llama}\n")
    reading = inputs.Reading()
    tree = inputs.read_tree([str(tmp_path)], reading)
    sets = [entry.ds for entry in directory.load(tree, reading, states=False).sets]
    state.unlink()  # what was read counts, not what is on disk later
    (refusal,) = refuse_git_driven(sets, tree.files)
    assert refusal.startswith("refusing to step disaggregatedset/llama: it is driven through git")


def test_write_state_keeps_the_other_sets_from_the_bytes_it_was_given(tmp_path):
    """`write_state` takes what the file held (`contents`), not a second read through
    manifests/reader: another set's document stays as it was."""
    from kubectl_disagg.gitops.files import write_state

    path = str(tmp_path / STATE_FILE)
    other = b"apiVersion: kubectl-disagg.x-k8s.io/v1alpha1\nkind: RolloutState\nmetadata: {name: other}\n"
    with open(path, "wb") as handle:
        handle.write(other)
    held = inputs.contents([path])[path]
    assert held == other
    write_state(path, held)  # no state of ours: the file keeps the other set's document
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert "name: other" in text
