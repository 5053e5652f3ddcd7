"""`kubectl disagg rollout history`: the revisions a set has run.

Flags → the entries of each set (`gitops.history.set_history` through git; `rollout.history.
cluster_history` from its RolloutState object) → `views.history`.
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _inputs, _options, _session
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.commands._modes import GITOPS_INPUT, Command, Mode
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import Exit

MODES = [Mode("gitops", needs=GITOPS_INPUT, refuses=("name",))]


@click.command(cls=Command, modes=MODES, exit_codes=[exit_section(Exit)])
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_session.cluster
@_options.output("text", "wide", "yaml", "json", default="text")
@click.option("--revision", metavar="REVISION", default=None,
              help="Show this revision whole: who started it and when, how it ended, its template's diff "
                   "(-o yaml: its templates too).")
@click.option("--gitops", is_flag=True, help="The set is git-driven (docs/gitops.md): its history is its "
              "files' git log.")
@_options.pass_options
def history(options: _options.Options, name: str | None, revision: str | None, gitops: bool) -> None:
    """Show the revisions a set has run, newest first: who started each and when, how its
    rollout ended (complete, aborted, replaced) and what changed in the template.

    \b
    kubectl disagg rollout history my-llm -n serving
    kubectl disagg rollout history -f ds.yaml --revision 7b04d5c1 -o yaml
    kubectl disagg rollout history --gitops -f apps/llama/

    In the cluster (NAME, or -f for a set deployed from a file) the history is kept in the
    set's RolloutState object by `rollout step` and the verbs: the last 10 revisions (its
    revisionHistoryLimit). Through git (--gitops -f DIR) it is the set's and its state file's
    commits on HEAD: the commit that changed the revision started its rollout (its author, its
    date), the state's commits say how it ended. `rollout undo` goes back to one of them.
    """
    from kubectl_disagg.views.history import format_histories

    shown = []
    for ds, namespace, entries in set_histories(options, name, gitops):
        found = [e for e in entries if e.revision == revision]
        if revision is not None and not found:
            known = ", ".join(e.revision for e in reversed(entries)) or "none"
            raise UserError([f"disaggregatedset/{ds.name} in {namespace}: no revision {revision} in its "
                             f"history (revisions: {known})"])
        shown.append((ds.name, namespace, entries, found[-1] if found else None))
    click.echo(format_histories(shown, options.output), nl=False)


def set_histories(options: _options.Options, name: str | None, gitops: bool, cluster=None,
                  verb: str = "history") -> list:
    """(set, namespace, its entries oldest first) for each set given: through git (--gitops -f
    DIR), or from the cluster's RolloutState objects (NAME, or -f), read through `cluster` when
    the caller has a session open already. -f sets driven through git (their rollout state
    beside them) are refused without --gitops, as `rollout step` refuses them: their history
    is git's, and `verb`'s refusal names the command that reads it."""
    _options.check_name_or_files(name, options)
    if gitops:
        from kubectl_disagg.gitops.history import set_history

        _, _, directory = _inputs.gitops_inputs(options)
        return [(entry.ds, entry.namespace, set_history(entry.ds, entry.namespace, entry.state_path))
                for entry in directory.sets]
    from kubectl_disagg.core.api.model import namespace_for
    from kubectl_disagg.rollout.history import cluster_history

    sets = None
    if options.filenames:
        from kubectl_disagg.gitops.files import git_driven
        from kubectl_disagg.views.history import driven_through_git

        tree, sets = _inputs.sets_and_tree(options)
        driven = [driven_through_git(ds.name, path, _options.invocation(options, None).command(verb, gitops=True))
                  for ds in sets if (path := git_driven(ds, tree.files))]
        if driven:
            raise UserError(driven)

    def read(cluster) -> list:
        found = sets or [_session.stored_set(cluster, name, options.namespace)]
        return [(ds, namespace, cluster_history(cluster, ds.name, namespace))
                for ds in found for namespace in [namespace_for(ds, options.namespace, cluster.default_namespace)]]

    if cluster is not None:
        return read(cluster)
    with _session.session(options) as cluster:
        return read(cluster)
