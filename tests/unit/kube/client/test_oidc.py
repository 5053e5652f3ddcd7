"""The oidc auth-provider as client-go's oidc provider runs it, against an identity provider
written here: a valid id-token is sent as it is; an expired one is refreshed with the
refresh-token at the discovered token endpoint and the new tokens written back into the
kubeconfig; what cannot be refreshed is refused in one line pointing at kubelogin."""

from __future__ import annotations

import base64
import http.server
import json
import threading
import time
import urllib.parse

import pytest
import yaml

from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client.credentials import Credentials
from kubectl_disagg.kube.client.kubeconfig import load_configuration
from tests.support.kube import write

SECRET = "s3cret-refresh"


def jwt(expires_in: float) -> str:
    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part({'iss': 'idp', 'exp': int(time.time() + expires_in)})}.c2ln"


class IdentityProvider:
    """Discovery and a token endpoint on loopback; `answers` script the token endpoint's
    replies (status, body), one per request; every request is kept in `seen`."""

    def __init__(self, *answers: tuple[int, dict]):
        self.answers, self.seen = list(answers), []
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                provider.seen.append(("GET", self.path, dict(self.headers), ""))
                self._answer(200, {"issuer": provider.issuer, "token_endpoint": f"{provider.issuer}/token"})

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                provider.seen.append(("POST", self.path, dict(self.headers), body))
                self._answer(*provider.answers.pop(0))

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def idp():
    started = []

    def start(*answers):
        provider = IdentityProvider(*answers)
        started.append(provider)
        return provider

    yield start
    for provider in started:
        provider.close()


def kubeconfig(tmp_path, config: dict):
    path = write(tmp_path / "config", clusters=[("c", {"server": "https://10.0.0.1:6443"})],
                 users=[("other", {"token": "t"}), ("u", {"auth-provider": {"name": "oidc", "config": config}})],
                 contexts=[("ctx", {"cluster": "c", "user": "u"})], current="ctx")
    path.chmod(0o600)
    return path


def config_of(path) -> dict:
    users = {u["name"]: u["user"] for u in yaml.safe_load(path.read_text())["users"]}
    return users


def test_a_valid_id_token_is_sent_without_asking_the_identity_provider(tmp_path, idp):
    provider = idp()
    token = jwt(3600)
    path = kubeconfig(tmp_path, {"idp-issuer-url": provider.issuer, "client-id": "kube", "id-token": token,
                                 "refresh-token": SECRET})
    connection, _ = load_configuration(str(path), None)
    assert Credentials(connection).authorization() == f"Bearer {token}" and provider.seen == []


@pytest.mark.parametrize("expires_in", [-3600, 5])  # expired, or within client-go's 10 s
def test_an_expired_id_token_is_refreshed_and_written_back(tmp_path, idp, expires_in):
    new = jwt(3600)
    provider = idp((200, {"access_token": "a", "token_type": "Bearer", "id_token": new, "refresh_token": "r2"}))
    config = {"idp-issuer-url": provider.issuer + "/", "client-id": "kube", "client-secret": "p@ss",
              "id-token": jwt(expires_in), "refresh-token": SECRET, "extra-scopes": "groups"}
    path = kubeconfig(tmp_path, config)
    connection, _ = load_configuration(str(path), None)
    credentials = Credentials(connection)
    assert credentials.authorization() == f"Bearer {new}"
    assert credentials.authorization() == f"Bearer {new}" and len(provider.seen) == 2  # refreshed once
    (_, discovery, _, _), (_, token_path, headers, body) = provider.seen
    assert discovery == "/.well-known/openid-configuration" and token_path == "/token"
    assert urllib.parse.parse_qs(body) == {"grant_type": ["refresh_token"], "refresh_token": [SECRET]}
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"kube:p%40ss").decode()
    users = config_of(path)
    assert users["u"]["auth-provider"]["config"] == {**config, "id-token": new, "refresh-token": "r2"}
    assert users["other"] == {"token": "t"} and path.stat().st_mode & 0o777 == 0o600


def test_a_provider_refusing_basic_authentication_is_asked_with_the_client_in_the_form(tmp_path, idp):
    new = jwt(3600)
    provider = idp((401, {"error": "invalid_client"}), (200, {"access_token": "a", "id_token": new}))
    path = kubeconfig(tmp_path, {"idp-issuer-url": provider.issuer, "client-id": "kube", "id-token": jwt(-1),
                                 "refresh-token": SECRET})
    connection, _ = load_configuration(str(path), None)
    assert Credentials(connection).authorization() == f"Bearer {new}"
    form = urllib.parse.parse_qs(provider.seen[-1][3], keep_blank_values=True)
    assert form["client_id"] == ["kube"] and "Authorization" not in provider.seen[-1][2]
    assert config_of(path)["u"]["auth-provider"]["config"]["refresh-token"] == SECRET  # not rotated: kept


@pytest.mark.parametrize(("answers", "config", "message"), [
    ((), {"id-token": jwt(-1)}, "has no valid id-token and no refresh-token to get one with"),
    ((), {"id-token": "not-a-jwt", "refresh-token": ""}, "has no valid id-token and no refresh-token"),
    (((400, {"error": "invalid_grant"}), (400, {"error": "invalid_grant"})), {"refresh-token": SECRET},
     "400 Bad Request, invalid_grant"),
    (((200, {"access_token": "a"}),), {"refresh-token": SECRET}, "the token response holds no id_token"),
])
def test_what_cannot_be_refreshed_is_refused_in_one_line(tmp_path, idp, answers, config, message):
    provider = idp(*answers)
    path = kubeconfig(tmp_path, {"idp-issuer-url": provider.issuer, "client-id": "kube", **config})
    connection, _ = load_configuration(str(path), None)
    with pytest.raises(UserError) as raised:
        Credentials(connection).authorization()
    (line,) = raised.value.lines()
    assert line.startswith(f"user u in kubeconfig {path}: the oidc auth-provider ") and message in line
    assert line.endswith("log in again for fresh tokens, or use kubelogin (kubectl oidc-login) as the user's "
                         "exec credential plugin")
    assert SECRET not in line


@pytest.mark.parametrize("missing", ["idp-issuer-url", "client-id"])
def test_an_issuer_and_a_client_id_are_required_as_kubectl_requires_them(tmp_path, missing):
    config = {"idp-issuer-url": "https://idp.example", "client-id": "kube", "id-token": jwt(3600)}
    del config[missing]
    with pytest.raises(UserError) as raised:
        load_configuration(str(kubeconfig(tmp_path, config)), None)
    assert raised.value.lines() == [f"user u in kubeconfig {tmp_path / 'config'}: the oidc auth-provider needs "
                                    f"{missing} (kubectl refuses it too)"]
