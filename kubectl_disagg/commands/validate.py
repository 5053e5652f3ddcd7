"""`kubectl disagg validate`: check DisaggregatedSets offline, one verdict line per set;
with --server, also ask the API server about every rendered object (a dry run, nothing stored)."""

from __future__ import annotations

from collections.abc import Sequence

import click

from kubectl_disagg.core.api import naming
from kubectl_disagg.commands import _options, _session
from kubectl_disagg.core.api.model import DisaggregatedSet, namespace_for
from kubectl_disagg.core.delivery.policy import resolve_waves
from kubectl_disagg.core.controller.render import render_set
from kubectl_disagg.core.controller.server_refusals import refusal_problems
from kubectl_disagg.core.controller.statefulsets import statefulsets
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.commands._help import HelpCommand, exit_section
from kubectl_disagg.exits import Exit
from kubectl_disagg.kube.client import dry_run_apply


@click.command(cls=HelpCommand, exit_codes=[exit_section(Exit)])
@_options.filenames()
@_options.namespace
@click.option("--server", is_flag=True,
              help="Also send every rendered object, and the StatefulSets the LWS controller makes of "
                   "each LeaderWorkerSet, to the API server as server-side apply dry runs "
                   "(dryRun=All, strict field validation); nothing is stored.")
@_session.cluster
@_options.pass_options
def validate(options: _options.Options, server: bool) -> None:
    """Check DisaggregatedSets against every rule the API server and controller apply.

    \b
    kubectl disagg validate -f ds.yaml
    kubectl disagg validate -f apps/ -R --server   # and the API server's dry run

    Problems are printed as FILE:LINE: field.path: message, all at once, with exit code 1.
    """
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.inputs import tree as inputs

    namespace = options.namespace
    loaded = directories.read(options.filenames, inputs.Reading(options.recursive), namespace=namespace)
    _options.print_warnings(loaded.warnings)
    sets = [entry.ds for entry in loaded.sets]
    accepted = _dry_run(sets, options) if server and sets else [(namespace_for(ds, namespace), 0, 0) for ds in sets]
    lines = []
    for ds, where in zip(sets, accepted):
        roles = ", ".join(f"{role.name}×{role.replicas}" for role in ds.roles)
        verdict = (f"; {where[1]} rendered objects accepted by the API server (dry run), with the {where[2]} "
                   "StatefulSets the LWS controller makes of them") if server else ""
        lines.append(f"{ds.source.file}: disaggregatedset/{ds.name} in {where[0]}: valid "
                     f"(revision {ds.revision}, {ds.slices} slice{'s' if ds.slices != 1 else ''}, roles {roles})"
                     f"{verdict}")
        if ds.policy is not None:
            assert ds.policy.source is not None  # a policy read from a file, as every set here is
            waves = len(resolve_waves(ds.policy, ds.slices))
            lines.append(f"{ds.policy.source.file}: rolloutpolicy/{ds.policy.name}: valid (paces "
                         f"disaggregatedset/{ds.name}: {waves} wave{'s' if waves != 1 else ''})")
    if not lines:
        lines.append("no DisaggregatedSet found")
    click.echo("\n".join(lines))


def _dry_run(sets: Sequence[DisaggregatedSet], options: _options.Options) -> list[tuple[str, int, int]]:
    """Each set's (namespace, objects accepted, StatefulSets accepted), in order; every refusal of
    every set raised at once."""
    problems: list[Problem | str] = []
    accepted = []
    with _session.session(options) as cluster:
        for ds in sets:
            placed = namespace_for(ds, options.namespace, cluster.default_namespace)
            objects = list(render_set(ds, placed))
            # Each LWS template also as the StatefulSet the LWS controller makes of it: only
            # there does the server's pod validation judge it.
            made = [sts for obj in objects if obj["kind"] == naming.LWS_KIND for sts in statefulsets(obj)]
            for obj in objects + made:
                refusal = dry_run_apply(cluster.client, obj)
                if refusal is not None:
                    problems.extend(refusal_problems(ds, obj, refusal))
            accepted.append((placed, len(objects), len(made)))
    if problems:
        raise UserError(problems)
    return accepted
