"""The flags that say which cluster and as whom, spelled as kubectl's: kubectl's impersonation
flags (`--as`, `--as-group`, `--as-uid`) on every command that talks to the cluster (`_session.cluster`
adds them with the session's other flags), and the connection flags of the commands that reach
it only for a stored set NAME. `_session` turns them into the client's `Impersonation` (sent as
Impersonate-User, Impersonate-Group and Impersonate-Uid headers)."""

from __future__ import annotations

import click

from kubectl_disagg.commands._options import F, gathered


def impersonation(func: F) -> F:
    """kubectl's --as, --as-group and --as-uid: the user, groups and uid the requests act as."""
    func = click.option("--as-uid", "as_uid", default=None, metavar="UID", expose_value=False, callback=gathered,
                        help="UID to impersonate for the operation.")(func)
    func = click.option("--as-group", "as_groups", multiple=True, metavar="GROUP", expose_value=False,
                        callback=gathered, help="Group to impersonate for the operation; repeatable.")(func)
    return click.option("--as", "as_user", default=None, metavar="USER", expose_value=False, callback=gathered,
                        help="Username to impersonate for the operation: a user or a service account "
                             "(system:serviceaccount:NAMESPACE:NAME).")(func)


def cluster_for_name(func: F) -> F:
    """--kubeconfig, --context and the impersonation flags of a command that edits -f files
    offline or a stored set NAME (`set image`, `rollout restart`): they matter only with NAME."""
    func = impersonation(func)
    func = click.option("--context", default=None, expose_value=False, callback=gathered,
                        help="The kubeconfig context to use (with NAME).")(func)
    return click.option("--kubeconfig", default=None, expose_value=False, callback=gathered,
                        help="Path to the kubeconfig file (with NAME).")(func)
