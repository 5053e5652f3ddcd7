"""`kubectl disagg rollout history`: the revisions a set has run.

Flags → the store (git's with --gitops, else the cluster's) → `rollout.history.histories`
(each set's entries as its store records them) → `views.history`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from kubectl_disagg.commands import _inputs, _options, _session
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.commands._modes import GITOPS_INPUT, Command, Mode
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import Exit

if TYPE_CHECKING:
    from kubectl_disagg.inputs.tree import Tree
    from kubectl_disagg.kube.session import Session
    from kubectl_disagg.rollout.store import PositionStore

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
    from kubectl_disagg.rollout.history import histories
    from kubectl_disagg.views.history import format_histories

    with store_of(options, name, gitops) as (store, _, _):
        shown = histories(store, revision)
    click.echo(format_histories([(h.ds.name, h.namespace, h.entries, h.shown) for h in shown], options.output),
               nl=False)


@contextlib.contextmanager
def store_of(options: _options.Options, name: str | None, gitops: bool, verb: str = "history"
             ) -> Iterator[tuple[PositionStore, Tree | None, Session | None]]:
    """The store whose recorded history `rollout history` and `rollout undo` read, the -f inputs
    as read, once (what an undo rewrites), and for NAME the session (what an undo patches; the
    others None): through git (--gitops -f DIR), or the cluster's RolloutState objects (NAME, or
    -f), over a session open while the store is used. -f sets driven through git (their rollout
    state beside them) are refused without --gitops, as `rollout step` refuses them: their
    history is git's, and `verb`'s refusal names the command that reads it."""
    _options.check_name_or_files(name, options)
    if gitops:
        store = _inputs.git_store(options, states=False)  # the history is git's log, not the state
        yield store, store.tree, None
        return
    from kubectl_disagg.rollout.store import ClusterStore

    tree, sets = None, None
    if options.filenames:
        from kubectl_disagg.gitops.files import git_driven
        from kubectl_disagg.views.history import driven_through_git

        tree, sets = _inputs.sets_and_tree(options)
        driven = [driven_through_git(ds.name, path, _options.invocation(options, None).command(verb, gitops=True))
                  for ds in sets if (path := git_driven(ds, tree.files))]
        if driven:
            raise UserError(driven)
    with _session.session(options) as cluster:
        yield (ClusterStore(cluster, sets or [_session.stored_set(cluster, str(name), options.namespace)],
                            options.namespace), tree, None if sets else cluster)
