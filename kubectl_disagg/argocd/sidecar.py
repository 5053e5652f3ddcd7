"""What Argo CD's sidecar runs: the environment and the application directory in, manifests out.

The click commands in `commands/cmp.py` (the argv of plugin.yaml) call these functions. The
only I/O is reading the directory (as every command reads one: `inputs`) and writing
stdout/stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from kubectl_disagg.argocd import contract as argocd
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import CmpExit
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.manifests.writer import format_objects


def generate(environ: Mapping[str, str], directory: str = ".") -> CmpExit:
    """Write the application's manifests to stdout, or refuse with one line on stderr."""
    try:
        parameters = argocd.read_parameters(environ)
        tree = inputs.read_walk(directory, parameters.reading, shown_as="")
        result = argocd.generate(tree, parameters, environ)
    except UserError as err:
        # Argo CD shows stderr in the UI as one message: say everything on one line.
        raise UserError(["; ".join(line.replace("\n", "\\n") for line in err.lines())]) from None
    for warning in result.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    sys.stdout.write(format_objects(result.objects, "yaml"))
    return CmpExit.OK


def discover(environ: Mapping[str, str], directory: str = ".") -> CmpExit:
    """Argo CD's `discover.find.command`: print the first file that the `include` parameter
    selects and that holds a DisaggregatedSet, and exit 0; print nothing and exit 0 when
    none does (the cmp-server's "no"). The repo-server runs it for named plugins too, with
    the Application's parameters in the environment, so `include` counts here as in
    generate. Invalid parameters are a real error: exit 1 with one line on stderr."""
    try:
        parameters = argocd.read_parameters(environ)
    except UserError as err:
        raise UserError(["; ".join(line.replace("\n", "\\n") for line in err.lines())]) from None
    path = inputs.first_chosen(directory, parameters.reading, argocd.holds_set)
    if path is not None:
        print(path)
    return CmpExit.OK
