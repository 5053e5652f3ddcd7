"""`kubectl disagg crds`: the project's CRDs, for `| kubectl apply --server-side -f -`."""

from __future__ import annotations

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.commands._help import HelpCommand, exit_section
from kubectl_disagg.exits import Exit
from kubectl_disagg.manifests.crds import crd_documents
from kubectl_disagg.manifests.writer import format_objects


@click.command(cls=HelpCommand, exit_codes=[exit_section(Exit)])
@_options.output("yaml", "json", default="yaml")
@_options.pass_options
def crds(options: _options.Options) -> None:
    """Print the DisaggregatedSet, DisaggregatedSetRoleScaler, RolloutPolicy and RolloutState CRDs.

    \b
    kubectl disagg crds | kubectl apply --server-side -f -
    kubectl explain rolloutpolicy.spec.waves             # once they are installed

    For a cluster that stores DisaggregatedSet objects (GitOps applies the set itself) without
    the upstream installation, where a RolloutPolicy paces a set's rollouts, or where Argo CD
    shows a git rollout's RolloutState. They keep their fields' descriptions, so `kubectl
    explain` answers for each kind.
    """
    click.echo(format_objects(crd_documents(), options.output), nl=False)
