"""`kubectl disagg cmp`: the Argo CD config management plugin's commands (see plugin.yaml).

Argo CD runs them in the application's directory with its parameters in the environment;
the work is `argocd/sidecar.py`'s.
"""

from __future__ import annotations

import os

import click

from kubectl_disagg.argocd import sidecar as cmp_sidecar
from kubectl_disagg.commands._help import HelpCommand, exit_section
from kubectl_disagg.exits import CMP_DISCOVER, CmpExit


@click.group()
def cmp() -> None:
    """Argo CD config management plugin (run by the sidecar, see docs/argocd.md)."""


@cmp.command(cls=HelpCommand, exit_codes=[exit_section(CmpExit)])
def generate() -> int:
    """Render the current directory for Argo CD.

    \b
    kubectl disagg cmp generate                 # in the app's directory
    ARGOCD_ENV_NAMESPACE=serving kubectl disagg cmp generate   # from plugin.env

    Parameters come from ARGOCD_APP_PARAMETERS, then PARAM_*, then ARGOCD_ENV_*:
    namespace, recurse (true|false), include and exclude (globs), strict (true|false),
    rollout-state (file name), require-rollout-state (true|false), revision-services (true|false).
    """
    return cmp_sidecar.generate(os.environ, ".")


@cmp.command(cls=HelpCommand, exit_codes=[exit_section(CmpExit, words=CMP_DISCOVER)])
def discover() -> int:
    """Print a file holding a DisaggregatedSet among those `include` selects (nothing if none).

    \b
    kubectl disagg cmp discover                 # in the app's directory
    PARAM_INCLUDE_0='apps/*.yaml' kubectl disagg cmp discover   # an array

    Argo CD's "no" is empty output with exit code 0; exit code 1 is for invalid parameters.
    """
    return cmp_sidecar.discover(os.environ, ".")
