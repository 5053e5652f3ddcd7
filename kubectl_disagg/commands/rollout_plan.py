"""`kubectl disagg rollout plan`: a coordinated rollout, step by step, before it happens.

Three sources of planner inputs, one planner and one printer:
- flags only (`--from 5,2 --to 5,2 --max-surge 2`): offline arithmetic;
- a DisaggregatedSet file and `--from`: targets and configs from the document, offline;
- a DisaggregatedSet file alone: the remaining trajectory of every slice from the live LWS.

Flags → `core.controller.plan_inputs` (offline) or `rollout.plan.live_plans` over the store (live: the
cluster's, or git's with --gitops) → `views.plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from kubectl_disagg.commands import _inputs, _options, _session
from kubectl_disagg.commands._modes import GITOPS_INPUT, Command, Mode
from kubectl_disagg.core.controller.plan_inputs import inputs_from_flags, inputs_from_set
from kubectl_disagg.core.controller.planner import PlanDidNotConverge, PlanInputs, Step
from kubectl_disagg.core.controller.planner import plan as plan_rollout
from kubectl_disagg.errors import UserError
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.exits import Exit
from kubectl_disagg.views.plan import FLAGS, format_plans

if TYPE_CHECKING:
    from kubectl_disagg.core.api.model import DisaggregatedSet
    from kubectl_disagg.rollout.store import PositionStore
    from kubectl_disagg.views.invocation import Invocation


MODES = [Mode("gitops", needs=GITOPS_INPUT, refuses=("name", "from_", "to", "max_surge", "max_unavailable", "roles"))]


@click.command(cls=Command, modes=MODES, exit_codes=[exit_section(Exit)])
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_session.cluster
@click.option("--from", "from_", metavar="N[,N...]",
              help="Old-revision replicas per role when the rollout starts, e.g. 5,2.")
@click.option("--to", metavar="N[,N...]",
              help="Target replicas per role (default: the --from counts, a same-size rollout).")
@click.option("--max-surge", metavar="N[,N...]",
              help="Resolved maxSurge: one value for every role, or one per role.  [default: 1]")
@click.option("--max-unavailable", metavar="N[,N...]",
              help="Resolved maxUnavailable: one value for every role, or one per role.  [default: 0]")
@click.option("--roles", metavar="NAME[,NAME...]",
              help="Role names for the output (default role-0,role-1,...).")
@_options.output("table", "wide", "chart", "json", "yaml", default="table")
@click.option("--gitops", is_flag=True,
              help="Git-driven rollout (docs/gitops.md): the position and each slice's replicas from the set's "
                   "state file in -f DIR, the same plan as in the cluster; nothing else is read.")
@_options.pass_options
def plan(options: _options.Options, name: str | None, from_: str | None, to: str | None, max_surge: str | None,
         max_unavailable: str | None, roles: str | None, gitops: bool = False) -> None:
    """Show every step of a coordinated rollout, as the controller would take them.

    \b
    kubectl disagg rollout plan -f ds.yaml    # what is left, from the live LWS
    kubectl disagg rollout plan --from 5,2 --max-surge 2 --max-unavailable 1
    kubectl disagg rollout plan --from 5,2 --to 5,2 --max-surge 2 --max-unavailable 1
    kubectl disagg rollout plan --from 4,2 --to 6,2 --roles prefill,decode -o json
    kubectl disagg rollout plan --from 4,2 --roles prefill,decode -o chart   # drawn, per role
    kubectl disagg rollout plan -f ds.yaml --from 5,2   # targets and budgets from the file
    kubectl disagg rollout plan NAME                    # the same for a set stored in the cluster
    kubectl disagg rollout plan --gitops -f apps/llama/ # a git rollout, from its state file

    NAME may be a set run by kubectl-disagg or by the DisaggregatedSet controller.
    """
    if gitops:
        return _gitops(options)
    if name and options.filenames:
        raise click.UsageError("give either NAME (a DisaggregatedSet stored in the cluster) or -f FILE")
    plans: list[tuple[str | None, PlanInputs, None]]  # titled by set with -f; the steps planned below
    if name:
        if any(value is not None for value in (from_, to, max_surge, max_unavailable, roles)):
            raise click.UsageError("with NAME, the plan comes from the live cluster: --from, --to, --max-surge, "
                                   "--max-unavailable and --roles go with -f or alone")
        return _live(None, name, options)
    elif options.filenames:
        conflicting = [flag for flag, value in (("--to", to), ("--max-surge", max_surge),
                                                ("--max-unavailable", max_unavailable), ("--roles", roles))
                       if value is not None]
        if conflicting:
            raise click.UsageError(f"{', '.join(conflicting)}: with -f, targets, budgets and role names "
                                   "come from the DisaggregatedSet")
        sets = _inputs.sets_from_files(options)
        if from_ is None:
            return _live(sets, None, options)
        else:
            plans = [(f"disaggregatedset/{ds.name}", inputs_from_set(ds, from_, FLAGS), None) for ds in sets]
    elif from_ is None:
        raise click.UsageError("give --from (and optionally --to, --max-surge, --max-unavailable), or -f FILE")
    else:
        inputs = inputs_from_flags(from_, to, max_surge or "1", max_unavailable or "0", roles, FLAGS)
        plans = [(None, inputs, None)]
    computed = [(title, inputs, _trajectory(inputs, steps)) for title, inputs, steps in plans]
    paced = [ds for ds in (sets if name or options.filenames else ()) if ds.policy is not None]
    # Written in one piece: a failure above leaves stdout empty.
    click.echo(format_plans(computed, options.output, paced, _options.invocation(options, name)), nl=False)


def _trajectory(inputs: PlanInputs, steps: Sequence[Step] | None) -> list[Step]:
    if steps is not None:
        return list(steps)
    try:
        return plan_rollout(inputs.initial_old, inputs.target, inputs.configs)
    except PlanDidNotConverge as err:
        raise UserError([f"internal error, please report it: {err}"]) from err


def _live(sets: list[DisaggregatedSet] | None, name: str | None, options: _options.Options) -> None:
    """Print the live plans of `sets` (from files), or of the set `name` stored in the cluster,
    from the cluster's store (rollout/plan.py `live_plans`)."""
    from kubectl_disagg.rollout.store import ClusterStore  # the offline plan never loads the Kubernetes client

    with _session.session(options) as cluster:
        store = ClusterStore(cluster, sets or [_session.stored_set(cluster, str(name), options.namespace)],
                             options.namespace)
        _print_live(store, options, _options.invocation(options, name))


def _gitops(options: _options.Options) -> None:
    """Print the plan of each set of -f DIR from git's store: its state file alone (its position
    and what each slice deploys), the same plan as in the cluster; no cluster is read."""
    _print_live(_inputs.git_store(options), options, _options.invocation(options, None, True))


def _print_live(store: PositionStore, options: _options.Options, invocation: Invocation) -> None:
    """The plans of the store's sets (`live_plans`: one plan over either store), printed."""
    from kubectl_disagg.rollout.plan import live_plans
    from kubectl_disagg.views.plan import format_live

    live = live_plans(store, options.clock.now())
    # Written in one piece: a failure above leaves stdout empty.
    click.echo(format_live(live, options.output, invocation), nl=False)
