"""`rollout promote|pause|resume|abort --gitops -f DIR`: flags → `gitops.verbs.verb_files` (the
position written into each set's state file) → the console, the pull request text, the commit."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_disagg.commands import _inputs
from kubectl_disagg.commands._options import Options
from kubectl_disagg.core.waves import VerbRefused
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import VerbExit


def run(options: Options, verb, console, *, full=False, state_file=None, pr_description=None,
        commit=False) -> VerbExit:
    from kubectl_disagg.inputs import tree as inputs
    from kubectl_disagg.gitops.files import restore
    from kubectl_disagg.gitops.verbs import verb_files, write_verbs
    from kubectl_disagg.views.gitops_report import commit_message
    from kubectl_disagg.views.verbs import verb_pr_description

    namespace = options.namespace
    reading = inputs.Reading(options.recursive, explicit=state_file)
    tree, planned = _inputs.tree_of_sets(options.filenames, reading, options.namespace)
    if commit:  # checked before anything is written
        from kubectl_disagg.gitops.git import repository_for

        repository = repository_for([entry.state_path for entry in planned.sets], None)
    try:
        done = verb_files(tree, reading, namespace, verb, full=full)
    except VerbRefused as refused:
        console.error([f"refusing to {verb}: {refused}; nothing was written"])
        return VerbExit.REFUSED
    before = write_verbs(done)
    for each in done:
        console.done(each.result)
    descriptions = [verb_pr_description(each) for each in done]
    if pr_description:
        Path(pr_description).write_text("\n".join(descriptions), encoding="utf-8")
    if commit:
        try:
            revision = repository.commit(sorted({each.path for each in done}), commit_message(descriptions), None)
        except UserError as err:
            restore(before)  # the commit could not be made: nothing stays written
            raise UserError([f"{problem}; nothing was written" for problem in err.problems]) from None
        click.echo(f"committed {revision[:12]}", err=True)
    return VerbExit.OK
