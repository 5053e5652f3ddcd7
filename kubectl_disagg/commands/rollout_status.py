"""`kubectl disagg rollout status`: status derived from the live LWS, like the controller's.

Exit codes: 0 Available; 1 error (bad input, API error); 2 usage; 3 not Available (without
--watch); 4 --watch timed out before the set became Available.
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _options
from kubectl_disagg.kube.wait import Deadline
from kubectl_disagg.views.status import show_status


@click.command()
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_options.cluster
@_options.output("text", "yaml", "json", default="text")
@click.option("-w", "--watch", is_flag=True, help="Keep reporting as the LWS change, until Available.")
@_options.timeout("0", "With --watch: give up after this long (30s, 5m, 1h; 0 waits forever).")
def status(name, filenames, recursive, namespace, kubeconfig, context, output, watch, timeout) -> None:
    """Show a DisaggregatedSet's rollout status, derived from its live LeaderWorkerSets.

    Give NAME to read the DisaggregatedSet stored in the cluster, or -f for a file.

    \b
    Exit codes:
      0  Available: every role has all replicas ready at the current revision
      1  error (invalid input, API server unreachable or refusing)
      2  usage error
      3  not Available (without --watch)
      4  --watch timed out before the set became Available
    """
    _options.check_name_or_files(name, filenames)
    sets = _options.sets_from_files(filenames, recursive) if filenames else None
    deadline = Deadline.after(timeout).at
    with _options.session(kubeconfig, context) as cluster:
        sets = sets or [_options.stored_set(cluster, name, namespace)]
        code = show_status(cluster, sets, namespace, output, watch=watch, deadline=deadline, write=_echo)
    if code:
        raise SystemExit(code)


def _echo(text: str) -> None:
    click.echo(text, nl=False)
