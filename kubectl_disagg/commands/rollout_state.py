"""`kubectl disagg rollout state init -f DIR`: the first rollout state of sets driven through git.

Offline: reads the sets, writes the state of each beside it (docs/gitops.md). For sets with
nothing deployed yet; a set already live is adopted by `rollout step --gitops` instead.
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _inputs, _options
from kubectl_disagg.commands._help import HelpCommand, exit_section
from kubectl_disagg.exits import Exit


@click.group()
def state() -> None:
    """The rollout state of a git-driven rollout (docs/gitops.md)."""


@state.command(cls=HelpCommand, exit_codes=[exit_section(Exit)])
@_options.filenames()
@_options.namespace
@click.option("--state", "state_file", metavar="FILE", default=None,
              help="The state file (default: disagg-rollout-state.yaml beside each set's file; "
                   "the Argo CD plugin's rollout-state parameter names the same file).")
@_options.pass_options
def init(options: _options.Options, state_file: str | None) -> None:
    """Write the first rollout state of each set: its revision and replicas in every slice.

    Run it before the first commit that Argo CD deploys, and commit the state with the set:

    \b
    kubectl disagg rollout state init -f apps/llama/
    git add apps/llama/ && git commit -m "llama: deploy through git"

    Needs no cluster. Refuses (exit 1, nothing written) a set that has a state already, and a
    set without a namespace unless -n gives it. A set already running is adopted by
    `kubectl disagg rollout step --gitops` instead.
    """
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.inputs import tree as inputs
    from kubectl_disagg.gitops import files
    from kubectl_disagg.gitops.init import initial_states

    reading = inputs.Reading(options.recursive, explicit=state_file)
    tree, _ = _inputs.tree_of_sets(options.filenames, reading, options.namespace)
    by_file = initial_states(directories.load(tree, reading, namespace=options.namespace, fallback=""))
    held = inputs.contents(by_file)
    for path, states in by_file.items():
        files.write_state(path, held[path], *states)
        for written in states:
            assert written.stepped_for is not None  # a first state records what it is for
            click.echo(f"{path}: disaggregatedset/{written.name} ({written.namespace}): revision "
                       f"{written.stepped_for.revision}, {written.stepped_for.slices} slice(s)")
