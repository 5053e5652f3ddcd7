"""Shell completion, answered the way kubectl (>= 1.26) asks a plugin for it.

kubectl runs `kubectl_complete-disagg ARGS... WORD` for `kubectl disagg ARGS... WORD<TAB>` and
expects Cobra's protocol: one candidate per line (optionally `candidate<TAB>description`), then
a directive line `:N`. The scripts of `kubectl-disagg completion bash|zsh|fish` ask the same
executable, so there is one completion engine. Candidates come from the click command tree
(subcommands, flags, `-o` choices); for `-n` from the cluster's namespaces, for `--context` from
the kubeconfig's contexts, and for a set NAME from the DisaggregatedSets in the `-f` files on the
line, else from the sets of the namespace (`-n` typed earlier on the line, else the context's:
stored ones and those deployed with -f, found by their LeaderWorkerSets' labels) and the current
directory's YAML files. What the cluster holds comes from a `ClusterNames` the caller passes
(commands/complete.py): views never reach the cluster themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import click

from kubectl_disagg.core.api import naming


# Cobra's ShellCompDirective bits.
DEFAULT = 0  # the shell may complete file names when there are no candidates
NO_FILE_COMP = 4
FILTER_FILE_EXT = 8  # the candidates are file extensions to complete files with

MANIFEST_EXTENSIONS = ("yaml", "yml", "json")


@dataclass(frozen=True)
class Completion:
    candidates: tuple[str, ...]
    directive: int

    def lines(self) -> str:
        return "".join(f"{c}\n" for c in self.candidates) + f":{self.directive}\n"


class ClusterNames(Protocol):
    """What completion asks of the cluster and the kubeconfig; each answer is empty when it
    cannot be had (no kubeconfig, no server): a completion never fails."""

    def namespaces(self, kubeconfig: str | None, context: str | None) -> list[str]: ...

    def contexts(self, kubeconfig: str | None) -> list[str]: ...

    def set_names(self, kubeconfig: str | None, context: str | None, namespace: str | None) -> list[str]: ...


# The values of these flags typed earlier on the line are where the cluster's names come from.
CONNECTION_FLAGS = ("namespace", "context", "kubeconfig")


@dataclass
class _Position:
    """Where the words typed so far leave us in the command tree."""

    command: click.Command
    context: click.Context
    filenames: list[str] = field(default_factory=list)
    pending: click.Option | None = None  # an option whose value is the word being completed
    connection: dict[str, str] = field(default_factory=dict)  # -n, --context, --kubeconfig typed so far


def complete(root: click.Command, words: list[str], cluster: ClusterNames | None = None) -> Completion:
    """Candidates for the last of ``words`` (the word under the cursor, maybe empty); `cluster`
    answers for the names only the cluster or the kubeconfig know (None: none are offered)."""
    *typed, current = words or [""]
    position = _walk(root, typed)
    if position.pending is not None:
        return _option_values(position.pending, current, "", cluster, position.connection)
    if current.startswith("--") and "=" in current:
        name, value = current.split("=", 1)
        option = _option_named(position.command, position.context, name)
        if option is not None and not option.is_flag:
            return _option_values(option, value, name + "=", cluster, position.connection)
    if current.startswith("-"):
        return _matching(_flags(position.command, position.context), current)
    if isinstance(position.command, click.Group):
        subcommands = []
        for name in position.command.list_commands(position.context):
            command = position.command.get_command(position.context, name)
            if command is not None and not command.hidden:
                subcommands.append((name, command.get_short_help_str(limit=60)))
        return _matching(subcommands, current)
    if any(isinstance(p, click.Argument) for p in position.command.params):
        if position.filenames:
            names = set_names(position.filenames)
        else:  # the namespace's sets, and the manifests here
            connection = position.connection
            names = sorted({*set_names(["."]), *(cluster.set_names(
                connection.get("kubeconfig"), connection.get("context"), connection.get("namespace"))
                if cluster is not None else ())})
        return _matching([(name, naming.SET_KIND) for name in names], current)
    return Completion((), NO_FILE_COMP)


def _walk(root: click.Command, typed: list[str]) -> _Position:
    context = click.Context(root, info_name="kubectl-disagg", resilient_parsing=True, **root.context_settings)
    position = _Position(root, context)
    for word in typed:
        if position.pending is not None:
            if "filenames" == position.pending.name:
                position.filenames.append(word)
            elif position.pending.name in CONNECTION_FLAGS:
                position.connection[position.pending.name] = word
            position.pending = None
        elif word.startswith("-"):
            name, _, value = word.partition("=")
            option = _option_named(position.command, position.context, name)
            if option is not None and not option.is_flag:
                if value:
                    if option.name == "filenames":
                        position.filenames.append(value)
                    elif option.name in CONNECTION_FLAGS:
                        position.connection[option.name] = value
                elif not _value_optional(option):  # `--dry-run` takes its value after `=` only
                    position.pending = option
        elif isinstance(position.command, click.Group):
            command = position.command.get_command(position.context, word)
            if command is not None:
                context = click.Context(command, parent=position.context, info_name=word, resilient_parsing=True)
                position = _Position(command, context, position.filenames, connection=position.connection)
    return position


def _value_optional(option: click.Option) -> bool:
    """An option that may go bare (`--dry-run`, meaning `--dry-run=client`)."""
    return bool(getattr(option, "_flag_needs_value", False))


def _option_named(command: click.Command, context: click.Context, name: str) -> click.Option | None:
    for param in command.get_params(context):
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _flags(command: click.Command, context: click.Context) -> list[tuple[str, str]]:
    flags = []
    for param in command.get_params(context):
        if isinstance(param, click.Option) and not param.hidden:
            summary = (param.help or "").split(". ")[0].rstrip(".")
            flags += [(opt, summary) for opt in (*param.opts, *param.secondary_opts)]
    return flags


def _option_values(option: click.Option, current: str, prefix: str, cluster: ClusterNames | None = None,
                   connection: dict[str, str] | None = None) -> Completion:
    if isinstance(option.type, click.Choice):
        return _matching([(prefix + choice, "") for choice in option.type.choices], prefix + current)
    connection = connection or {}
    if option.name == "namespace" and cluster is not None:
        names = cluster.namespaces(connection.get("kubeconfig"), connection.get("context"))
        return _matching([(prefix + name, "") for name in names], prefix + current)
    if option.name == "context" and cluster is not None:
        return _matching([(prefix + name, "") for name in cluster.contexts(connection.get("kubeconfig"))],
                         prefix + current)
    if option.name == "filenames":
        return Completion(MANIFEST_EXTENSIONS, FILTER_FILE_EXT)
    if isinstance(option.type, click.Path):
        return Completion((), DEFAULT)
    return Completion((), NO_FILE_COMP)


def _matching(candidates: list[tuple[str, str]], current: str) -> Completion:
    lines = [f"{name}\t{help}" if help else name for name, help in candidates if name.startswith(current)]
    return Completion(tuple(lines), NO_FILE_COMP)


def set_names(filenames: list[str]) -> list[str]:
    """Names of the DisaggregatedSets in these files or directories; unreadable ones are skipped
    (a half-written file must not break completion). Read as every command reads manifests."""
    from kubectl_disagg.inputs.tree import documents_leniently

    names: set[str] = set()
    for document in (d.data for d in documents_leniently(filenames)):
        if isinstance(document, dict) and document.get("kind") == naming.SET_KIND:
            name = (document.get("metadata") or {}).get("name")
            if isinstance(name, str):
                names.add(name)
    return sorted(names)
