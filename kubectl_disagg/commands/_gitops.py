"""The shell of `rollout step --gitops`'s writes: the pull request's description and the commit of
the states written, undone (the files put back) when the commit cannot be made.

The write → commit → restore transaction is the position store's (`gitops/store.py`
`write_states` then `commit_or_restore`), the one the verbs' writes go through too.
"""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_disagg.gitops.store import commit_or_restore
from kubectl_disagg.rollout.outcome import Outcome
from kubectl_disagg.views.gitops_report import commit_message, format_pr_description, format_pr_descriptions


def repository(planned, branch: str | None):
    """The git repository of the sets' state files, checked before anything is written."""
    from kubectl_disagg.gitops.git import repository_for

    return repository_for([entry.state_path for entry in planned.sets], branch)


def describe_and_commit(results, before: dict[str, bytes | None], pr_description: str | None, repository,
                        branch: str | None) -> None:
    """What was written (`before`: what the files held, from `gitops.run.write_steps`): its
    pull request description into `pr_description`, and with a `repository` (--commit) the
    commit of it; a commit that cannot be made puts the files back and says nothing was written."""
    advanced = [result for result in results if result.step.outcome == Outcome.ADVANCED]
    if pr_description and advanced:  # the description of what was written, or nothing
        Path(pr_description).write_text(format_pr_descriptions(results), encoding="utf-8")
    if repository is not None and advanced:
        message = commit_message([format_pr_description(r.ds, r.namespace, r.step, r.path, r.returning) for r in advanced])
        revision = commit_or_restore(repository, before, message, branch)
        click.echo(f"committed {revision[:12]}{f' on new branch {branch}' if branch else ''}", err=True)
