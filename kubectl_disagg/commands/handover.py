"""`kubectl disagg handover`: hand a running set to the controller, or back (see `handover`)."""

from __future__ import annotations

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.rollout.handover import TO_CONTROLLER, TO_PLUGIN, plan_handover

EXIT_REFUSED = 3


@click.command(epilog="""\b
Exit codes:
  0  handed over (with --dry-run: would be)
  1  error: API or network error, an object changed meanwhile (run it again)
  2  usage: invalid flags
  3  refused: an object would not be adopted, or the controller was not
     declared stopped (to-plugin); nothing was changed""")
@click.argument("direction", type=click.Choice([TO_CONTROLLER, TO_PLUGIN]))
@click.argument("name")
@_options.namespace
@_options.cluster
@click.option("--dry-run", is_flag=True, help="Print what would change, change nothing.")
@click.option("--controller-stopped", is_flag=True,
              help="to-plugin: confirm the DisaggregatedSet controller no longer runs (it would fight the plugin).")
@click.pass_context
def handover(ctx, direction, name, namespace, kubeconfig, context, dry_run, controller_stopped) -> None:
    """Hand the stored DisaggregatedSet NAME's running objects to the controller, or back.

    Names, labels and pod templates are already identical on both sides: only ownership
    changes, so no pod restarts. to-controller adds the ownerReference the controller
    requires (the stored set as controller) to every LeaderWorkerSet and Service;
    to-plugin (with the controller stopped) labels them managed-by kubectl-disagg, removes
    that ownerReference and clears the set's controller-written status. Every object must
    be adoptable, or nothing is changed.

    \b
    kubectl disagg handover to-controller my-llm -n serving --dry-run
    kubectl disagg handover to-controller my-llm -n serving
    kubectl disagg handover to-plugin my-llm -n serving --controller-stopped
    """
    with _options.session(kubeconfig, context) as cluster:
        namespace = namespace or cluster.default_namespace
        stored = cluster.get_set(name, namespace)
        snapshot = cluster.snapshot(name, namespace)
        plan = plan_handover(direction, stored, list(snapshot.objects.values()))
        refusal = list(plan.refusal)
        if direction == TO_PLUGIN and not controller_stopped and not dry_run:
            refusal.append("stop the DisaggregatedSet controller first (it runs inside the LWS controller from "
                           "LWS v0.9 on), then pass --controller-stopped")
        if refusal:
            click.echo(f"refusing to hand disaggregatedset/{name} {direction}; nothing was changed:", err=True)
            for reason in refusal:
                click.echo(f"  {reason}", err=True)
            ctx.exit(EXIT_REFUSED)
        for change in plan.changes:
            click.echo(("would " if dry_run else "") + change.summary)
        for subject in plan.unchanged:
            click.echo(f"{subject}: already handed over")
        if dry_run:
            return
        # One object at a time; cut short, running it again finishes the rest (done ones are skipped).
        for change in plan.changes:
            cluster.patch_object(change.kind, namespace, change.name, list(change.patch))
        if direction == TO_PLUGIN and (stored.get("status") or {}):
            cluster.clear_set_status(name, namespace)
        click.echo(f"disaggregatedset/{name} in {namespace} handed {direction}: {len(plan.changes)} objects changed")
