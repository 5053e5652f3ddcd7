"""Finding the API server and credentials the way kubectl does: kubeconfig, context, namespace.

`load_configuration` returns a client Configuration and the context's namespace: from
--kubeconfig (else $KUBECONFIG, else ~/.kube/config) and --context (else the current one), or,
inside a pod with no kubeconfig at all, from the service account. Nothing a kubeconfig holds in
secret ever reaches a message.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from typing import Any

import yaml

from kubectl_disagg.errors import UserError
from kubectl_disagg.model import DEFAULT_NAMESPACE

DEFAULT_KUBECONFIG = "~/.kube/config"
SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def load_configuration(kubeconfig: str | None, context: str | None):
    """A client Configuration and the context's namespace, found the way kubectl finds them."""
    from kubernetes import client, config

    configuration = client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
    in_pod = bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    if not kubeconfig and not os.environ.get("KUBECONFIG") and in_pod and not os.path.exists(
            os.path.expanduser(DEFAULT_KUBECONFIG)):
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException as err:
            raise UserError(f"in-cluster configuration: {err}") from None
        _check_credentials(configuration, "the service account", exec_command=None)
        return configuration, _service_account_namespace()
    if kubeconfig and not os.path.isfile(os.path.expanduser(kubeconfig)):
        raise UserError(f"--kubeconfig {kubeconfig}: no such file")
    try:
        contexts, current = config.list_kube_config_contexts(path)
        active = _find_context(contexts, context, current, path)
        with _client_log_silenced() as failures:
            config.load_kube_config(path, context=active["name"], client_configuration=configuration,
                                    persist_config=False)
    except config.ConfigException as err:
        raise UserError(f"kubeconfig {path}: {redact_url(str(err))}") from None
    except (OSError, yaml.YAMLError, ValueError, TypeError, AttributeError) as err:
        # A truncated or hand-broken file: the client lets these through as they are.
        raise UserError(f"kubeconfig {path}: cannot be read: {' '.join(redact_url(str(err)).split())}") from None
    user_name = (active.get("context") or {}).get("user") or "?"
    exec_command = _exec_command(path, user_name)
    if failures and exec_command is not None and not _has_credentials(configuration):
        raise UserError(_exec_failure(path, user_name, exec_command, failures))
    _check_credentials(configuration, f"user {user_name} in kubeconfig {path}", exec_command)
    namespace = (active.get("context") or {}).get("namespace") or DEFAULT_NAMESPACE
    return configuration, namespace


# --- credentials ------------------------------------------------------------------------------
# Nothing a kubeconfig holds in secret (tokens, passwords, a URL's user info, what an exec
# plugin prints) ever reaches a message: errors name the user and the kubeconfig instead.

_VISIBLE_ASCII = re.compile(r"[\x20-\x7e]*")
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@")


def redact_url(text: str) -> str:
    """`text` with the user info of every URL in it (`https://user:secret@host`) blanked out."""
    return _URL_USERINFO.sub(lambda m: m.group("scheme") + "***@", text)


def _check_credentials(configuration: Any, whose: str, exec_command: str | None) -> None:
    """Refuse credentials that cannot be sent as an HTTP header, without printing them.

    Python's HTTP client would raise on them mid-request (a traceback holding the token);
    client-go refuses them too.
    """
    header = configuration.api_key.get("BearerToken") or configuration.api_key.get("authorization") or ""
    if header and not _VISIBLE_ASCII.fullmatch(header):
        source = f"exec plugin {exec_command}" if exec_command else "token"
        problem = "a line break" if ("\n" in header or "\r" in header) else "characters outside printable ASCII"
        raise UserError(f"{whose}: the credential from its {source} contains {problem}, so it cannot be "
                        "sent in an HTTP header (it is not shown here); fix the token and try again")
    if configuration.host and _URL_USERINFO.match(configuration.host):
        # Go's HTTP client would send these as basic auth; here they would only leak into messages.
        raise UserError(f"{whose}: the server URL {redact_url(configuration.host)} carries a user name and "
                        "password; Kubernetes API servers do not accept basic authentication: use a token, "
                        "a client certificate or an exec plugin in the user entry instead")
    if header.startswith("Basic "):
        raise UserError(f"{whose}: username/password (basic authentication) is set, which Kubernetes API "
                        "servers do not accept since v1.19 (requests would run as system:anonymous); use a "
                        "token, a client certificate or an exec plugin")


def _has_credentials(configuration: Any) -> bool:
    return bool(configuration.api_key.get("BearerToken") or configuration.cert_file)


def _exec_command(path: str, user_name: str) -> str | None:
    """The command of the user's exec credential plugin, if it has one."""
    try:
        with open(os.path.expanduser(path.split(os.pathsep)[0]), "rb") as f:
            document = yaml.safe_load(f) or {}
        users = document.get("users") or []
        entry = next((u.get("user") or {} for u in users if isinstance(u, dict) and u.get("name") == user_name), {})
        command = (entry.get("exec") or {}).get("command")
    except (OSError, yaml.YAMLError, AttributeError):
        return None
    return str(command) if command else None


def _exec_failure(path: str, user_name: str, command: str, failures: list[str]) -> list[str]:
    codes = [m.group(1) for text in failures if (m := re.search(r"process returned (\d+)", text))]
    how = f"exited with status {codes[0]}" if codes else "gave no usable credential"
    return [f"kubeconfig {path}: the exec credential plugin of user {user_name} ({command}) {how}; "
            "its output is not shown because it may hold credentials",
            f"run `{command}` yourself to see why, then try again"]


@contextlib.contextmanager
def _client_log_silenced() -> Iterator[list[str]]:
    """Keep the client's log lines (an exec plugin's stderr, tokens included) off the terminal.

    The client logs a failing exec plugin through the root logger and carries on without
    credentials; the lines are collected instead, so the caller can say what failed.
    """
    collected: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            collected.append(record.getMessage())

    root = logging.getLogger()
    handler = Collect()
    saved_handlers, saved_propagate = root.handlers[:], root.propagate
    root.handlers = [handler]
    try:
        yield collected
    finally:
        root.handlers = saved_handlers
        root.propagate = saved_propagate


def _find_context(contexts: list[dict] | None, wanted: str | None, current: dict | None, path: str) -> dict:
    if wanted is None:
        if not current:
            raise UserError(f"kubeconfig {path}: no current context; pass --context")
        return current
    for candidate in contexts or []:
        if candidate.get("name") == wanted:
            return candidate
    known = ", ".join(sorted(c.get("name", "") for c in contexts or [])) or "none"
    raise UserError(f'kubeconfig {path}: context "{wanted}" not found (contexts: {known})')


def _service_account_namespace() -> str:
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE_FILE) as f:
            return f.read().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE
