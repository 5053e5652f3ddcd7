"""`kubectl disagg rollout undo`: write an earlier revision's role templates back into the set.

Flags → the set's history (`rollout history`'s) → `core.delivery.undo` picks the revision and decides the
edits → `_template_edit` writes them: -f files rewritten in place, a stored set patched, or with
--gitops the set's file rewritten and (--commit) committed as a rollback.
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _options, _session
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.commands._modes import GITOPS_INPUT, Mode
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import Exit

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
    from kubectl_disagg.commands.rollout_history import set_histories
    from kubectl_disagg.core.delivery import undo as undoing

    targets = {}

    def decide(data):
        target = targets.get((data.get("metadata") or {}).get("name"))
        if target is None:
            return [], []
        return undoing.undo_edits(data, target.templates, whole=name is not None)

    def done(data) -> str:  # the revision the set now names, which the edits were checked to make
        return f"rolled back to revision {undoing.revision_of(data)}"

    if name is not None:  # one session: the history read, then the set patched
        with _session.session(options) as cluster:
            targets.update(_targets(set_histories(options, name, gitops, cluster), to_revision))
            _template_edit.edit_stored(options, name, decide, dry_run, done, cluster)
    else:
        histories = set_histories(options, name, gitops, verb="undo")
        targets.update(_targets(histories, to_revision))
        written = _committed(targets, [ds.source.file for ds, _, _ in histories]) \
            if gitops and commit and dry_run == "none" else None
        _template_edit.edit_files(options, decide, dry_run, done, written)
    if dry_run == "none" and options.output is None:
        how = name or ("--gitops " if gitops else "") + "-f " + " ".join(options.filenames)
        click.echo(f"next: the rollout back is paced like any other: kubectl disagg rollout step {how}"
                   + ("" if not gitops or commit else " (commit the file first)"), err=True)


def _targets(histories: list, to_revision: str | None) -> dict:
    """Each set's revision to go back to, by name; every set that has none refused at once."""
    from kubectl_disagg.core.delivery import undo as undoing

    targets, problems = {}, []
    for ds, namespace, entries in histories:
        target = undoing.target_of(entries, ds.revision, to_revision)
        if isinstance(target, str):
            problems.append(f"disaggregatedset/{ds.name} in {namespace}: {target}")
        else:
            targets[ds.name] = target
    if problems:
        raise UserError(problems)
    return targets


def _committed(targets, files: list[str]):
    """The repository of the sets' `files`, checked before anything is written (a tree with any
    change refused, as `rollout step --gitops --commit` refuses one); after the files are
    written, one commit of them, titled as the rollback."""
    from kubectl_disagg.gitops.git import repository_for

    repository = repository_for(files, None, clean=True)

    def commit(paths: list[str]) -> None:
        from kubectl_disagg.gitops.history import UNDO_TRAILER
        from kubectl_disagg.views.gitops_report import commit_subject

        names = sorted(targets)
        title = (f"Roll back {names[0]} to revision {targets[names[0]].revision}" if len(names) == 1
                 else f"Roll back {len(names)} sets to earlier revisions")
        body = [f"- {name}: the templates of revision {targets[name].revision} written back (first "
                f"started {targets[name].started.date} by {targets[name].started.author}"
                + (f", commit {targets[name].started.sha[:12]}" if targets[name].started.sha else "") + ")"
                for name in names]
        trailers = [f"{UNDO_TRAILER}: {name} {targets[name].revision}" for name in names]
        subject, whole = commit_subject(title)  # a set's long name: the whole title heads the body
        message = "\n".join([subject, "", *([whole, ""] if whole else []), "rollout undo: each set's role templates "
                             "as they were at an earlier revision. Merging this starts the rollout back, paced "
                             "by the set's RolloutPolicy like any template change.", "", *body, "", *trailers]) + "\n"
        sha = repository.commit(paths, message, None)
        click.echo(f"committed {sha[:12]}", err=True)
    return commit
