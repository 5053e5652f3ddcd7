"""`kubectl disagg rollout …`: plan, step and status of coordinated rollouts."""

from __future__ import annotations

import click

from kubectl_disagg.commands import LazyGroup


@click.group(cls=LazyGroup, lazy_subcommands={
    "plan": "kubectl_disagg.commands.rollout_plan.plan",
    "step": "kubectl_disagg.commands.rollout_step.step",
    "status": "kubectl_disagg.commands.rollout_status.status",
    "state": "kubectl_disagg.commands.rollout_state.state",
    "promote": "kubectl_disagg.commands.rollout_verbs.promote",
    "pause": "kubectl_disagg.commands.rollout_verbs.pause",
    "resume": "kubectl_disagg.commands.rollout_verbs.resume",
    "abort": "kubectl_disagg.commands.rollout_verbs.abort",
    "retry": "kubectl_disagg.commands.rollout_verbs.retry",
    "restart": "kubectl_disagg.commands.rollout_restart.restart",
    "history": "kubectl_disagg.commands.rollout_history.history",
    "undo": "kubectl_disagg.commands.rollout_undo.undo",
    "dashboard": "kubectl_disagg.commands.rollout_dashboard.dashboard",
})
def rollout() -> None:
    """Plan, step and watch coordinated rollouts across roles."""
