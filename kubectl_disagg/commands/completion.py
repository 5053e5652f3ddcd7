"""`kubectl-disagg completion bash|zsh|fish`: a script for completing the plugin typed directly.

Through kubectl (`kubectl disagg <TAB>`), kubectl itself asks `kubectl_complete-disagg`; these
scripts ask the same executable.
"""

from __future__ import annotations

import click

from kubectl_disagg.commands._help import HelpCommand, exit_section
from kubectl_disagg.exits import Exit
from kubectl_disagg.views.templating import render_template

SHELLS = ("bash", "zsh", "fish")


@click.command(cls=HelpCommand, exit_codes=[exit_section(Exit)])
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for kubectl-disagg.

    \b
    source <(kubectl-disagg completion bash)        # bash, in ~/.bashrc
    source <(kubectl-disagg completion zsh)         # zsh, after compinit
    kubectl-disagg completion fish | source         # fish

    `kubectl disagg <TAB>` needs none of this: kubectl >= 1.26 runs kubectl_complete-disagg,
    installed beside kubectl-disagg.
    """
    click.echo(render_template(f"completion.{shell}.j2", helper="kubectl_complete-disagg", program="kubectl-disagg"),
               nl=False)
