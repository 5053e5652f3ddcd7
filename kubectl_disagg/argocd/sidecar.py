"""What Argo CD's sidecar runs: the environment and the application directory in, manifests out.

The click commands in `commands/cmp.py` (the argv of plugin.yaml) call these functions. The
only I/O is reading the directory and writing stdout/stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from kubectl_disagg.argocd import contract as argocd
from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.reader import MAX_INPUT_BYTES
from kubectl_disagg.manifests.writer import format_objects


def list_directory(directory: str) -> list[str]:
    """Relative paths (with `/`) of the regular files under `directory`; hidden directories
    (`.git`) skipped, symlinked directories not followed."""
    listing = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        relative = os.path.relpath(root, directory)
        for name in names:
            path = name if relative == "." else f"{relative}/{name}".replace(os.sep, "/")
            if os.path.isfile(os.path.join(root, name)):
                listing.append(path)
    return listing


def _read(directory: str, paths: list[str]) -> dict[str, bytes]:
    files = {}
    for path in paths:
        try:
            with open(os.path.join(directory, path), "rb") as handle:
                files[path] = handle.read(MAX_INPUT_BYTES + 1)
        except OSError as err:
            raise UserError([f"{path}: {err.strerror or err}"]) from None
    return files


def generate(environ: Mapping[str, str], directory: str = ".") -> int:
    """Write the application's manifests to stdout, or refuse with one line on stderr."""
    try:
        parameters = argocd.read_parameters(environ)
        paths = argocd.select_files(list_directory(directory), parameters)
        state = (_read(directory, [parameters.state_file])[parameters.state_file]
                 if os.path.isfile(os.path.join(directory, parameters.state_file)) else None)
        result = argocd.generate(_read(directory, paths), parameters, environ, state)
    except UserError as err:
        # Argo CD shows stderr in the UI as one message: say everything on one line.
        raise UserError(["; ".join(line.replace("\n", "\\n") for line in err.lines())]) from None
    for warning in result.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    sys.stdout.write(format_objects(result.objects, "yaml"))
    return 0


def discover(environ: Mapping[str, str], directory: str = ".") -> int:
    """Argo CD's `discover.find.command`: print the first file that the `include` parameter
    selects and that holds a DisaggregatedSet, and exit 0; print nothing and exit 0 when
    none does (the cmp-server's "no"). The repo-server runs it for named plugins too, with
    the Application's parameters in the environment, so `include` counts here as in
    generate. Invalid parameters are a real error: exit 1 with one line on stderr."""
    try:
        parameters = argocd.read_parameters(environ)
    except UserError as err:
        raise UserError(["; ".join(line.replace("\n", "\\n") for line in err.lines())]) from None
    for path in argocd.select_files(list_directory(directory), parameters):
        try:
            with open(os.path.join(directory, path), "rb") as handle:
                text = handle.read(MAX_INPUT_BYTES + 1)
        except OSError:
            continue
        if argocd.holds_set(text):
            print(path)
            return 0
    return 0
