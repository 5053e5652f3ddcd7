"""The two commands run most often, without click: `render` (Argo CD runs it on every refresh)
and `rollout status -f` (people and scripts poll it). Importing click costs more than either
takes on a small set.

`parse_args` accepts exactly what the click commands accept in the usual spellings (`-f X`,
`--filename=X`, `-R`, `-n X`, `-o FORMAT`, `--kubeconfig X`, `--context X`, …) and returns None
for anything else (help, NAME, --watch, unknown flags, missing values), leaving those to click
and its messages.
"""

from __future__ import annotations

import sys

_COMMON = {"-f": "filenames", "--filename": "filenames", "-n": "namespace", "--namespace": "namespace",
           "-o": "output", "--output": "output"}
# command words → (value flags, output formats, default output)
_COMMANDS = {
    ("render",): (_COMMON, ("yaml", "json"), "yaml"),
    ("rollout", "status"): ({**_COMMON, "--kubeconfig": "kubeconfig", "--context": "context"},
                            ("text", "yaml", "json"), "text"),
}


def parse_args(args: list[str]) -> tuple[str, dict] | None:
    """(command, its request) for a usual spelling of a fast command, else None."""
    for words, (value_flags, outputs, default_output) in _COMMANDS.items():
        if tuple(args[:len(words)]) == words:
            request = _parse(args[len(words):], value_flags, default_output)
            if request is None or not request["filenames"] or request["output"] not in outputs:
                return None
            return " ".join(words), request
    return None


def _parse(rest: list[str], value_flags: dict[str, str], default_output: str) -> dict | None:
    request: dict = {"filenames": [], "recursive": False, "output": default_output,
                     **{key: None for key in value_flags.values() if key not in ("filenames", "output")}}
    rest = list(rest)
    while rest:
        arg = rest.pop(0)
        if arg in ("-R", "--recursive"):
            request["recursive"] = True
            continue
        if arg.startswith("--"):
            flag, equals, value = arg.partition("=")
            if equals and not value:
                return None  # `--output=`: let click say what is wrong
        elif arg.startswith("-"):
            flag, value = arg[:2], arg[2:]
        else:
            return None  # an argument (NAME): click's
        key = value_flags.get(flag)
        if key is None:
            return None
        if not value:
            if not rest or (rest[0].startswith("-") and rest[0] != "-"):
                return None
            value = rest.pop(0)
        if key == "filenames":
            request["filenames"].append(value)
        else:
            request[key] = value
    return request


def run(command: str, request: dict) -> int:
    """Run a request `parse_args` returned: the command's exit code."""
    if command == "render":
        render_to_stdout(request)
        return 0
    return status_to_stdout(request)


def status_to_stdout(request: dict) -> int:
    """`rollout status -f …`: the sets from the files, their status from the cluster."""
    from kubectl_disagg.kube.cluster import Cluster
    from kubectl_disagg.core.sets import sets_from_files
    from kubectl_disagg.views.status import show_status

    sets = sets_from_files(request["filenames"], request["recursive"])
    with Cluster(request["kubeconfig"], request["context"]) as cluster:
        return show_status(cluster, sets, request["namespace"], request["output"])


def render_to_stdout(request: dict) -> None:
    """Load, validate, render and write in one piece: on any error stdout stays empty."""
    from kubectl_disagg.errors import UserError
    from kubectl_disagg.core.sets import load_sets
    from kubectl_disagg.core.model import DisaggregatedSet, namespace_conflict
    from kubectl_disagg.manifests.writer import format_objects
    from kubectl_disagg.gitops.state import is_state_document
    from kubectl_disagg.gitops.files import render_with_state_file

    loaded = load_sets(request["filenames"], request["recursive"])
    conflicts = [namespace_conflict(ds, request["namespace"]) for ds in loaded.sets]
    if any(conflicts):
        raise UserError([problem for problem in conflicts if problem])
    if request.get("state") and len(loaded.sets) != 1:
        raise UserError([f"--state {request['state']}: names the rollout state of one DisaggregatedSet, and the "
                         f"input holds {len(loaded.sets)}"])
    from kubectl_disagg.core.model import namespace_for
    from kubectl_disagg.gitops.state import unmatched_states

    # A directory is checked whole: every rollout state read as input belongs to a set of it.
    unmatched = unmatched_states([item for item in loaded.items if not isinstance(item, DisaggregatedSet)],
                                 [(ds.name, namespace_for(ds, request["namespace"])) for ds in loaded.sets])
    if unmatched:
        raise UserError(unmatched)
    objects: list = []
    for item in loaded.items:
        if isinstance(item, DisaggregatedSet):
            objects.extend(render_with_state_file(item, request["namespace"], request.get("state"),
                                                  request.get("require_state", False)))
        elif not is_state_document(item.data):  # a rollout state is read by its set, never applied
            objects.append(item.data)
    for warning in loaded.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    # Nothing to render is still a result: JSON gets kubectl's empty List, YAML an empty stream.
    sys.stdout.write(format_objects(objects, request["output"]))
