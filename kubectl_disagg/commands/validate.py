"""`kubectl disagg validate`: check DisaggregatedSets offline, one verdict line per set."""

from __future__ import annotations

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.load import load_sets
from kubectl_disagg.errors import UserError
from kubectl_disagg.model import namespace_conflict, namespace_for


@click.command()
@_options.filenames()
@_options.namespace
def validate(filenames: tuple[str, ...], recursive: bool, namespace: str | None) -> None:
    """Check DisaggregatedSets against every rule the API server and controller apply.

    Problems are printed as FILE:LINE: field.path: message, all at once, with exit code 1.
    """
    loaded = load_sets(filenames, recursive)
    _options.print_warnings(loaded.warnings)
    conflicts = [problem for problem in (namespace_conflict(ds, namespace) for ds in loaded.sets) if problem]
    if conflicts:
        raise UserError(conflicts)
    lines = []
    for ds in loaded.sets:
        roles = ", ".join(f"{role.name}×{role.replicas}" for role in ds.roles)
        lines.append(f"{ds.source.file}: disaggregatedset/{ds.name} in {namespace_for(ds, namespace)}: valid "
                     f"(revision {ds.revision}, {ds.slices} slice{'s' if ds.slices != 1 else ''}, roles {roles})")
    if not lines:
        lines.append("no DisaggregatedSet found")
    click.echo("\n".join(lines))
