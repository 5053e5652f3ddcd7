"""`kubectl disagg set image`: change the images of a set's role templates, as `kubectl set image`
does a Deployment's (design §2.1)."""

from __future__ import annotations

import click

from kubectl_disagg.commands import _connection, _options
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.exits import Exit
from kubectl_disagg.manifests.source import JsonObject


@click.group("set")
def set_() -> None:
    """Change fields of a DisaggregatedSet's role templates (as kubectl set does)."""


@set_.command("image", cls=_options.DryRunCommand, exit_codes=[exit_section(Exit)])
@click.argument("name_or_images", nargs=-1, required=True, metavar="(NAME | -f FILE) ROLE=IMAGE...")
@_options.filenames(required=False)
@_options.namespace
@_connection.cluster_for_name
@_options.output("yaml", "json", "name", default=None)
@_options.dry_run("client: print the result and change nothing; server: also ask the API server (NAME only).")
@_options.pass_options
def image(options: _options.Options, name_or_images: tuple[str, ...], dry_run: str) -> None:
    """Set the images of role templates, in -f files (rewritten in place) or a stored set.

    \b
    kubectl disagg set image -f ds.yaml decode=registry.example.com/llm:1.5
    kubectl disagg set image my-llm -n serving prefill/leader=llm:1.5
    kubectl disagg set image -f ds.yaml '*=llm:1.5' --dry-run -o yaml

    ROLE=IMAGE sets every container of the role's leader and worker templates (not its init
    containers); ROLE/CONTAINER=IMAGE the containers and init containers named CONTAINER in
    either template; * stands for every role or container. The change is a new revision of the
    set, which covers every role: `rollout step` rolls it out as any template change, replacing
    the groups of every role, not only of the roles whose image changed.

    A -f file is rewritten in place: only the image lines change (a list or mapping written in
    flow style, `{...}`, is rewritten whole in block style), comments, order, line endings,
    encoding and mode stay; the
    result is read again and must hold the new images exactly, else nothing is written. Every
    problem is listed at once as FILE:LINE; no file is written unless all can be. NAME patches
    the stored set, guarded by its resourceVersion.
    """
    from kubectl_disagg.commands import _template_edit
    from kubectl_disagg.core.api import template_edit

    name, images = _split(name_or_images, options)
    assignments, problems = template_edit.parse_assignments(images)
    if problems or not assignments:
        raise click.UsageError("; ".join(problems) or "give at least one ROLE=IMAGE")

    def decide(data: JsonObject) -> tuple[list[template_edit.Edit], list[template_edit.Refusal]]:
        return template_edit.image_edits(data, assignments)

    if name is None:
        _template_edit.edit_files(options, decide, dry_run, "image updated")
    else:
        _template_edit.edit_stored(options, name, decide, dry_run, "image updated")


def _split(args: tuple[str, ...], options: _options.Options) -> tuple[str | None, tuple[str, ...]]:
    """NAME, then the assignments (kubectl's order); with -f, assignments only."""
    if args and "=" not in args[0]:
        if options.filenames:
            raise click.UsageError("give either NAME (a DisaggregatedSet stored in the cluster) or -f FILE")
        return args[0], args[1:]
    if not options.filenames:
        raise click.UsageError("give NAME (a DisaggregatedSet stored in the cluster) or -f FILE")
    return None, args
