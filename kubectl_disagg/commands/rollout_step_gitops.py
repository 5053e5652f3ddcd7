"""`kubectl disagg rollout step --gitops -f DIR`: the next step of a rollout, as a change to the
rollout state in git (docs/gitops.md). Flags → read set, state and live LWS → `next_step` →
write the state (and the pull request's description) → print. `--wait` is `next_step`'s:
`stepper.drive` over the state executor.

The cluster is only read, and only LeaderWorkerSets: get, list and watch.
"""

from __future__ import annotations

from pathlib import Path

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.kube.wait import Deadline
from kubectl_disagg.core.durations import format_duration
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops.step import Outcome, next_step
from kubectl_disagg.core.model import namespace_for
from kubectl_disagg.manifests.writer import to_json, to_yaml

EXIT_ADVANCED = 0  # a new state was written: commit it
EXIT_REFUSED = 3  # the live objects cannot be explained (nothing written)
EXIT_TIMEOUT = 4  # --wait ran out of time (nothing written)
EXIT_WAITING = 5  # the cluster does not show the committed step yet, or it is not ready (nothing written)
EXIT_COMPLETE = 6  # nothing left to roll (nothing written)

_PRIORITY = [EXIT_REFUSED, EXIT_TIMEOUT, EXIT_WAITING, EXIT_ADVANCED, EXIT_COMPLETE]
_EXIT = {Outcome.ADVANCED: EXIT_ADVANCED, Outcome.WAITING: EXIT_WAITING, Outcome.COMPLETE: EXIT_COMPLETE,
         Outcome.REFUSED: EXIT_REFUSED}


def run(filenames: tuple[str, ...], recursive: bool, namespace: str | None, kubeconfig: str | None,
        context: str | None, wait: bool, timeout: float | None, pr_description: str | None, output: str) -> int:
    from kubectl_disagg.gitops import files as state_files
    from kubectl_disagg.views.gitops_report import format_pr_description, format_summary, to_document

    sets = _options.sets_from_files(filenames, recursive)
    deadline = Deadline.after(timeout if wait else None).at
    results = []
    with _options.session(kubeconfig, context) as cluster:
        for ds in sets:
            target = namespace_for(ds, namespace, cluster.default_namespace)
            path = state_files.state_path(ds)
            if path is None:
                raise UserError([f"{ds.source.file}: --gitops needs the set in a file: its rollout state is "
                                 "kept beside it"])
            state = state_files.read_state(ds, target)
            step, timed_out = next_step(cluster, ds, state, target, wait=wait, deadline=deadline)
            results.append((ds, target, path, step, timed_out))
    descriptions, documents, codes = [], [], []
    for ds, target, path, step, timed_out in results:
        if step.outcome == Outcome.ADVANCED:
            state_files.write_state(path, step.state)
        code = EXIT_TIMEOUT if timed_out else _EXIT[step.outcome]
        codes.append(code)
        if output == "text":
            click.echo(format_summary(ds, target, step, str(path)), nl=False)
        else:
            documents.append(to_document(ds, target, step, str(path)))
        if timed_out:
            click.echo(f"timed out after {format_duration(timeout)} waiting for disaggregatedset/{ds.name} in "
                       f"{target}; nothing written", err=True)
        descriptions.append(format_pr_description(ds, target, step, str(path)))
    if output != "text":
        click.echo(to_yaml(documents[0] if len(documents) == 1 else {"items": documents}) if output == "yaml"
                   else to_json(documents[0] if len(documents) == 1 else {"items": documents}), nl=False)
    if pr_description:
        Path(pr_description).write_text("\n".join(descriptions), encoding="utf-8")
    return min(codes, key=_PRIORITY.index)
