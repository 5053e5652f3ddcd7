"""Who the requests are from: a bearer token or a client certificate, kept fresh.

A `Credentials` hands the transport the Authorization header for each request: a static
token, a token file re-read as it rotates (a pod's projected service-account token), an oidc
auth-provider's id-token refreshed at expiry (oidc.py), or what an exec credential plugin
prints, run again when its credential expires or the API server answers 401. The plugin's
output never reaches a message: it may hold the credential.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace

from kubectl_disagg.clock import SYSTEM_CLOCK, Clock
from kubectl_disagg.errors import UserError
import kubectl_disagg.kube.client.oidc as oidc
from kubectl_disagg.kube.client.exec_plugin import Issued, run_exec
from kubectl_disagg.kube.client.kubeconfig import Connection, ExecPlugin, OidcProvider, check_token, read_bounded

TOKEN_FILE_REREAD_SECONDS = 60.0  # client-go re-reads a token file once a minute
EXPIRY_MARGIN_SECONDS = 10.0  # refresh an exec credential this long before it expires


class Credentials:
    """The current credential of one connection (thread-safe: concurrent writes share it)."""

    def __init__(self, connection: Connection, clock: Clock = SYSTEM_CLOCK):
        self._connection, self._clock = connection, clock
        self._lock = threading.Lock()
        self._token = connection.token
        self._token_read_at = -float("inf")
        self._file_cached: str | None = None
        self._issued: Issued | None = None  # what the exec plugin last issued
        self._oidc_config: Mapping[str, str] | None = None  # the oidc auth-provider's config, as last refreshed
        if connection.exec_plugin is not None and not connection.token:
            self._issued = run_exec(connection, connection.exec_plugin)
        self.certificate_issue = 0  # counts the client certificates an exec plugin issued after the first

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
            if self._connection.oidc is not None:
                return f"Bearer {self._oidc_token(self._connection.oidc)}"
            plugin = self._connection.exec_plugin
            if plugin is not None:
                issued = self._issued
                if issued is None or _expired(issued, self._clock):
                    issued = self._reissue(plugin)
                if issued.token:
                    return f"Bearer {issued.token}"
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
                self._reissue(self._connection.exec_plugin)
                return True
        return False

    def _oidc_token(self, provider: OidcProvider) -> str:
        """The oidc id-token, refreshed once it expires (see oidc.py); only then, as client-go."""
        if self._oidc_config is None:
            self._oidc_config = provider.config
        token = oidc.valid_id_token(self._oidc_config, self._clock.now().timestamp())
        if token is None:
            refreshed = self._oidc_config = oidc.refreshed(replace(provider, config=self._oidc_config))
            token = refreshed["id-token"]
            check_token(token, self._connection.whose, "oidc auth-provider")
        return token

    def _reissue(self, plugin: ExecPlugin) -> Issued:
        """Run the plugin again; a new client certificate counts in `certificate_issue`, for the
        transport to present it on new connections (client-go rotates an exec-issued
        certificate the same way, closing the connections made with the old one)."""
        before = self.client_certificate if self._issued is not None else None
        issued = self._issued = run_exec(self._connection, plugin)
        if issued.client_cert_pem and self.client_certificate != before:
            self.certificate_issue += 1
        return issued

    def _file_token(self) -> str:
        now = self._clock.monotonic()
        if now - self._token_read_at >= TOKEN_FILE_REREAD_SECONDS or self._file_cached is None:
            path = self._connection.token_file or ""
            try:
                token = read_bounded(path).decode("utf-8").strip()
            except (OSError, UnicodeDecodeError) as err:
                raise UserError(f"{self._connection.whose}: cannot read the token file {path}: "
                                f"{getattr(err, 'strerror', None) or err}") from None
            check_token(token, self._connection.whose, f"token file {path}")
            self._file_cached, self._token_read_at = token, now
        return self._file_cached


def _expired(issued: Issued, clock: Clock) -> bool:
    return issued.expires is not None and clock.now().timestamp() >= issued.expires - EXPIRY_MARGIN_SECONDS
