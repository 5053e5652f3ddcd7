"""Shell completion, answered the way kubectl (>= 1.26) asks a plugin for it.

kubectl runs `kubectl_complete-disagg ARGS... WORD` for `kubectl disagg ARGS... WORD<TAB>` and
expects Cobra's protocol: one candidate per line (optionally `candidate<TAB>description`), then
a directive line `:N`. The scripts of `kubectl-disagg completion bash|zsh|fish` ask the same
executable, so there is one completion engine. Candidates come from the click command tree
(subcommands, flags, `-o` choices) and, for a set NAME, from the DisaggregatedSets in the `-f`
files on the line (else in the current directory's YAML files).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import click

from kubectl_disagg.core import naming


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


@dataclass
class _Position:
    """Where the words typed so far leave us in the command tree."""

    command: click.Command
    context: click.Context
    filenames: list[str] = field(default_factory=list)
    pending: click.Option | None = None  # an option whose value is the word being completed


def complete(root: click.Command, words: list[str]) -> Completion:
    """Candidates for the last of ``words`` (the word under the cursor, maybe empty)."""
    *typed, current = words or [""]
    position = _walk(root, typed)
    if position.pending is not None:
        return _option_values(position.pending, current, "")
    if current.startswith("--") and "=" in current:
        name, value = current.split("=", 1)
        option = _option_named(position.command, position.context, name)
        if option is not None and not option.is_flag:
            return _option_values(option, value, name + "=")
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
        names = set_names(position.filenames or ["."])  # the manifests here
        return _matching([(name, naming.SET_KIND) for name in names], current)
    return Completion((), NO_FILE_COMP)


def _walk(root: click.Command, typed: list[str]) -> _Position:
    context = click.Context(root, info_name="kubectl-disagg", resilient_parsing=True, **root.context_settings)
    position = _Position(root, context)
    for word in typed:
        if position.pending is not None:
            if "filenames" == position.pending.name:
                position.filenames.append(word)
            position.pending = None
        elif word.startswith("-"):
            name, _, value = word.partition("=")
            option = _option_named(position.command, position.context, name)
            if option is not None and not option.is_flag:
                if value:
                    if option.name == "filenames":
                        position.filenames.append(value)
                elif not _value_optional(option):  # `--dry-run` takes its value after `=` only
                    position.pending = option
        elif isinstance(position.command, click.Group):
            command = position.command.get_command(position.context, word)
            if command is not None:
                context = click.Context(command, parent=position.context, info_name=word, resilient_parsing=True)
                position = _Position(command, context, position.filenames)
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


def _option_values(option: click.Option, current: str, prefix: str) -> Completion:
    if isinstance(option.type, click.Choice):
        return _matching([(prefix + choice, "") for choice in option.type.choices], prefix + current)
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
