"""The shell of `rollout step --gitops`'s commit: the git repository of the state files, checked
before anything is written, and the commit of the states written (its message the pull
request's text).

The write → commit → restore transaction is the git store's (`gitops/store.py` `write_states`,
over `gitops/files.py` `write_files`), the one the verbs' writes go through too; what the step
wrote is shown by its printer (views/step_console.py `Console.written`).
"""

from __future__ import annotations

from collections.abc import Sequence

from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.gitops.files import Commit, committing
from kubectl_disagg.gitops.git import Repository, repository_for
from kubectl_disagg.rollout.git_step import SetStep
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.views.gitops_report import commit_message, format_pr_description


def repository(planned: directories.Directory, branch: str | None) -> Repository:
    """The git repository of the sets' state files, checked before anything is written."""
    return repository_for([entry.state_path for entry in planned.sets], branch)


def commit(results: Sequence[SetStep], repository: Repository | None, branch: str | None) -> Commit | None:
    """With a `repository` (--commit), the commit of the states the step writes, the pull
    request's text as its message (`rollout.git_run.write_steps` makes it, or puts the files back)."""
    if repository is None:
        return None
    advanced = [result for result in results if result.step.outcome == Outcome.ADVANCED]
    return committing(repository, commit_message([format_pr_description(r.ds, r.namespace, r.step, r.path,
                                                                         r.returning) for r in advanced]), branch)
