"""`kubectl disagg rollout step --gitops -f DIR`: the next step of a rollout, as a change to the
rollout state in git (docs/gitops.md). Flags → `gitops.run.step_files` (read each state and the
live LWS, the next step, with --wait watching them in `wait.until_settled`; write the advanced states) → the
report (and the pull request's description).

The cluster is only read, and only LeaderWorkerSets: get, list and watch.
"""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_disagg.commands import _inputs, _session
from kubectl_disagg.commands._options import Options
from kubectl_disagg.core.durations import format_duration
from kubectl_disagg.errors import UserError
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.gitops.files import restore
from kubectl_disagg.gitops.step import Outcome
from kubectl_disagg.exits import GitopsExit
from kubectl_disagg.gitops.run import exit_code, step_files, write_steps
from kubectl_disagg.rollout.analysis import AnalysisTimeout


def run(options: Options, wait: bool, timeout: float | None, pr_description: str | None, *, commit: bool = False,
        branch: str | None = None, state_file: str | None = None) -> GitopsExit:
    from kubectl_disagg.views.analysis_progress import AnalysisProgress
    from kubectl_disagg.views.gitops_report import (commit_message, format_pr_description, format_pr_descriptions,
                                                     format_results)

    namespace = options.namespace
    reading = inputs.Reading(options.recursive, explicit=state_file)
    tree, planned = _inputs.tree_of_sets(options.filenames, reading, options.namespace)
    if commit:  # checked before anything is written
        from kubectl_disagg.gitops.git import repository_for

        repository = repository_for([entry.state_path for entry in planned.sets], branch)
    with _session.session(options) as cluster:
        try:
            results = step_files(cluster, tree, reading, namespace, wait=wait, timeout=timeout,
                                 analysis_progress=AnalysisProgress)
        except AnalysisTimeout as err:  # no verdict: nothing is recorded, the next step measures again
            click.echo("\n".join(f"{line}; nothing written" for line in err.lines()), err=True)
            return GitopsExit.TIMEOUT
    before = write_steps(results)
    click.echo(format_results(results, options.output), nl=False)
    for result in results:
        if result.timed_out:
            click.echo(f"timed out after {format_duration(timeout)} waiting for disaggregatedset/{result.ds.name} "
                       f"in {result.namespace}; nothing written", err=True)
    advanced = [result for result in results if result.step.outcome == Outcome.ADVANCED]
    if pr_description and advanced:  # the description of what was written, or nothing
        Path(pr_description).write_text(format_pr_descriptions(results), encoding="utf-8")
    if commit and advanced:
        message = commit_message([format_pr_description(r.ds, r.namespace, r.step, r.path) for r in advanced])
        try:
            revision = repository.commit(sorted({r.path for r in advanced}), message, branch)
        except UserError as err:
            restore(before)  # the commit could not be made: nothing stays written
            raise UserError([f"{problem}; nothing was written" for problem in err.problems]) from None
        click.echo(f"committed {revision[:12]}{f' on new branch {branch}' if branch else ''}", err=True)
    return exit_code(results)

