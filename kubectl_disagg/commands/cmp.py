"""`kubectl disagg cmp`: the Argo CD config management plugin's commands (see plugin.yaml).

Argo CD runs them in the application's directory with its parameters in the environment;
the work is `argocd/sidecar.py`'s.
"""

from __future__ import annotations

import os

import click

from kubectl_disagg.argocd import sidecar as cmp_sidecar


@click.group()
def cmp() -> None:
    """Argo CD config management plugin (run by the sidecar, see docs/argocd.md)."""


@cmp.command()
def generate() -> None:
    """Render the current directory for Argo CD.

    Parameters come from ARGOCD_APP_PARAMETERS, then PARAM_*, then ARGOCD_ENV_*:
    namespace, recurse (true|false), include and exclude (globs), strict (true|false),
    rollout-state (file name), require-rollout-state (true|false).
    Exit 1 with one line on stderr and nothing on stdout when there is nothing safe to apply.
    """
    raise SystemExit(cmp_sidecar.generate(os.environ, "."))


@cmp.command()
def discover() -> None:
    """Print a file holding a DisaggregatedSet among those `include` selects (nothing if none).

    Exit 0 either way (Argo CD's "no" is empty output); exit 1 only on invalid parameters.
    """
    raise SystemExit(cmp_sidecar.discover(os.environ, "."))
