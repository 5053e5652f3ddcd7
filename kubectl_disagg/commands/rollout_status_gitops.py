"""`kubectl disagg rollout status --gitops -f DIR`: where a git-driven rollout stands and the
next action (docs/gitops.md). Flags → `gitops.watch.looks` (with -w, until the next action
changes or every rollout is complete, or until what --for names) → each look printed when it
differs from the last.

The cluster is only read, and only LeaderWorkerSets: get, list and watch.
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _inputs, _session
from kubectl_disagg.commands._options import Options
from kubectl_disagg.core.status import Until
from kubectl_disagg.exits import GitopsExit
from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.gitops.watch import exit_code, looks, settled
from kubectl_disagg.views.gitops_status import format_looks
from kubectl_disagg.wait import Deadline


def run(options: Options, watch: bool, timeout: float | None, until: Until | None = None) -> GitopsExit:
    reading = inputs.Reading(options.recursive)
    first_read = [_inputs.tree_of_sets(options.filenames, reading, options.namespace)[0]]  # a set before the cluster
    deadline = Deadline.after(timeout).at
    with _session.session(options) as cluster:

        def read() -> directories.Directory:  # the first look loads what was read; each later look reads
            tree = first_read.pop() if first_read else inputs.read_tree(options.filenames, reading)  # again: a pull
            return directories.load(tree, reading, namespace=options.namespace,  # may have moved the state
                                    fallback=cluster.default_namespace, explicit_must_hold=True)

        printed, seen, first = None, [], None
        for seen in looks(cluster, read, watch=watch, deadline=deadline, until=until):
            first = first or [s.status.next_action for s in seen]
            text = format_looks(seen, options.output)
            if text != printed:
                click.echo(("---\n" if printed is not None and options.output == "yaml" else "") + text, nl=False)
                printed = text
    timed_out = watch and not settled(seen, first, until)
    if until is not None:
        waited = "every set to complete its rollout" if until == Until.COMPLETE else "every set to become Available"
    else:
        waited = "the next action to change"
    if timed_out:
        click.echo(f"timed out waiting for {waited}", err=True)
    return exit_code([s.status for s in seen], timed_out)
