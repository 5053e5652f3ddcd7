"""The inputs -f names, read as every command reads a directory (`gitops.directory`, loaded
only when a command asks for it, so that `--help` and the offline start stay light)."""

from __future__ import annotations

from kubectl_disagg.commands._options import Options, print_warnings
from kubectl_disagg.errors import UserError


def sets_from_files(options: Options) -> list:
    """The DisaggregatedSets in -f inputs, read as every command reads a directory
    (`gitops.directory`, loaded when asked for), validated, warnings printed; at least one."""
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.inputs import tree as inputs

    reading = inputs.Reading(options.recursive)
    tree = inputs.read_tree(options.filenames, reading)
    return [entry.ds for entry in _with_sets(directories, tree, reading, options.namespace).sets]


def tree_of_sets(filenames: tuple[str, ...], reading, namespace: str | None):
    """The -f inputs as `gitops.directory` reads them (`Tree`), checked to hold at least one
    valid set (warnings printed; `namespace`, -n, places a set and its policy that name none);
    its states are read by the command that needs them."""
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.inputs import tree as inputs

    tree = inputs.read_tree(filenames, reading)
    _with_sets(directories, tree, reading, namespace)
    return tree


def _with_sets(directories, tree, reading, namespace: str | None):
    directory = directories.load(tree, reading, namespace=namespace, states=False)
    print_warnings(directory.warnings)
    if not directory.sets:
        raise UserError(["no DisaggregatedSet found in the input"])
    return directory
