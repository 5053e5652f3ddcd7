"""The inputs -f names, read from disk once by `inputs` and loaded as every command loads a
directory (`gitops.directory`, imported only when a command asks for it, so that `--help` and the
offline start stay light)."""

from __future__ import annotations

from kubectl_disagg.commands._options import Options, print_warnings
from kubectl_disagg.errors import UserError


def sets_from_files(options: Options) -> list:
    """The DisaggregatedSets in -f inputs, validated, warnings printed; at least one."""
    return [entry.ds for entry in sets_and_tree(options)[1].sets]


def sets_and_tree(options: Options):
    """The -f inputs as read from disk (`inputs.Tree`, the state files beside the sets included)
    and their sets loaded (`gitops.directory.Directory`, states not read), warnings printed."""
    from kubectl_disagg.inputs import tree as inputs

    reading = inputs.Reading(options.recursive)
    return tree_of_sets(options.filenames, reading, options.namespace)


def tree_of_sets(filenames: tuple[str, ...], reading, namespace: str | None):
    """The -f inputs read from disk once (`inputs.Tree`) and their sets loaded (`Directory`,
    states not read: the command that needs them loads them from the same tree), checked to
    hold at least one valid set (warnings printed; `namespace`, -n, places a set and its
    policy that name none)."""
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.inputs import tree as inputs

    tree = inputs.read_tree(filenames, reading)
    return tree, _with_sets(directories, tree, reading, namespace)


def _with_sets(directories, tree, reading, namespace: str | None):
    directory = directories.load(tree, reading, namespace=namespace, states=False)
    print_warnings(directory.warnings)
    if not directory.sets:
        raise UserError(["no DisaggregatedSet found in the input"])
    return directory
