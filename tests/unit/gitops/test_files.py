"""The state beside the sets: `rollout state init` (offline first states) and a directory
rendered whole (every state matches a set of it)."""

from __future__ import annotations

from kubectl_disagg.manifests.writer import to_yaml
from tests.support.cli import run
from tests.support.sets import make_set


def _directory(tmp_path, *sets):
    for ds in sets:
        (tmp_path / f"{ds.name}.yaml").write_text(to_yaml(ds.source.data))
    return tmp_path


def test_init_writes_the_first_state_of_every_set_and_render_requires_it(tmp_path, capsys):
    directory = _directory(tmp_path, make_set({"prefill": 2, "decode": 1}),
                           make_set({"prefill": 1, "decode": 1}, name="other", slices=2))
    code, out, err = run(["render", "-f", str(directory), "--require-state"], capsys)
    assert code == 1 and out == "" and "rollout state init" in err
    code, out, _ = run(["rollout", "state", "init", "-f", str(directory)], capsys)
    assert code == 0 and "disaggregatedset/llm" in out and "disaggregatedset/other" in out
    state_file = directory / "disagg-rollout-state.yaml"
    assert state_file.read_text().count("kind: RolloutState") == 2
    code, with_state, _ = run(["render", "-f", str(directory), "--require-state"], capsys)
    code_plain, steady, _ = run(["render", "-f", str(directory)], capsys)
    assert (code, code_plain) == (0, 0) and with_state == steady  # the first state renders the steady state


def test_init_refuses_a_set_that_has_a_state_and_writes_nothing(tmp_path, capsys):
    directory = _directory(tmp_path, make_set({"prefill": 2, "decode": 1}))
    assert run(["rollout", "state", "init", "-f", str(directory)], capsys)[0] == 0
    before = (directory / "disagg-rollout-state.yaml").read_text()
    _directory(tmp_path, make_set({"prefill": 1, "decode": 1}, name="other"))
    code, out, err = run(["rollout", "state", "init", "-f", str(directory)], capsys)
    assert code == 1 and out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"{directory / 'disagg-rollout-state.yaml'}:") and "has a rollout state already" in line
    assert (directory / "disagg-rollout-state.yaml").read_text() == before  # not even the other set's


def test_init_with_an_explicit_state_file(tmp_path, capsys):
    directory = _directory(tmp_path, make_set({"prefill": 2, "decode": 1}))
    target = tmp_path / "states" / "llm-state.yaml"
    code, _, _ = run(["rollout", "state", "init", "-f", str(directory / "llm.yaml"), "--state", str(target)], capsys)
    assert code == 0 and target.exists() and not (directory / "disagg-rollout-state.yaml").exists()
    code, _, _ = run(["render", "-f", str(directory / "llm.yaml"), "--state", str(target)], capsys)
    assert code == 0


def test_render_refuses_a_state_that_matches_no_set_of_the_directory(tmp_path, capsys):
    directory = _directory(tmp_path, make_set({"prefill": 2, "decode": 1}))
    assert run(["rollout", "state", "init", "-f", str(directory)], capsys)[0] == 0
    state_file = directory / "disagg-rollout-state.yaml"
    state_file.write_text(state_file.read_text().replace("name: llm", "name: renamed"))
    code, out, err = run(["render", "-f", str(directory)], capsys)
    assert code == 1 and out == ""
    assert "metadata.name" in err and "disaggregatedset/renamed" in err and "every state matches a set" in err


def test_a_plain_rollout_step_refuses_a_set_driven_through_git(tmp_path, capsys):
    directory = _directory(tmp_path, make_set({"prefill": 2, "decode": 1}))
    assert run(["rollout", "state", "init", "-f", str(directory)], capsys)[0] == 0
    code, out, err = run(["rollout", "step", "-f", str(directory), "--kubeconfig", str(tmp_path / "none")], capsys)
    assert code == 3 and out == ""
    assert "disaggregatedset/llm: it is driven through git" in err and "--ignore-rollout-state" in err
    code, _, err = run(["rollout", "step", "-f", str(directory), "--state", "x.yaml"], capsys)
    assert code == 2 and "go with --gitops" in err


def test_the_state_file_gets_the_mode_of_a_new_file_under_the_umask(tmp_path, capsys):
    """It was written 0600 whatever the umask (mkstemp's mode), so the group could not read it."""
    import os
    directory = _directory(tmp_path, make_set({"prefill": 2, "decode": 1}))
    state_file = directory / "disagg-rollout-state.yaml"
    previous = os.umask(0o002)
    try:
        assert run(["rollout", "state", "init", "-f", str(directory)], capsys)[0] == 0
        assert state_file.stat().st_mode & 0o777 == 0o664
        state_file.unlink()
        os.umask(0o027)
        assert run(["rollout", "state", "init", "-f", str(directory)], capsys)[0] == 0
        assert state_file.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(previous)


def test_restore_keeps_each_files_mode_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    """`restore` put a file back with mkstemp's mode 0600 and, when the rename failed, left its
    temporary file beside it (where the next read of the directory skips it, but git sees it)."""
    import os

    import pytest

    from kubectl_disagg.gitops.files import restore

    shared, private = tmp_path / "shared.yaml", tmp_path / "private.yaml"
    for path, mode in ((shared, 0o664), (private, 0o600)):
        path.write_bytes(b"changed\n")
        path.chmod(mode)
    restore({str(shared): b"as it was\r\n", str(private): b"secret\n"})
    assert (shared.read_bytes(), private.read_bytes()) == (b"as it was\r\n", b"secret\n")
    assert (shared.stat().st_mode & 0o777, private.stat().st_mode & 0o777) == (0o664, 0o600)

    def refused(source, target):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(os, "replace", refused)
    with pytest.raises(OSError):
        restore({str(shared): b"again\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["private.yaml", "shared.yaml"]
    assert shared.read_bytes() == b"as it was\r\n"
