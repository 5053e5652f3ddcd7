"""`kubectl disagg handover`: hand a running set to the controller, or back.

Flags → `handover.prepare` (read, plan) → print → `handover.carry_out` (the writes) → print.
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _options, _session
from kubectl_disagg.commands._help import HelpCommand, exit_section
from kubectl_disagg.exits import HandoverExit
from kubectl_disagg.rollout.handover import TO_CONTROLLER, TO_PLUGIN, carry_out, prepare


@click.command(cls=HelpCommand, exit_codes=[exit_section(HandoverExit)])
@click.argument("direction", type=click.Choice([TO_CONTROLLER, TO_PLUGIN]))
@click.argument("name")
@_options.namespace
@_session.cluster
@click.option("--dry-run", is_flag=True, help="Print what would change, change nothing.")
@_options.timeout("60s", "to-plugin: how long to wait for the garbage collector to orphan the set's objects (0: no limit).")
@_options.pass_options
def handover(options: _options.Options, direction: str, name: str, dry_run: bool,
             timeout: float | None) -> HandoverExit:
    """Hand the stored DisaggregatedSet NAME's running objects to the controller, or back.

    \b
    kubectl disagg handover to-controller my-llm -n serving --dry-run
    kubectl disagg handover to-controller my-llm -n serving
    kubectl disagg handover to-plugin my-llm -n serving --dry-run
    kubectl disagg handover to-plugin my-llm -n serving

    Names, labels and pod templates are already identical on both sides: only ownership
    changes, so no pod restarts. to-controller adds the ownerReference the controller
    stamps on its objects (the stored set as controller) to every LeaderWorkerSet and
    Service. to-plugin, with the controller running, labels them managed-by kubectl-disagg
    and deletes the stored set with propagationPolicy=Orphan: the garbage collector removes
    the set's ownerReference from each object, which stays. Step the set from its files
    after that (rollout step -f); stored again, the controller takes it back. Every object
    must be adoptable, or nothing is changed.
    """
    with _session.executor(options) as cluster:
        namespace = options.namespace or cluster.default_namespace
        stored, plan = prepare(cluster, direction, name, namespace)
        if plan.refusal:
            click.echo(f"refusing to hand disaggregatedset/{name} {direction}; nothing was changed:", err=True)
            for reason in plan.refusal:
                click.echo(f"  {reason}", err=True)
            return HandoverExit.REFUSED
        for change in plan.changes:
            click.echo(("would " if dry_run else "") + change.summary)
        for subject in plan.unchanged:
            click.echo(f"{subject}: already handed over")
        if plan.orphan:
            click.echo(("would " if dry_run else "") + plan.orphan)
        if dry_run:
            return HandoverExit.OK
        carry_out(cluster, stored, plan, namespace, timeout)
        click.echo(f"disaggregatedset/{name} in {namespace} handed {direction}: {len(plan.changes)} objects changed"
                   + ("; step it with rollout step -f from now on" if plan.orphan else ""))
    return HandoverExit.OK
