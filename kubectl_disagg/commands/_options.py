"""Flags shared by commands, spelled and behaving as kubectl's do."""

from __future__ import annotations

import click

from kubectl_disagg.errors import Problem


def filenames(required: bool = True):
    def decorate(func):
        func = click.option("-R", "--recursive", is_flag=True,
                            help="Process the directories used in -f recursively.")(func)
        return click.option("-f", "--filename", "filenames", multiple=True, required=required,
                            metavar="PATH",
                            help="File, directory or - (stdin) holding manifests. Repeatable.")(func)
    return decorate


def namespace(func):
    return click.option("-n", "--namespace", default=None,
                        help="Namespace (default: the document's, else the context's, else default).")(func)


def output(*choices: str, default: str):
    return click.option("-o", "--output", type=click.Choice(choices), default=default, show_default=True,
                        help="Output format.")


def cluster(func):
    """--kubeconfig and --context, like kubectl."""
    func = click.option("--context", default=None, help="The kubeconfig context to use.")(func)
    return click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False),
                        help="Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).")(func)


def print_warnings(warnings: list[Problem] | tuple[Problem, ...]) -> None:
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)
