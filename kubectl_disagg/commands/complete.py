"""`kubectl_complete-disagg`: the console script kubectl (>= 1.26) runs for `kubectl disagg <TAB>`,
answering from the click command tree through the completion engine (`views/completion.py`).
An entry of its own, beside `cli.main`: the commands never load the completion engine, and
completing never loads a command's library. The names only the cluster knows (namespaces, the
sets of a namespace) and the kubeconfig's contexts come from `KubeNames`, which loads the API
client only when such a name is asked for, and answers nothing rather than fail. Its sessions
open as every command's do: through the `Options` it is handed (`sessions`, the clock).
"""

from __future__ import annotations

import copy
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from kubectl_disagg.commands._options import Options
from kubectl_disagg.commands.root import cli
from kubectl_disagg.views.completion import Completion, complete

if TYPE_CHECKING:
    from kubectl_disagg.kube.session import Session


CLUSTER_SECONDS = 3.0  # the longest a TAB waits for the API server's names


def complete_main(argv: list[str] | None = None, options: Options | None = None) -> None:
    """The console script (argv None: the command line); `options`: the clock and the sessions
    the cluster's names are asked through (None: the system clock and the kubeconfig's server)."""
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        result = complete(cli, words, KubeNames(Options() if options is None else options))
    except Exception:  # noqa: BLE001 - a completion must never print a traceback into a prompt
        result = Completion((), 1)  # Cobra's ShellCompDirectiveError
    sys.stdout.write(result.lines())


class KubeNames:
    """`views.completion.ClusterNames` from the kubeconfig and the API server it names, each
    session opened by `options` (its `sessions`, else the kubeconfig's), as a command's is."""

    def __init__(self, options: Options):
        self.options = options

    def namespaces(self, kubeconfig: str | None, context: str | None) -> list[str]:
        return self._asked(kubeconfig, context, lambda session: session.namespace_names())

    def contexts(self, kubeconfig: str | None) -> list[str]:
        from kubectl_disagg.kube.client import context_names

        try:
            return context_names(kubeconfig)
        except Exception:  # noqa: BLE001 - no kubeconfig, or not one: nothing to offer
            return []

    def set_names(self, kubeconfig: str | None, context: str | None, namespace: str | None) -> list[str]:
        return self._asked(kubeconfig, context,
                           lambda session: session.set_names(namespace or session.default_namespace))

    def _asked(self, kubeconfig: str | None, context: str | None, ask: Callable[[Session], list[str]],
               seconds: float = CLUSTER_SECONDS) -> list[str]:
        """`ask(session)`'s names, or none after `seconds`: a TAB must not wait on the client's
        retries of a server that does not answer (the thread is left to die with the process)."""
        from kubectl_disagg.commands._session import session as opened

        asked = copy.copy(self.options)
        asked.kubeconfig, asked.context = kubeconfig, context
        answer: list[list[str]] = []

        def run() -> None:
            try:
                with opened(asked) as session:
                    answer.append(ask(session))
            except Exception:  # noqa: BLE001 - unreachable, forbidden, no kubeconfig: nothing to offer
                pass

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(seconds)
        return answer[0] if answer else []
