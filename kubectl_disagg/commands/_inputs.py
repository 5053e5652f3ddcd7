"""The inputs -f names, read from disk once by `inputs` and loaded as every command loads a
directory (`inputs.directory`, imported only when a command asks for it, so that `--help` and the
offline start stay light)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kubectl_disagg.commands import _services
from kubectl_disagg.commands._options import Options, print_warnings
from kubectl_disagg.errors import UserError

if TYPE_CHECKING:
    from kubectl_disagg.core.api.model import DisaggregatedSet
    from kubectl_disagg.rollout.git_run import GitStore
    from kubectl_disagg.inputs.directory import Directory
    from kubectl_disagg.inputs.tree import Reading, Tree


def sets_from_files(options: Options) -> list[DisaggregatedSet]:
    """The DisaggregatedSets in -f inputs, validated, warnings printed; at least one."""
    return sets_and_tree(options)[1]


def sets_and_tree(options: Options) -> tuple[Tree, list[DisaggregatedSet]]:
    """The -f inputs as read from disk (`inputs.Tree`, the state files beside the sets included)
    and their sets loaded (`inputs.directory.Directory`, states not read), warnings printed."""
    from kubectl_disagg.inputs import tree as inputs

    tree, directory = tree_of_sets(options.filenames, inputs.Reading(options.recursive), options.namespace)
    return tree, [_services.as_asked(entry.ds, options) for entry in directory.sets]


def gitops_tree(options: Options, state_file: str | None = None) -> tuple[Reading, Tree]:
    """The -f inputs of a --gitops command: how they are read (`inputs.Reading`, -R, --state)
    and the tree read from disk once."""
    from kubectl_disagg.inputs import tree as inputs

    reading = inputs.Reading(options.recursive, explicit=state_file)
    return reading, inputs.read_tree(options.filenames, reading)


def gitops_namespace(options: Options) -> str:
    """Where every --gitops command places a set that names no namespace when -n does not:
    kubectl's rule, the kubeconfig context's namespace, else default (`kube.client.
    context_namespace`, read without connecting). -n itself goes to the loader apart: it may
    not contradict a document's own."""
    from kubectl_disagg.kube.client import context_namespace

    return context_namespace(options.kubeconfig, options.context)


def gitops_inputs(options: Options, state_file: str | None = None) -> tuple[Reading, Tree, Directory]:
    """`git_store`'s reading, tree and sets (states not read)."""
    store = git_store(options, state_file, states=False)
    return store.reading, store.tree, store.directory


def gitops_directory(options: Options, reading: Reading, tree: Tree, fallback: str | None = None) -> Directory:
    """The sets of `tree` loaded once with their rollout states (`gitops.directory.load`),
    checked like `tree_of_sets`, placed by `gitops_namespace` (`fallback`: the inputs checked
    alone, where the kubeconfig cannot be read)."""
    from kubectl_disagg.gitops import directory as directories

    return _checked(directories.load(tree, reading, namespace=options.namespace,
                                     fallback=gitops_namespace(options) if fallback is None else fallback))


def tree_of_sets(filenames: tuple[str, ...], reading: Reading, namespace: str | None) -> tuple[Tree, Directory]:
    """The -f inputs read from disk once (`inputs.Tree`) and their sets loaded (`Directory`,
    states not read: the command that needs them loads them from the same tree), checked to
    hold at least one valid set (warnings printed; `namespace`, -n, places a set and its
    policy that name none)."""
    from kubectl_disagg.inputs import directory as directories
    from kubectl_disagg.inputs import tree as inputs

    tree = inputs.read_tree(filenames, reading)
    return tree, _checked(directories.load(tree, reading, namespace=namespace))


def git_store(options: Options, state_file: str | None = None, states: bool = True) -> GitStore:
    """The position store of a --gitops command that reads (`rollout history`, `undo`, `plan`):
    the -f inputs read once (`gitops_tree`) and loaded once, with their rollout states, by the
    store (rollout/git_run.py `GitStore`), placed by `gitops_namespace`, checked like
    `tree_of_sets`; `states` False: the sets alone, their states neither read nor checked."""
    from kubectl_disagg.rollout.git_run import GitStore

    reading, tree = gitops_tree(options, state_file)
    found = GitStore(tree, reading, options.namespace, fallback=gitops_namespace(options), states=states)
    _checked(found.directory)
    return found


def _checked(directory: Directory) -> Directory:
    print_warnings(directory.warnings)
    if not directory.sets:
        raise UserError(["no DisaggregatedSet found in the input"])
    return directory


def git_driven(sets: Sequence[DisaggregatedSet], tree: Tree) -> list[str]:
    """The refusal of sets with a rollout state beside them (stepped through git, not by a plain
    `rollout step`), found in the state files already read with the sets (`tree`)."""
    from kubectl_disagg.gitops.files import refuse_git_driven

    return refuse_git_driven(sets, tree.files)
