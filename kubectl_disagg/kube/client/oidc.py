"""The kubeconfig's `auth-provider: oidc`, as client-go's oidc provider runs it
(plugin/pkg/client/auth/oidc/oidc.go): the id-token is sent while its JWT `exp` claim is more
than 10 s away; then the refresh-token buys a new one from the identity provider's token
endpoint (found by OpenID Connect discovery), and the new tokens are written back into the
kubeconfig file that holds the user, as kubectl wrote them. No token ever reaches a message.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import urllib.parse
from collections.abc import Mapping
from typing import Any

from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client.kubeconfig import Connection, OidcProvider
from kubectl_disagg.kube.client.transport import NetworkError, Transport
from kubectl_disagg.manifests.reader import load_plain
from kubectl_disagg.manifests.writer import to_yaml, write_atomically

EXPIRY_DELTA_SECONDS = 10  # client-go: a token this close to its expiry counts as expired
REQUEST_TIMEOUT_SECONDS = 30.0


def valid_id_token(config: Mapping[str, str], now: float) -> str | None:
    """The id-token while it is valid at `now` (seconds since the epoch; a token without a
    readable `exp` is not, as in client-go)."""
    token = str(config.get("id-token") or "")
    expiry = jwt_expiry(token)
    return token if expiry is not None and now + EXPIRY_DELTA_SECONDS < expiry else None


def jwt_expiry(token: str) -> float | None:
    """The `exp` claim of a JWT (seconds since the epoch), or None when `token` has none."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        return float(claims["exp"]) if isinstance(claims, dict) and "exp" in claims else None
    except (ValueError, TypeError, KeyError, binascii.Error, OverflowError):
        return None


def refreshed(provider: OidcProvider) -> dict[str, str]:
    """A new id-token (and the refresh-token, when the provider rotated it) from the identity
    provider, written back into the kubeconfig; the provider's config as it now is."""
    config = provider.config
    refresh_token = str(config.get("refresh-token") or "")
    if not refresh_token:
        raise _refusal(provider, "has no valid id-token and no refresh-token to get one with")
    issuer = str(config["idp-issuer-url"]).rstrip("/")
    discovery = _call(provider, "GET", issuer + "/.well-known/openid-configuration")
    token_url = discovery.get("token_endpoint") if isinstance(discovery, dict) else None
    if not isinstance(token_url, str) or not token_url:
        raise _refusal(provider, f"could not refresh: the discovery document of {issuer} names no token_endpoint")
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    client = (str(config["client-id"]), str(config.get("client-secret") or ""))
    # golang.org/x/oauth2 (AuthStyleAutoDetect): the client's credentials in a Basic header
    # first, then, should the provider refuse that, in the form.
    try:
        try:
            answer = _call(provider, "POST", token_url, form, basic=client)
        except _Refused:
            answer = _call(provider, "POST", token_url, {**form, "client_id": client[0], "client_secret": client[1]})
    except _Refused as refused:
        raise _refusal(provider, f"could not refresh: its token endpoint answered {refused}") from None
    fields = answer if isinstance(answer, dict) else {}
    id_token = fields.get("id_token")
    if not isinstance(id_token, str) or not id_token:
        raise _refusal(provider, "could not refresh: the token response holds no id_token (was the openid scope "
                                 "asked for at login, and does the provider return id tokens on refresh?)")
    new = {**config, "id-token": id_token}
    refresh = fields.get("refresh_token")
    if isinstance(refresh, str) and refresh:
        new["refresh-token"] = refresh
    _persist(provider, new)
    return new


class _Refused(Exception):
    """The identity provider answered with an error (status and OAuth `error` in the message)."""


def _refusal(provider: OidcProvider, what: str) -> UserError:
    return UserError(f"{provider.whose}: the oidc auth-provider {what}; log in again for fresh tokens, or use "
                     "kubelogin (kubectl oidc-login) as the user's exec credential plugin")


def _call(provider: OidcProvider, method: str, url: str, form: Mapping[str, str] | None = None,
          basic: tuple[str, str] | None = None) -> object:
    """One request to the identity provider (TLS trusting idp-certificate-authority[-data] when
    given, else the system's roots; the proxy from the environment, as client-go's transport),
    its JSON answer; _Refused for an error answer, UserError when there is none."""
    ca_pem = _idp_ca(provider)
    scheme, _, rest = url.partition("://")
    origin = f"{scheme}://{rest.split('/', 1)[0]}"
    transport = Transport(Connection(server=origin, whose=provider.whose, ca_pem=ca_pem), _NoCredentials())
    headers = {"Accept": "application/json"}
    body = None
    if form is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        body = urllib.parse.urlencode(form).encode()
    if basic is not None:
        pair = f"{urllib.parse.quote_plus(basic[0], safe='')}:{urllib.parse.quote_plus(basic[1], safe='')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    try:
        response = transport.request(method, url, body, headers, read_timeout=REQUEST_TIMEOUT_SECONDS)
    except NetworkError as err:
        raise _refusal(provider, f"could not refresh: no answer from {origin} ({err})") from None
    finally:
        transport.close()
    try:
        answer = json.loads(response.data)
    except (ValueError, UnicodeDecodeError):
        answer = None
    if not 200 <= response.status <= 299:
        error = answer.get("error") if isinstance(answer, dict) else None
        detail = f"{response.status} {response.reason}".strip() + (f", {error}" if isinstance(error, str) else "")
        if method == "POST":
            raise _Refused(detail)
        raise _refusal(provider, f"could not refresh: {origin} answered {detail}")
    return answer


class _NoCredentials:
    """What an identity provider is asked with: nothing of the Kubernetes user's."""

    client_certificate = None
    certificate_issue = 0

    def authorization(self) -> None:
        return None

    def rejected(self) -> bool:
        return False


def _idp_ca(provider: OidcProvider) -> bytes | None:
    data = provider.config.get("idp-certificate-authority-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=True)
        except (binascii.Error, ValueError):
            raise UserError(f"{provider.whose}: idp-certificate-authority-data is not valid base64") from None
    path = provider.config.get("idp-certificate-authority")
    if not path:
        return None
    path = os.path.join(os.path.dirname(provider.kubeconfig_path), os.path.expanduser(str(path)))
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise UserError(f"{provider.whose}: idp-certificate-authority {path}: {err.strerror or err}") from None


def _persist(provider: OidcProvider, config: Mapping[str, str]) -> None:
    """Write the refreshed tokens into the user's entry of the kubeconfig file that holds it, the
    rest of the file kept (as data: comments do not survive, as with kubectl), atomically and
    with the file's own permissions."""
    path = provider.kubeconfig_path
    try:
        with open(path, "rb") as f:
            # its shape is checked by the errors caught below, as a kubectl would fail on it
            document: Any = load_plain(f.read())
        users = document["users"]
        entry = next(u for u in users if isinstance(u, dict) and u.get("name") == provider.user_name)
        entry["user"]["auth-provider"]["config"] = dict(config)
        write_atomically(path, to_yaml(document).encode("utf-8"))
    except (OSError, ValueError, KeyError, TypeError, StopIteration) as err:
        detail = getattr(err, "strerror", None) or type(err).__name__
        raise UserError(f"{provider.whose}: the oidc tokens were refreshed but could not be written back to "
                        f"{path} ({detail}); log in again") from None
