"""--no-revision-services, the one flag `render`, `rollout step` and `rollout status` share
(offline: `render` loads it, and nothing here reaches the cluster)."""

from __future__ import annotations

from dataclasses import replace

import click

from kubectl_disagg.commands._options import F, Options
from kubectl_disagg.core.api.model import DisaggregatedSet


def revision_services(func: F) -> F:
    """--no-revision-services of `render`, `rollout step` and `rollout status`: one choice, so
    what render left out a step never creates and status never waits for."""
    def keep(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        ctx.ensure_object(Options).revision_services = not value
        return value

    return click.option("--no-revision-services", is_flag=True, expose_value=False, callback=keep,
                        help="Leave out the per-revision Services (-prv). As each set's annotation "
                             "kubectl-disagg/revision-services: \"false\" does for that set (render, step and "
                             "status read it alike): for clusters where nothing resolves them (lws#1078).")(func)


def as_asked(ds: DisaggregatedSet, options: Options) -> DisaggregatedSet:
    """`ds` without its per-revision Services when --no-revision-services says so (else as its
    annotation says)."""
    return ds if options.revision_services else replace(ds, revision_services=False)
