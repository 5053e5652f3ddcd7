"""`kubectl disagg render`: the LWS and Services a DisaggregatedSet stands for.

The work is done by `fastpath.render_to_stdout`, which `main` also calls directly for the
usual spellings of this command; this click command serves help and unusual arguments.
"""

from __future__ import annotations

import click

from kubectl_disagg import fastpath
from kubectl_disagg.commands import _options


@click.command()
@_options.filenames()
@_options.namespace
@_options.output("yaml", "json", default="yaml")
def render(filenames: tuple[str, ...], recursive: bool, namespace: str | None, output: str) -> None:
    """Expand DisaggregatedSets into LeaderWorkerSets and headless Services.

    Other documents pass through unchanged, so a GitOps directory renders whole:

    \b
    kubectl disagg render -f ds.yaml | kubectl apply --server-side -f -
    """
    fastpath.render_to_stdout({"filenames": list(filenames), "recursive": recursive,
                               "namespace": namespace, "output": output})
