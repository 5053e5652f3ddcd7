"""`kubectl disagg version`: the plugin's version, as `kubectl version --client` prints kubectl's."""

from __future__ import annotations

import platform

import click

from kubectl_disagg import __version__
from kubectl_disagg.commands import _options
from kubectl_disagg.commands._help import HelpCommand, exit_section
from kubectl_disagg.exits import Exit


@click.command(cls=HelpCommand, exit_codes=[exit_section(Exit)])
@_options.output("text", "yaml", "json", default="text")
@_options.pass_options
def version(options: _options.Options) -> None:
    """Print the plugin's version (and the Python that runs it); it asks no cluster.

    \b
    kubectl disagg version
    kubectl disagg version -o json   # pluginVersion, pythonVersion

    As `kubectl version --client`: the client side only. `kubectl-disagg --version` prints
    the same version on one line.
    """
    document = {"pluginVersion": __version__, "pythonVersion": platform.python_version()}
    if options.output == "text":
        click.echo(f"Plugin Version: v{__version__}\nPython Version: {document['pythonVersion']}")
        return
    from kubectl_disagg.manifests.writer import to_json, to_yaml

    click.echo(to_yaml(document) if options.output == "yaml" else to_json(document), nl=False)
