"""The shell of the template edits (`set image`, `rollout restart`): the edits are decided by
`core.api.template_edit`; here -f files are rewritten in place (`manifests.line_edit`), every file
checked before any is written and each written whole, all or none (`gitops.files.write_files`), and a
stored set is patched with one guarded JSON patch."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.core.api import template_edit
from kubectl_disagg.core.api.model import is_disaggregated_set
from kubectl_disagg.core.delivery.sets import set_from_object
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.reader import STDIN_NAME, decoded, parse_stream
from kubectl_disagg.manifests.source import JsonObject, dotted
from kubectl_disagg.gitops.files import Commit, write_files
from kubectl_disagg.manifests.writer import format_objects

if TYPE_CHECKING:
    from kubectl_disagg.inputs.tree import Tree
    from kubectl_disagg.kube.seam import SetPatches

# The edits of one set document: (edits, refusals), from the document's data.
Decide = Callable[[JsonObject], tuple[list[template_edit.Edit], list[template_edit.Refusal]]]


Done = str | Callable[[JsonObject], str]  # what was done to a set, for the report's line


def edit_files(options: _options.Options, decide: Decide, dry_run: str, done: Done,
               commit: Commit | None = None, tree: Tree | None = None) -> str | None:
    """Rewrite every DisaggregatedSet of the -f files (`tree`: as the command read them already);
    all problems at once, nothing written on any. With `commit` (`gitops.files.committing`:
    `rollout undo --gitops --commit`), the files rewritten are committed, its hash returned; when
    a write or the commit fails, the files written are put back as they were
    (`gitops.files.write_files`)."""
    if dry_run == "server":
        raise click.UsageError("--dry-run=server needs NAME (a stored set): -f files are rewritten here")
    from kubectl_disagg.inputs import tree as inputs

    if tree is None:
        tree = inputs.read_tree(options.filenames, inputs.Reading(options.recursive))
    problems: list[Problem | str] = []
    rewritten: dict[str, bytes] = {}
    edited_sets: list[JsonObject] = []
    for path in tree.chosen:
        data, sets, file_problems = rewrite_file(path, tree.files[path], decide)
        problems += file_problems
        if data is not None and path == STDIN_NAME and dry_run == "none":
            problems.append(Problem(path, 0, "", "stdin cannot be rewritten in place: give a file, or --dry-run"))
        elif data is not None and not file_problems:
            rewritten[path] = data
            edited_sets += sets
    if problems:
        raise UserError(problems)
    if not rewritten:
        raise UserError(["no DisaggregatedSet found in the input"])
    revision = write_files(rewritten, tree.files, commit) if dry_run == "none" else None
    report(edited_sets, options.output, done, dry_run)
    return revision


def rewrite_file(path: str, raw: bytes, decide: Decide) -> tuple[bytes | None, list[JsonObject], list[Problem | str]]:
    """One file's sets edited in place (`line_edit.rewrite`), in the file's own encoding (as
    kubectl reads it) and line endings: its new bytes (None: it holds no set), its sets as
    edited, and every problem (then nothing of it may be written)."""
    from kubectl_disagg.inputs import directory
    from kubectl_disagg.manifests import line_edit

    try:
        text, encoding = decoded(raw, path)
    except UserError as err:
        return None, [], [problem for problem in err.problems if isinstance(problem, Problem)]
    documents = parse_stream(text, path)
    problems: list[Problem | str] = []  # a set that does not load may say why without a line
    edits: dict[int, list[template_edit.Edit]] = {}
    for document in documents:
        if is_disaggregated_set(document.data):
            edits[document.index], refusals = decide(document.data)
            problems += [Problem(path, document.line(where), dotted(where), why) for where, why in refusals]
    if not edits:
        return None, [], problems
    expected = {doc.index: template_edit.applied(doc.data, edits[doc.index]) for doc in documents if doc.index in edits}
    new_text, line_problems = line_edit.rewrite(text, documents, edits, expected)
    if problems or line_problems:
        return raw, [], problems + line_problems
    new_documents = parse_stream(new_text, path)
    problems += directory.problems_of(new_documents)  # a valid set, as any -f input must be
    return encoding.encode(new_text), [doc.data for doc in new_documents if doc.index in edits], problems


def edit_stored(options: _options.Options, name: str, decide: Decide, dry_run: str, done: Done,
                cluster: SetPatches | None = None) -> None:
    """Patch the stored set NAME (a JSON patch guarded by its resourceVersion), through
    `cluster` when the caller has a session open already."""
    from kubectl_disagg.commands import _session

    if cluster is None:
        with _session.session(options) as cluster:
            return edit_stored(options, name, decide, dry_run, done, cluster)
    namespace = options.namespace or cluster.default_namespace
    stored = cluster.get_set(name, namespace)
    edits, refusals = decide(stored)
    where = f"disaggregatedset/{name} in {namespace}"
    if refusals:
        raise UserError([Problem(where, 0, dotted(path), why) for path, why in refusals])
    edited = template_edit.applied(stored, edits)
    set_from_object(edited)  # refused here, with every problem, before anything is sent
    if dry_run != "client":
        cluster.patch_set(name, namespace, template_edit.json_patch(stored, edits), dry_run=dry_run == "server")
    report([edited], options.output, done, dry_run)


def report(sets: list[JsonObject], output: str, done: Done, dry_run: str) -> None:
    if output in ("yaml", "json"):
        sys.stdout.write(format_objects(sets, output))
        return
    suffix = {"client": " (dry run)", "server": " (server dry run)"}.get(dry_run, "")
    for data in sets:  # as kubectl: `-o name` the names alone, else what was done to each
        name = f"disaggregatedset/{data['metadata']['name']}"
        said = done(data) if callable(done) else done
        click.echo(name if output == "name" else f"{name} {said}{suffix}")
