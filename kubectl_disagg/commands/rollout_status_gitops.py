"""`kubectl disagg rollout status --gitops -f DIR`: where a git-driven rollout stands and the
next action (docs/gitops.md). Flags → `gitops.watch.looks` (with -w, until the next action
changes) → each look printed when it differs from the last.

The cluster is only read, and only LeaderWorkerSets: get, list and watch.
"""

from __future__ import annotations

import click

from kubectl_disagg.gitops.watch import exit_code, looks
from kubectl_disagg.views.gitops_status import format_looks


def run(sets, cluster, namespace: str | None, output: str, watch: bool, deadline: float | None) -> int:

    printed, seen, first = None, [], None
    for seen in looks(cluster, sets, namespace, watch=watch, deadline=deadline):
        first = first or [s.status.next_action for s in seen]
        text = format_looks(seen, output)
        if text != printed:
            click.echo(("---\n" if printed is not None and output == "yaml" else "") + text, nl=False)
            printed = text
    timed_out = watch and [s.status.next_action for s in seen] == first
    if timed_out:
        click.echo("timed out waiting for the next action to change", err=True)
    return exit_code([s.status for s in seen], timed_out)
