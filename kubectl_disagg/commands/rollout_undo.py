"""`kubectl disagg rollout undo`: write an earlier revision's role templates back into the set.

Flags → the store (`rollout history`'s) → `rollout.history.undo_targets` picks each set's revision
from its recorded history → `core.delivery.undo` decides the edits → `_template_edit` writes them: the -f
files as read rewritten in place, a stored set patched, or with --gitops the set's file rewritten
and (--commit) committed as a rollback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

from kubectl_disagg.commands import _options, _session
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.commands._modes import GITOPS_INPUT, Mode
from kubectl_disagg.exits import Exit

if TYPE_CHECKING:
    from kubectl_disagg.core.delivery.history import RevisionEntry
    from kubectl_disagg.core.api.template_edit import Edit, Refusal
    from kubectl_disagg.gitops.files import Commit
    from kubectl_disagg.manifests.source import JsonObject

MODES = [Mode("gitops", needs=GITOPS_INPUT, refuses=("name",), only=("commit",))]


@click.command(cls=_options.DryRunCommand, modes=MODES, exit_codes=[exit_section(Exit)])
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_session.cluster
@_options.output("yaml", "json", "name", default=None)
@click.option("--to-revision", "to_revision", metavar="REVISION", default=None,
              help="The revision to go back to (`rollout history` lists them); default: the newest one "
                   "before the set's own that was not aborted.")
@_options.dry_run("client: print the result and change nothing; server: also ask the API server (NAME only).")
@click.option("--gitops", is_flag=True, help="The set is git-driven (docs/gitops.md): its history is its "
              "files' git log, and the set's file is rewritten.")
@click.option("--commit", is_flag=True, help="With --gitops: commit the rewritten file, titled as a rollback "
              "(the pull request of the undo); refuses a working tree with changes.")
@_options.pass_options
def undo(options: _options.Options, name: str | None, to_revision: str | None, dry_run: str, gitops: bool,
         commit: bool) -> None:
    """Go back to an earlier revision: write its role templates back into the set.

    \b
    kubectl disagg rollout undo my-llm -n serving
    kubectl disagg rollout undo -f ds.yaml --to-revision 7b04d5c1 --dry-run
    kubectl disagg rollout undo --gitops -f apps/llama/ --commit

    The templates (each role's leaderWorkerTemplate and groupIdentity) of the revision are
    written back; replicas, slices, budgets and the RolloutPolicy stay as they are. The set
    then names that revision again, and the rollout back to it is a template change like any
    other: `rollout step` (or Argo CD, through git) takes it, paced by the set's RolloutPolicy,
    and `rollout history` marks it as a rollback.

    NAME patches the stored set (guarded by its resourceVersion). -f rewrites the files in
    place, only what differs: a text value on its line, a key the revision lacks removed, a
    list of another length written whole at its key; other lines and comments stay. --gitops
    -f DIR reads the history from git and, with --commit, commits the file: one reviewed
    commit, titled as a rollback.
    """
    from kubectl_disagg.commands import _template_edit
    from kubectl_disagg.commands.rollout_history import store_of
    from kubectl_disagg.core.delivery import undo as undoing
    from kubectl_disagg.rollout.history import undo_targets
    from kubectl_disagg.views.history import undo_next, undo_refusal

    def decide(data: JsonObject) -> tuple[list[Edit], list[Refusal]]:
        target = targets.get(str((data.get("metadata") or {}).get("name")))
        if target is None or target.templates is None:  # (core/delivery/undo.py `target_of` picks one with templates)
            return [], []
        edits, refusals = undoing.undo_edits(data, target.templates, whole=name is not None)
        return edits, [(path, undo_refusal(why)) for path, why in refusals]

    def done(data: JsonObject) -> str:  # the revision the set now names, which the edits were checked to make
        return f"rolled back to revision {undoing.revision_of(data)}"

    with store_of(options, name, gitops, verb="undo") as (store, tree, cluster):
        targets = undo_targets(store, to_revision)
        if name is not None and cluster is not None:  # NAME, in the one session: the history read, then the set patched
            _template_edit.edit_stored(options, name, decide, dry_run, done, cluster)
        committing = _committing(targets, [ds.source.file for ds, _ in store.sets()]) \
            if tree is not None and gitops and commit and dry_run == "none" else None
    if tree is not None:
        sha = _template_edit.edit_files(options, decide, dry_run, done, committing, tree)
        if sha is not None:
            click.echo(f"committed {sha[:12]}", err=True)
    if dry_run == "none" and not options.output:
        click.echo(undo_next(_options.invocation(options, name, gitops), gitops and not commit), err=True)


def _committing(targets: Mapping[str, RevisionEntry], files: list[str]) -> Commit:
    """The commit of the rollback: the repository of the sets' `files`, checked before anything is
    written (a tree with any change refused, as `rollout step --gitops --commit` refuses one), one
    commit of the files rewritten titled as the rollback (`views.history.undo_message`), through
    the one writer (`gitops.files.write_files`): a commit that cannot be made puts every file back."""
    from kubectl_disagg.gitops.files import committing
    from kubectl_disagg.gitops.git import repository_for
    from kubectl_disagg.views.history import undo_message

    return committing(repository_for(files, None, clean=True), undo_message(targets))
