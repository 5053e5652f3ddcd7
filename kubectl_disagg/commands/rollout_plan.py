"""`kubectl disagg rollout plan`: a coordinated rollout, step by step, before it happens.

Three sources of planner inputs, one planner and one printer:
- flags only (`--from 5,2 --to 5,2 --max-surge 2`): offline arithmetic;
- a DisaggregatedSet file and `--from`: targets and configs from the document, offline;
- a DisaggregatedSet file alone: the remaining trajectory of every slice from the live LWS.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.writer import to_json, to_yaml
from kubectl_disagg.core.planner import PlanDidNotConverge, PlanInputs, Step, inputs_for_set
from kubectl_disagg.core.planner import plan as plan_rollout
from kubectl_disagg.core.rollout_config import RolloutConfig

# A DisaggregatedSet has 2..10 roles; one role is still a meaningful plan to look at.
MAX_ROLES = 10
_COUNT = re.compile(r"[0-9]+")


@click.command()
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_options.cluster
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
@_options.output("table", "json", "yaml", default="table")
def plan(name, filenames, recursive, namespace, kubeconfig, context, from_: str | None, to: str | None,
         max_surge: str | None, max_unavailable: str | None, roles: str | None, output: str) -> None:
    """Show every step of a coordinated rollout, as the controller would take them.

    \b
    kubectl disagg rollout plan --from 5,2 --to 5,2 --max-surge 2 --max-unavailable 1
    kubectl disagg rollout plan --from 4,2 --to 6,2 --roles prefill,decode -o json
    kubectl disagg rollout plan -f ds.yaml --from 5,2   # targets and budgets from the file
    kubectl disagg rollout plan -f ds.yaml              # what is left, per slice, from the live LWS
    kubectl disagg rollout plan NAME                    # the same for a set stored in the cluster
                                                        # (run by kubectl-disagg or by the controller)
    """
    if name and filenames:
        raise click.UsageError("give either NAME (a DisaggregatedSet stored in the cluster) or -f FILE")
    if name:
        if any(value is not None for value in (from_, to, max_surge, max_unavailable, roles)):
            raise click.UsageError("with NAME, the plan comes from the live cluster: --from, --to, --max-surge, "
                                   "--max-unavailable and --roles go with -f or alone")
        from kubectl_disagg.commands.rollout_plan_live import live_plans

        plans = live_plans(None, namespace, kubeconfig, context, name=name)
    elif filenames:
        conflicting = [flag for flag, value in (("--to", to), ("--max-surge", max_surge),
                                                ("--max-unavailable", max_unavailable), ("--roles", roles))
                       if value is not None]
        if conflicting:
            raise click.UsageError(f"{', '.join(conflicting)}: with -f, targets, budgets and role names "
                                   "come from the DisaggregatedSet")
        sets = _options.sets_from_files(filenames, recursive)
        if from_ is None:
            from kubectl_disagg.commands.rollout_plan_live import live_plans

            plans = live_plans(sets, namespace, kubeconfig, context)
        else:
            plans = [(f"disaggregatedset/{ds.name}", inputs_from_set(ds, from_), None) for ds in sets]
    elif from_ is None:
        raise click.UsageError("give --from (and optionally --to, --max-surge, --max-unavailable), or -f FILE")
    else:
        inputs = inputs_from_flags(from_, to, max_surge or "1", max_unavailable or "0", roles)
        plans = [(None, inputs, None)]
    computed = [(title, inputs, _trajectory(inputs, steps)) for title, inputs, steps in plans]
    # Written in one piece: a failure above leaves stdout empty.
    click.echo(format_plans(computed, output), nl=False)


def _trajectory(inputs: PlanInputs, steps: Sequence[Step] | None) -> list[Step]:
    if steps is not None:
        return list(steps)
    try:
        return plan_rollout(inputs.initial_old, inputs.target, inputs.configs)
    except PlanDidNotConverge as err:
        raise UserError([f"internal error, please report it: {err}"]) from err


# --- inputs ---------------------------------------------------------------------------------


def inputs_from_flags(
    from_: str, to: str | None, max_surge: str, max_unavailable: str, roles: str | None
) -> PlanInputs:
    """Planner inputs from comma-separated flags; every problem is reported at once."""
    problems: list[str] = []
    initial_old = _counts("--from", from_, problems)
    to_values = None if to is None else _counts("--to", to, problems)
    surge_values = _counts("--max-surge", max_surge, problems)
    unavailable_values = _counts("--max-unavailable", max_unavailable, problems)
    if initial_old is None:
        raise UserError(problems)  # --from sets the role count every other flag is checked against
    n = len(initial_old)
    if not 1 <= n <= MAX_ROLES:
        problems.append(f"--from: {_plural(n, 'role')} given; a plan takes 1 to {MAX_ROLES}")

    target = initial_old if to is None else _per_role("--to", to_values, n, problems, broadcast=False)
    surges = _per_role("--max-surge", surge_values, n, problems, broadcast=True)
    unavailables = _per_role("--max-unavailable", unavailable_values, n, problems, broadcast=True)
    names = _role_names(roles, n, problems)

    if surges is not None and unavailables is not None:
        for name, surge, unavailable in zip(names or _default_names(n), surges, unavailables):
            if surge == 0 and unavailable == 0:
                problems.append(f"--max-surge/--max-unavailable: role {json.dumps(name)} has both 0; "
                                "at least one must be positive so the rollout has room to surge or drain")
    if problems:
        raise UserError(problems)
    return PlanInputs(
        roles=names,
        initial_old=initial_old,
        target=target,
        configs=tuple(RolloutConfig(s, u) for s, u in zip(surges, unavailables)),
    )


def inputs_from_set(ds, from_: str) -> PlanInputs:
    """Planner inputs from a DisaggregatedSet: targets and budgets per role, --from as given."""
    problems: list[str] = []
    initial_old = _counts("--from", from_, problems)
    if initial_old is not None and len(initial_old) != len(ds.roles):
        problems.append(f"--from: {_plural(len(initial_old), 'value')} given; disaggregatedset/{ds.name} "
                        f"has {len(ds.roles)} roles ({_vector(ds.role_names)})")
    if problems:
        raise UserError(problems)
    return inputs_for_set(ds, initial_old)


def _counts(flag: str, text: str, problems: list[str]) -> tuple[int, ...] | None:
    """Comma-separated non-negative integers, or None (with problems noted) when any is not."""
    values = [item.strip() for item in text.split(",")]
    bad = [item for item in values if not _COUNT.fullmatch(item)]
    for item in bad:
        problems.append(f"{flag}: {json.dumps(item)} is not a non-negative integer")
    return None if bad else tuple(int(item) for item in values)


def _per_role(
    flag: str, values: tuple[int, ...] | None, n: int, problems: list[str], broadcast: bool
) -> tuple[int, ...] | None:
    """Counts for each of n roles; with `broadcast`, a single value stands for every role."""
    if values is None:
        return None  # already reported as not a count
    if broadcast and len(values) == 1:
        return values * n
    if len(values) != n:
        single = "1 for every role or " if broadcast else ""
        problems.append(f"{flag}: {_plural(len(values), 'value')} given; "
                        f"expected {single}{n}, one per role as in --from")
        return None
    return values


def _role_names(text: str | None, n: int, problems: list[str]) -> tuple[str, ...] | None:
    if text is None:
        return _default_names(n)
    names = tuple(name.strip() for name in text.split(","))
    if len(names) != n:
        problems.append(f"--roles: {_plural(len(names), 'name')} given; "
                        f"expected {n}, one per role as in --from")
        return None
    if "" in names:
        problems.append("--roles: role names must not be empty")
        return None
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        problems.append(f"--roles: duplicate role name {', '.join(map(json.dumps, duplicates))}")
        return None
    return names


def _default_names(n: int) -> tuple[str, ...]:
    return tuple(f"role-{i}" for i in range(n))


# --- output ---------------------------------------------------------------------------------


def format_plans(plans: Sequence[tuple[str | None, PlanInputs, Sequence[Step]]], output: str) -> str:
    """One plan prints as itself; several (sets, slices) as titled sections or a list."""
    if len(plans) == 1 and (plans[0][0] is None or output != "table"):
        _, inputs, steps = plans[0]
        return format_plan(inputs, steps, output)
    if output == "table":
        return "\n".join(f"{title}\n{format_table(inputs, steps)}" for title, inputs, steps in plans)
    document = {"plans": [{"title": title, **_document(inputs, steps)} for title, inputs, steps in plans]}
    return to_json(document) if output == "json" else to_yaml(document)


def format_plan(inputs: PlanInputs, steps: Sequence[Step], output: str) -> str:
    if output == "table":
        return format_table(inputs, steps)
    document = _document(inputs, steps)
    return to_json(document) if output == "json" else to_yaml(document)


def _document(inputs: PlanInputs, steps: Sequence[Step]) -> dict:
    return {
        "roles": list(inputs.roles),
        "steps": [{"old": list(step.old), "new": list(step.new)} for step in steps],
    }


def format_table(inputs: PlanInputs, steps: Sequence[Step]) -> str:
    """The plan as an aligned table, laid out by templates/plan.txt.j2."""
    from kubectl_disagg.views.templating import render_template  # loads Jinja2: tables only

    limits = [tgt + cfg.surge for tgt, cfg in zip(inputs.target, inputs.configs)]
    rows = [
        {
            "step": str(index),
            "kind": str(step.kind),
            "old": _vector(step.old),
            "new": _vector(step.new),
            "totals": [f"{name} {old + new}/{limit}"
                       for name, old, new, limit in zip(inputs.roles, step.old, step.new, limits)],
        }
        for index, step in enumerate(steps)
    ]
    header = {"step": "STEP", "kind": "KIND", "old": "OLD", "new": "NEW"}
    widths = {key: max(len(label), *(len(row[key]) for row in rows)) for key, label in header.items()}
    # Each role's total is padded to its own widest value, so roles line up down the table.
    total_widths = [max(len(row["totals"][i]) for row in rows) for i in range(len(inputs.roles))]

    return render_template(
        "plan.txt.j2",
        summary=_summary(inputs, len(steps) - 1),
        header=header,
        rows=rows,
        widths=widths,
        total_widths=total_widths,
    )


def _summary(inputs: PlanInputs, transitions: int) -> str:
    surges = _vector(cfg.surge for cfg in inputs.configs)
    unavailables = _vector(cfg.unavailable for cfg in inputs.configs)
    return (f"Roles {_vector(inputs.roles)} from {_vector(inputs.initial_old)} to {_vector(inputs.target)} "
            f"(max surge {surges}; max unavailable {unavailables}): {_plural(transitions, 'step')}")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _vector(values) -> str:
    return ",".join(str(value) for value in values)
