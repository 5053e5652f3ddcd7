"""`kubectl disagg rollout restart`: the restart annotation on role templates, as
`kubectl rollout restart` writes it on a Deployment's (design §2.1)."""

from __future__ import annotations

import click

from kubectl_disagg.commands import _connection, _options
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.exits import Exit
from kubectl_disagg.manifests.source import JsonObject


@click.command(cls=_options.DryRunCommand, exit_codes=[exit_section(Exit)])
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@click.option("--role", "roles", multiple=True, metavar="ROLE",
              help="Annotate this role's pod templates (repeatable; default every role): the set's revision covers "
                   "every role, so the rollout replaces every role's groups all the same.")
@_connection.cluster_for_name
@_options.output("yaml", "json", "name", default=None)
@_options.dry_run("client: print the result and change nothing; server: also ask the API server (NAME only).")
@_options.pass_options
def restart(options: _options.Options, name: str | None, roles: tuple[str, ...], dry_run: str) -> None:
    """Restart a set's pods: a new revision that changes only an annotation.

    \b
    kubectl disagg rollout restart my-llm -n serving
    kubectl disagg rollout restart -f ds.yaml --role decode   # commit the file
    kubectl disagg rollout step my-llm -n serving --until-complete

    Writes kubectl.kubernetes.io/restartedAt (now, RFC 3339 in UTC) on the leader and worker pod
    templates of each role named by --role (every role without it). The templates change, so the
    set has a new revision, and a set's revision covers every role's template (as the upstream
    controller's does): the next `rollout step` replaces the groups of every role, not only of
    those annotated, with the coordinated arithmetic and the set's RolloutPolicy (waves, gates),
    as for any template change; nothing is deleted here.

    -f rewrites the file in place (only the annotation's lines; comments, order, line endings,
    encoding and mode kept; nothing written on any problem); NAME patches the stored set, guarded by its resourceVersion.
    """
    from kubectl_disagg.commands import _template_edit
    from kubectl_disagg.core.api import template_edit
    from kubectl_disagg.views.template_edit import restarted

    _options.check_name_or_files(name, options)
    at = options.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")

    def decide(data: JsonObject) -> tuple[list[template_edit.Edit], list[template_edit.Refusal]]:
        return template_edit.restart_edits(data, roles, at)

    def done(data: JsonObject) -> str:
        return restarted(data, roles)

    if name is None:
        _template_edit.edit_files(options, decide, dry_run, done)
    else:
        _template_edit.edit_stored(options, name, decide, dry_run, done)
