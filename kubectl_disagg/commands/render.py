"""`kubectl disagg render`: the LWS and Services a DisaggregatedSet stands for."""

from __future__ import annotations

import sys

import click

from kubectl_disagg.commands import _options, _services
from kubectl_disagg.commands._help import HelpCommand, exit_section
from kubectl_disagg.core.controller.render import without_revision_services
from kubectl_disagg.exits import Exit
from kubectl_disagg.errors import Problem
from kubectl_disagg.inputs import directory, tree
from kubectl_disagg.manifests.source import JsonObject
from kubectl_disagg.manifests.writer import format_objects


@click.command(cls=HelpCommand, exit_codes=[exit_section(Exit)])
@_options.filenames()
@_options.namespace
@_options.output("yaml", "json", default="yaml")
@click.option("--state", metavar="FILE", default=None,
              help="The set's rollout state (default: disagg-rollout-state.yaml beside the set's file, if there).")
@click.option("--require-state", is_flag=True,
              help="Refuse a set without a rollout state instead of rendering its steady state.")
@_services.revision_services
@_options.pass_options
def render(options: _options.Options, state: str | None, require_state: bool) -> None:
    """Expand DisaggregatedSets into LeaderWorkerSets and headless Services.

    \b
    kubectl disagg render -f ds.yaml | kubectl apply --server-side -f -
    kubectl disagg render -f apps/ -R -o json       # a GitOps directory, whole

    Other documents pass through unchanged, so a GitOps directory renders whole.

    A set with a rollout state (a git-driven rollout, see docs/gitops.md) renders as far as
    the state has rolled it: every deployed revision at its recorded replicas.
    """
    objects, warnings = render_files(options, state, require_state)
    if not options.revision_services:  # a set's own annotation is render's (core/controller/render.py)
        objects = without_revision_services(objects)
    _options.print_warnings(warnings)
    # Nothing to render is still a result: JSON gets kubectl's empty List, YAML an empty stream.
    sys.stdout.write(format_objects(objects, options.output))


def render_files(options: _options.Options, state: str | None,
                 require_state: bool) -> tuple[list[JsonObject], tuple[Problem, ...]]:
    """The -f inputs read once and rendered: by gitops/ where they hold a rollout state (or one
    is required), else below it (`inputs.directory`: a plain set never loads the git floor)."""
    reading = tree.Reading(options.recursive, explicit=state)
    read = tree.read_tree(options.filenames, reading)
    if require_state or directory.holds_states(read, reading):
        from kubectl_disagg.gitops.directory import render_tree
        return render_tree(read, reading, options.namespace, require_state)
    return directory.render_steady(read, reading, options.namespace)
