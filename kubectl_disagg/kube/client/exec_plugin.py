"""Exec credential plugins (client.authentication.k8s.io): run the user's plugin, read the
ExecCredential it prints. Its output never reaches a message: it may hold the credential.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass

from kubectl_disagg.core.api.durations import format_duration
from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client.kubeconfig import Connection, ExecPlugin, check_token
from kubectl_disagg.manifests.source import JsonObject

EXEC_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class Issued:
    """What an exec plugin returned; each field may be None; `expires` is a time.time() value."""

    token: str | None
    client_cert_pem: bytes | None
    client_key_pem: bytes | None
    expires: float | None


def run_exec(connection: Connection, plugin: ExecPlugin) -> Issued:
    """Run the user's exec credential plugin once and read its ExecCredential.

    With a terminal on stdin and an `interactiveMode` other than Never, the plugin runs as
    kubectl runs it (client-go's exec authenticator): the terminal's stdin and stderr are its
    own, for a login prompt or a device code, and it is waited for as long as the person takes.
    Otherwise it gets no stdin, its stderr is kept off the screen (plugins print tokens in their
    errors) and it has EXEC_TIMEOUT_SECONDS.
    """
    user, where = connection.user_name, f"kubeconfig {connection.kubeconfig}"
    interactive = plugin.interactive_mode != "Never" and _terminal()
    if plugin.interactive_mode == "Always" and not interactive:
        raise UserError(f"{where}: the exec credential plugin of user {user} ({plugin.command}) needs a terminal "
                        "(interactiveMode: Always), and there is none")
    command = _resolve(plugin)
    if command is None:
        hint = f"; {plugin.install_hint.strip()}" if plugin.install_hint.strip() else ""
        raise UserError(f"{where}: the exec credential plugin of user {user} ({plugin.command}) was not "
                        f"found{hint}")
    spec: JsonObject = {"interactive": interactive}
    if plugin.provide_cluster_info:
        spec["cluster"] = connection.cluster_info
    info = {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": spec}
    env = {**os.environ, **dict(plugin.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
    try:
        if interactive:  # stdin and stderr are the terminal's: the prompt shows, the answer reaches it
            finished = subprocess.run([command, *plugin.args], env=env, stdout=subprocess.PIPE, check=False)
        else:
            finished = _run_quietly([command, *plugin.args], env)
    except subprocess.TimeoutExpired:
        raise UserError(_failure(where, user, plugin, f"did not finish in {format_duration(EXEC_TIMEOUT_SECONDS)}")) from None
    except OSError as err:
        raise UserError(_failure(where, user, plugin, f"could not be started ({err.strerror or err})")) from None
    if finished.returncode != 0:
        if interactive:
            raise UserError(f"{where}: the exec credential plugin of user {user} ({plugin.command}) exited with "
                            f"status {finished.returncode} (what it printed is above)")
        raise UserError(_failure(where, user, plugin, f"exited with status {finished.returncode}"))
    issued = _parse_credential(finished.stdout, plugin)
    if issued is None:
        raise UserError(_failure(where, user, plugin, "gave no usable credential"))
    if issued.token is not None:
        check_token(issued.token, connection.whose, f"exec plugin {plugin.command}")
    return issued


def _run_quietly(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """The plugin without a terminal, within EXEC_TIMEOUT_SECONDS, in a process group of its own:
    at the timeout (or Ctrl-C) the whole group is killed, so that no child it started outlives it
    (killing the plugin alone left a `sleep` or a browser helper running)."""
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                          start_new_session=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=EXEC_TIMEOUT_SECONDS)
        except BaseException:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:  # the group is already gone
                pass
            process.wait()
            raise
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def _terminal() -> bool:
    """Whether stdin is a terminal (client-go asks the same of os.Stdin)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # closed
        return False


def _resolve(plugin: ExecPlugin) -> str | None:
    """The plugin's executable: a bare name on PATH, a relative path from the kubeconfig's directory."""
    if os.sep not in plugin.command:
        return shutil.which(plugin.command)
    path = plugin.command if os.path.isabs(plugin.command) else os.path.join(plugin.base_dir, plugin.command)
    return path if os.path.isfile(path) else None


def _failure(where: str, user: str, plugin: ExecPlugin, how: str) -> list[str]:
    return [f"{where}: the exec credential plugin of user {user} ({plugin.command}) {how}; "
            "its output is not shown because it may hold credentials",
            f"run `{plugin.command}` yourself to see why, then try again"]


def _parse_credential(stdout: bytes, plugin: ExecPlugin) -> Issued | None:
    """An ExecCredential's status, or None when the output is not one (or holds no credential)."""
    try:
        document = json.loads(stdout)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(document, dict) or document.get("kind") != "ExecCredential" \
            or document.get("apiVersion") != plugin.api_version:
        return None
    status = document.get("status")
    if not isinstance(status, dict):
        return None
    token = status.get("token")
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if not (isinstance(token, str) and token) and not (isinstance(cert, str) and isinstance(key, str) and cert and key):
        return None
    return Issued(token=token if isinstance(token, str) and token else None,
                  client_cert_pem=cert.encode() if isinstance(cert, str) and cert else None,
                  client_key_pem=key.encode() if isinstance(key, str) and key else None,
                  expires=_timestamp(status.get("expirationTimestamp")))


def _timestamp(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
