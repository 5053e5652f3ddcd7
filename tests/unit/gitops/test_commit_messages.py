"""Issue 47: the commit messages of a git rollout printed the literal placeholder `-f DIR` in the
commands they name; they name the set's directory, as the user can run them."""

from __future__ import annotations

import shlex

from tests.fakes.argo import MemoryArgo
from tests.fakes.cluster import MemorySession
from tests.support.cli import on, run
from tests.support.git_rollout import git, roll_through_git, write

POLICY = {"maxSlicesInFlight": 2, "waves": [{"slices": 1, "pause": {}}, {"slices": "100%"}]}


def test_the_commands_a_git_rollouts_messages_name_can_be_run_as_they_stand(tmp_path, capsys):
    argo = MemoryArgo()
    git(tmp_path, "init", "-q", "-b", "main")
    write(tmp_path, "img:1", 3, {"prefill": 1, "decode": 1}, POLICY)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "deploy")
    roll_through_git(tmp_path, argo, capsys)
    write(tmp_path, "img:2", 3, {"prefill": 1, "decode": 1}, POLICY)
    git(tmp_path, "commit", "-q", "-am", "img:2")
    roll_through_git(tmp_path, argo, capsys)
    code, _, err = run(["rollout", "undo", "--gitops", "-f", str(tmp_path), "--commit"], capsys,
                       options=on(MemorySession(argo.cluster)))
    assert code == 0, err
    roll_through_git(tmp_path, argo, capsys)
    log = git(tmp_path, "log", "--format=%B")
    assert "-f DIR" not in log
    assert f"--gitops -f {shlex.quote(str(tmp_path))}`" in log  # the promote and step hints name it
    assert "from , step by step" not in log


def test_a_rollback_commit_with_no_old_revision_left_names_none():
    """Issue 47: a bookkeeping commit after an undo read "rolls it back from , step by step": its
    state deployed no revision but the one it returns to."""
    from kubectl_disagg.views.gitops_pr import pr_context
    from kubectl_disagg.views.templating import render_template
    from tests.support.gitops_pr import STATE_FILE, abort_steps
    from tests.support.sets import NS

    _, ds, step = abort_steps()[0]
    for rollback, returning in ((True, ""), (False, "`kubectl disagg rollout undo`")):
        pr = {**pr_context(ds, NS, step, STATE_FILE), "old_revisions": [], "rollback": rollback,
              "returning": returning}
        text = render_template("gitops_pr.md.j2", pr=pr)
        assert "from , " not in text and "from ," not in text, text
        assert f"every slice runs `{pr['revision']}`" in text
