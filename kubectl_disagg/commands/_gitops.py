"""The shell of `rollout step --gitops`'s writes: the pull request's description, and the commit
of the states written (its message the pull request's text).

The write → commit → restore transaction is the position store's (`gitops/store.py`
`write_states`, over `gitops/files.py` `write_files`), the one the verbs' writes go through too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.gitops.files import Commit, committing
from kubectl_disagg.gitops.git import Repository, repository_for
from kubectl_disagg.rollout.git_step import SetStep
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.views.gitops_report import commit_message, format_pr_description, format_pr_descriptions


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


def written(results: Sequence[SetStep], pr_description: str | None, revision: str | None,
            branch: str | None) -> None:
    """After the states are written: the pull request's description of them into
    `pr_description` (nothing advanced: none), and the commit `revision` made, if any."""
    if pr_description and any(result.step.outcome == Outcome.ADVANCED for result in results):
        Path(pr_description).write_text(format_pr_descriptions(results), encoding="utf-8")
    if revision is not None:
        click.echo(f"committed {revision[:12]}{f' on new branch {branch}' if branch else ''}", err=True)
