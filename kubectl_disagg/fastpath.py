"""`kubectl disagg render` without click: the same command, for the common spellings only.

`parse_render_args` accepts exactly what the click command accepts in the usual forms
(`-f X`, `--filename=X`, `-R`, `-n X`, `-o yaml|json`, …) and returns None for anything
else (help, unknown flags, missing values), leaving those to click and its messages.
"""

from __future__ import annotations

import sys

_VALUE_FLAGS = {"-f": "filenames", "--filename": "filenames", "-n": "namespace",
                "--namespace": "namespace", "-o": "output", "--output": "output"}
_OUTPUTS = ("yaml", "json")


def parse_render_args(args: list[str]) -> dict | None:
    if not args or args[0] != "render":
        return None
    request: dict = {"filenames": [], "recursive": False, "namespace": None, "output": "yaml"}
    rest = args[1:]
    while rest:
        arg = rest.pop(0)
        if arg in ("-R", "--recursive"):
            request["recursive"] = True
            continue
        if arg.startswith("--"):
            flag, equals, value = arg.partition("=")
            if equals and not value:
                return None  # `--output=`: let click say what is wrong
        else:
            flag, value = arg[:2], arg[2:]
        key = _VALUE_FLAGS.get(flag)
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
    if not request["filenames"] or request["output"] not in _OUTPUTS:
        return None
    return request


def render_to_stdout(request: dict) -> None:
    """Load, validate, render and write in one piece: on any error stdout stays empty."""
    from kubectl_disagg.errors import UserError
    from kubectl_disagg.load import load_sets
    from kubectl_disagg.model import DisaggregatedSet, namespace_conflict
    from kubectl_disagg.output import format_objects
    from kubectl_disagg.rollout_state import is_state_document
    from kubectl_disagg.state_files import render_with_state_file

    loaded = load_sets(request["filenames"], request["recursive"])
    conflicts = [namespace_conflict(ds, request["namespace"]) for ds in loaded.sets]
    if any(conflicts):
        raise UserError([problem for problem in conflicts if problem])
    if request.get("state") and len(loaded.sets) != 1:
        raise UserError([f"--state {request['state']}: names the rollout state of one DisaggregatedSet, and the "
                         f"input holds {len(loaded.sets)}"])
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
