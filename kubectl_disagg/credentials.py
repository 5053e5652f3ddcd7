"""Who the requests are from: a bearer token or a client certificate, kept fresh.

A `Credentials` hands the transport the Authorization header for each request: a static
token, a token file re-read as it rotates (a pod's projected service-account token), or what an
exec credential plugin prints, run again when its credential expires or the API server answers
401. The plugin's output never reaches a message: it may hold the credential.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from kubectl_disagg.errors import UserError
from kubectl_disagg.kubeconfig import Connection, ExecPlugin, check_token

TOKEN_FILE_REREAD_SECONDS = 60.0  # client-go re-reads a token file once a minute
EXPIRY_MARGIN_SECONDS = 10.0  # refresh an exec credential this long before it expires
EXEC_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class Issued:
    """What an exec plugin returned."""

    token: str | None
    client_cert_pem: bytes | None
    client_key_pem: bytes | None
    expires: float | None  # time.time() value


class Credentials:
    """The current credential of one connection (thread-safe: concurrent writes share it)."""

    def __init__(self, connection: Connection):
        self._connection = connection
        self._lock = threading.Lock()
        self._token = connection.token
        self._token_read_at = -float("inf")
        self._file_cached: str | None = None
        self._issued: Issued | None = None
        if connection.exec_plugin is not None and not connection.token:
            self._issued = run_exec(connection, connection.exec_plugin)

    @property
    def client_certificate(self) -> tuple[bytes, bytes] | None:
        """(certificate PEM, key PEM) to present in the TLS handshake, if any."""
        issued = self._issued
        if issued is not None and issued.client_cert_pem and issued.client_key_pem:
            return issued.client_cert_pem, issued.client_key_pem
        if self._connection.client_cert_pem and self._connection.client_key_pem:
            return self._connection.client_cert_pem, self._connection.client_key_pem
        return None

    def authorization(self) -> str | None:
        """The Authorization header value for the next request, refreshed when due."""
        with self._lock:
            if self._token:
                return f"Bearer {self._token}"
            if self._connection.token_file:
                return f"Bearer {self._file_token()}"
            plugin = self._connection.exec_plugin
            if plugin is not None:
                if self._issued is None or _expired(self._issued):
                    self._issued = run_exec(self._connection, plugin)
                if self._issued.token:
                    return f"Bearer {self._issued.token}"
        return None

    def rejected(self) -> bool:
        """The server answered 401: drop what may have been revoked. True when asking again may help
        (a token file or an exec plugin can produce a new credential; a static token cannot)."""
        with self._lock:
            if self._connection.token:
                return False
            if self._connection.token_file:
                self._token_read_at = -float("inf")
                return True
            if self._connection.exec_plugin is not None:
                self._issued = run_exec(self._connection, self._connection.exec_plugin)
                return True
        return False

    def _file_token(self) -> str:
        now = time.monotonic()
        if now - self._token_read_at >= TOKEN_FILE_REREAD_SECONDS or self._file_cached is None:
            path = self._connection.token_file or ""
            try:
                with open(path, encoding="utf-8") as f:
                    token = f.read().strip()
            except (OSError, UnicodeDecodeError) as err:
                raise UserError(f"{self._connection.whose}: cannot read the token file {path}: "
                                f"{getattr(err, 'strerror', None) or err}") from None
            check_token(token, self._connection.whose, f"token file {path}")
            self._file_cached, self._token_read_at = token, now
        return self._file_cached


def _expired(issued: Issued) -> bool:
    return issued.expires is not None and time.time() >= issued.expires - EXPIRY_MARGIN_SECONDS


def run_exec(connection: Connection, plugin: ExecPlugin) -> Issued:
    """Run the user's exec credential plugin once and read its ExecCredential.

    Interactive plugins get the terminal only when there is one and the plugin allows it; the
    plugin's stderr is kept off the terminal (plugins print tokens in their errors).
    """
    user, where = connection.user_name, f"kubeconfig {connection.kubeconfig}"
    interactive = plugin.interactive_mode != "Never" and sys.stdin is not None and sys.stdin.isatty()
    if plugin.interactive_mode == "Always" and not interactive:
        raise UserError(f"{where}: the exec credential plugin of user {user} ({plugin.command}) needs a terminal "
                        "(interactiveMode: Always), and there is none")
    command = _resolve(plugin)
    if command is None:
        hint = f"; {plugin.install_hint.strip()}" if plugin.install_hint.strip() else ""
        raise UserError(f"{where}: the exec credential plugin of user {user} ({plugin.command}) was not "
                        f"found{hint}")
    spec: dict = {"interactive": interactive}
    if plugin.provide_cluster_info:
        spec["cluster"] = connection.cluster_info
    info = {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": spec}
    env = {**os.environ, **dict(plugin.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
    try:
        finished = subprocess.run([command, *plugin.args], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, stdin=None if interactive else subprocess.DEVNULL,
                                  timeout=EXEC_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise UserError(_failure(where, user, plugin, f"did not finish in {EXEC_TIMEOUT_SECONDS:.0f} s")) from None
    except OSError as err:
        raise UserError(_failure(where, user, plugin, f"could not be started ({err.strerror or err})")) from None
    if finished.returncode != 0:
        raise UserError(_failure(where, user, plugin, f"exited with status {finished.returncode}"))
    issued = _parse_credential(finished.stdout, plugin)
    if issued is None:
        raise UserError(_failure(where, user, plugin, "gave no usable credential"))
    if issued.token is not None:
        check_token(issued.token, connection.whose, f"exec plugin {plugin.command}")
    return issued


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
