"""`rollout promote|pause|resume|abort --gitops -f DIR`: flags → `gitops.verbs.verb_files` (the
position written into each set's state file) → the console, the pull request text, the commit."""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.core.model import DEFAULT_NAMESPACE
from kubectl_disagg.core.waves import VerbRefused
from kubectl_disagg.rollout.run import EXIT_OK, EXIT_REFUSED


def run(filenames, recursive, namespace, verb, console, *, full=False, state_file=None, pr_description=None,
        commit=False) -> int:
    from kubectl_disagg.gitops.verbs import verb_files
    from kubectl_disagg.views.gitops_report import commit_message
    from kubectl_disagg.views.verbs import verb_pr_description

    sets = _options.sets_from_files(filenames, recursive)
    if commit:  # checked before anything is written
        from kubectl_disagg.gitops.git import repository_for

        repository = repository_for(sets, None)
    try:
        done = verb_files(sets, namespace, DEFAULT_NAMESPACE, verb, full=full, state_file=state_file)
    except VerbRefused as refused:
        console.error([f"refusing to {verb}: {refused}; nothing was written"])
        return EXIT_REFUSED
    for each in done:
        console.done(each.result)
    descriptions = [verb_pr_description(each) for each in done]
    if pr_description:
        Path(pr_description).write_text("\n".join(descriptions), encoding="utf-8")
    if commit:
        revision = repository.commit(sorted({each.path for each in done}), commit_message(descriptions), None)
        click.echo(f"committed {revision[:12]}", err=True)
    return EXIT_OK
