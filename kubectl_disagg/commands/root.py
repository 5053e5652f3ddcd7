"""The click command tree. Each command lives in its own module, imported when it runs."""

from __future__ import annotations

import click

from kubectl_disagg import __version__
from kubectl_disagg.commands import LazyGroup

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(
    cls=LazyGroup,
    context_settings=CONTEXT_SETTINGS,
    lazy_subcommands={
        "render": "kubectl_disagg.commands.render.render",
        "validate": "kubectl_disagg.commands.validate.validate",
        "rollout": "kubectl_disagg.commands.rollout.rollout",
        "set": "kubectl_disagg.commands.set_image.set_",
        "cmp": "kubectl_disagg.commands.cmp.cmp",
        "crds": "kubectl_disagg.commands.crds.crds",
        "completion": "kubectl_disagg.commands.completion.completion",
        "handover": "kubectl_disagg.commands.handover.handover",
        "version": "kubectl_disagg.commands.version.version",
    },
)
@click.version_option(__version__, prog_name="kubectl-disagg")
def cli() -> None:
    """Render and roll out DisaggregatedSets as LeaderWorkerSets, without a controller.

    \b
    kubectl disagg render -f ds.yaml | kubectl apply --server-side -f -
    kubectl disagg rollout plan -f ds.yaml
    kubectl disagg rollout step -f ds.yaml --dry-run
    kubectl disagg rollout status my-llm -w
    """
