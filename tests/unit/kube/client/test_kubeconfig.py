"""Reading kubeconfigs the way kubectl does, and the credentials they lead to (no API server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client import credentials as credentials_module
from kubectl_disagg.kube.client.credentials import Credentials
from kubectl_disagg.kube.client.kubeconfig import Impersonation, load_configuration
from kubectl_disagg.kube.client.transport import Transport, _proxy_for
from tests.support.cli import run
from tests.support.kube import credential, exec_user, plugin, single, write
from tests.support.paths import CERTS, EXAMPLES


CERT, KEY = CERTS / "unit-test-client.crt", CERTS / "unit-test-client.key"


# --- merging ------------------------------------------------------------------------------------


def test_kubeconfig_files_merge_first_definition_and_first_current_context_win(tmp_path, monkeypatch):
    first = write(tmp_path / "a", clusters=[("shared", {"server": "https://first:6443"})],
                  users=[("u", {"token": "t1"})], contexts=[("one", {"cluster": "shared", "user": "u"})])
    second = write(tmp_path / "b", clusters=[("shared", {"server": "https://second:6443"})],
                   users=[("u", {"token": "t2"})],
                   contexts=[("two", {"cluster": "shared", "user": "u", "namespace": "team"})], current="two")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)]))
    connection, namespace = load_configuration(None, None)
    assert (connection.server, connection.token, namespace) == ("https://first:6443", "t1", "team")
    connection, namespace = load_configuration(None, "one")
    assert namespace == "default"


def test_relative_paths_are_relative_to_the_kubeconfig(tmp_path):
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(CERT.read_bytes())
    (tmp_path / "token").write_text("from-file\n")
    path = single(tmp_path, {"tokenFile": "token", "client-certificate": str(CERT), "client-key": str(KEY)},
                  {"server": "https://10.0.0.1:6443", "certificate-authority": "pki/ca.crt"})
    connection, _ = load_configuration(str(path), None)
    assert connection.ca_pem == CERT.read_bytes()
    assert connection.token_file == str(tmp_path / "token")
    assert Credentials(connection).authorization() == "Bearer from-file"
    Transport(connection, Credentials(connection)).close()  # the CA and the client pair load


@pytest.mark.parametrize(("user", "cluster", "message"), [
    ({"client-certificate-data": "@@@", "client-key-data": "x"}, None, "client-certificate-data is not valid base64"),
    ({"client-certificate": str(CERT)}, None, "needs both client-certificate and client-key"),
    ({"auth-provider": {"name": "gcp", "config": {"access-token": "secret"}}}, None,
     "the gcp auth-provider is not supported"),
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}}, None,
     "exec apiVersion client.authentication.k8s.io/v1alpha1 is not supported"),
    ({"token": "t"}, {"server": ""}, "no server URL"),
    ({"token": "t"}, {"server": "10.0.0.1:6443"}, "is not an http(s) URL"),
    ({"token": "t"}, {"server": "https://h", "certificate-authority": "/nonexistent/ca.crt"},
     "certificate-authority /nonexistent/ca.crt: No such file or directory"),
    # kubectl refuses the pair: "specifying a root certificates file with the insecure flag is not allowed"
    ({"token": "t"}, {"server": "https://h", "insecure-skip-tls-verify": True, "certificate-authority": "ca.crt"},
     "cluster c: specifying a root certificates file with the insecure flag is not allowed"),
    ({"token": "t"}, {"server": "https://h", "insecure-skip-tls-verify": True, "certificate-authority-data": "eA=="},
     "cluster c: specifying a root certificates file with the insecure flag is not allowed"),
])
def test_bad_entries_are_named(tmp_path, user, cluster, message):
    with pytest.raises(UserError) as caught:
        load_configuration(str(single(tmp_path, user, cluster)), None)
    assert message in str(caught.value) and "secret" not in str(caught.value)


def test_impersonation_from_the_user_entry(tmp_path):
    path = single(tmp_path, {"token": "t", "as": "alice", "as-uid": "42", "as-groups": ["ops", "sre"],
                             "as-user-extra": {"scopes": ["a", "b"]}})
    connection, _ = load_configuration(str(path), None)
    assert connection.impersonate == (("Impersonate-User", "alice"), ("Impersonate-Uid", "42"),
                                      ("Impersonate-Group", "ops"), ("Impersonate-Group", "sre"),
                                      ("Impersonate-Extra-scopes", "a"), ("Impersonate-Extra-scopes", "b"))


def test_the_impersonation_flags_replace_the_user_entrys_fields(tmp_path):
    """kubectl's --as, --as-group, --as-uid override the entry's as, as-groups, as-uid field by field."""
    path = single(tmp_path, {"token": "t", "as": "alice", "as-uid": "42", "as-groups": ["ops"],
                             "as-user-extra": {"scopes": ["a"]}})
    connection, _ = load_configuration(str(path), None, Impersonation(user="bob", groups=("sre", "dev")))
    assert connection.impersonate == (("Impersonate-User", "bob"), ("Impersonate-Uid", "42"),
                                      ("Impersonate-Group", "sre"), ("Impersonate-Group", "dev"),
                                      ("Impersonate-Extra-scopes", "a"))
    plain = single(tmp_path, {"token": "t"})
    connection, _ = load_configuration(str(plain), None, Impersonation(user="carol", uid="7"))
    assert connection.impersonate == (("Impersonate-User", "carol"), ("Impersonate-Uid", "7"))
    assert load_configuration(str(plain), None)[0].impersonate == ()


def test_groups_without_a_user_to_impersonate_are_refused(tmp_path):
    with pytest.raises(UserError) as caught:
        load_configuration(str(single(tmp_path, {"token": "t"})), None, Impersonation(groups=("ops",)))
    assert "pass --as USER" in str(caught.value)


def test_no_kubeconfig_anywhere_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(UserError) as caught:
        load_configuration(None, None)
    assert str(caught.value).startswith("kubeconfig ~/.kube/config: no such file; pass --kubeconfig")


def test_a_bad_certificate_authority_is_refused(tmp_path):
    (tmp_path / "ca.crt").write_text("not a certificate")
    path = single(tmp_path, {"token": "t"}, {"server": "https://h:6443", "certificate-authority": "ca.crt"})
    connection, _ = load_configuration(str(path), None)
    with pytest.raises(UserError) as caught:
        Transport(connection, Credentials(connection))
    assert "certificate authority is not a PEM certificate" in str(caught.value)


# --- exec plugins ---------------------------------------------------------------------------------


def test_exec_plugin_token_is_refreshed_when_it_expires_and_after_a_401(tmp_path):
    counter = tmp_path / "runs"
    soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 5))  # inside the refresh margin
    script = plugin(tmp_path, f"echo run >> {counter}\nprintf '%s' '{credential('tok', soon)}'\n")
    connection, _ = load_configuration(str(single(tmp_path, exec_user(script))), None)
    creds = Credentials(connection)
    assert creds.authorization() == "Bearer tok"
    assert counter.read_text().count("run") == 2  # at load, then again: it expires within the margin
    assert creds.rejected() is True
    assert counter.read_text().count("run") == 3


def test_exec_plugin_is_told_about_the_cluster_when_it_asks(tmp_path):
    seen = tmp_path / "info.json"
    script = plugin(tmp_path, f"printf '%s' \"$KUBERNETES_EXEC_INFO\" > {seen}\nprintf '%s' '{credential('t')}'\n")
    user = exec_user(script, provideClusterInfo=True, env=[{"name": "EXTRA", "value": "1"}])
    connection, _ = load_configuration(str(single(tmp_path, user, {"server": "https://h:6443",
                                                                   "insecure-skip-tls-verify": True})), None)
    Credentials(connection)
    info = json.loads(seen.read_text())
    assert info["kind"] == "ExecCredential" and info["spec"]["interactive"] is False
    assert info["spec"]["cluster"] == {"server": "https://h:6443", "insecure-skip-tls-verify": True}


def test_a_missing_exec_plugin_gives_its_install_hint(tmp_path):
    user = exec_user("no-such-plugin-anywhere", installHint="install it with `brew install x`")
    connection, _ = load_configuration(str(single(tmp_path, user)), None)
    with pytest.raises(UserError) as caught:
        Credentials(connection)
    assert str(caught.value).endswith("(no-such-plugin-anywhere) was not found; install it with `brew install x`")


def test_exec_plugin_client_certificate_is_used(tmp_path):
    status = {"clientCertificateData": CERT.read_text(), "clientKeyData": KEY.read_text()}
    out = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status})
    (tmp_path / "out.json").write_text(out)
    script = plugin(tmp_path, f"cat {tmp_path / 'out.json'}\n")
    connection, _ = load_configuration(str(single(tmp_path, exec_user(script))), None)
    creds = Credentials(connection)
    assert creds.authorization() is None and creds.client_certificate == (CERT.read_bytes(), KEY.read_bytes())
    Transport(connection, creds).close()


def test_exec_plugin_wanting_a_terminal_without_one_is_refused(tmp_path):
    user = exec_user(plugin(tmp_path, "exit 0\n"))
    user["exec"]["interactiveMode"] = "Always"
    connection, _ = load_configuration(str(single(tmp_path, user)), None)
    with pytest.raises(UserError) as caught:
        Credentials(connection)
    assert "needs a terminal" in str(caught.value)


def test_static_token_is_not_retried_after_401(tmp_path):
    connection, _ = load_configuration(str(single(tmp_path, {"token": "t"})), None)
    assert Credentials(connection).rejected() is False


def test_token_file_is_read_again_after_a_401(tmp_path, monkeypatch):
    token = tmp_path / "token"
    token.write_text("one")
    connection, _ = load_configuration(str(single(tmp_path, {"tokenFile": str(token)})), None)
    creds = Credentials(connection)
    assert creds.authorization() == "Bearer one"
    token.write_text("two")
    assert creds.authorization() == "Bearer one"  # cached for a minute, as client-go does
    assert creds.rejected() and creds.authorization() == "Bearer two"
    monkeypatch.setattr(credentials_module, "TOKEN_FILE_REREAD_SECONDS", 0.0)
    token.write_text("three")
    assert creds.authorization() == "Bearer three"


# --- proxies -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("env", "configured", "server", "proxy"), [
    ({}, None, "https://api.example:6443", None),
    ({"HTTPS_PROXY": "proxy:3128"}, None, "https://api.example:6443", "http://proxy:3128"),
    ({"https_proxy": "http://p:1"}, None, "https://127.0.0.1:6443", None),  # loopback never
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".example"}, None, "https://api.example:6443", None),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, None, "https://10.1.2.3:6443", None),
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "other"}, None, "https://api.example:6443", "http://p:1"),
    ({"HTTP_PROXY": "http://p:1"}, None, "https://api.example:6443", None),  # https servers use HTTPS_PROXY
    ({"HTTPS_PROXY": "http://p:1"}, "http://kubeconfig:8080", "https://api.example:6443", "http://kubeconfig:8080"),
])
def test_proxy_choice_follows_go(monkeypatch, env, configured, server, proxy):
    for name in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _proxy_for(configured, server) == proxy


def test_cluster_commands_import_no_http_library(tmp_path):
    path = single(tmp_path, {"token": "t"})
    code = ("import sys\nfrom kubectl_disagg.kube.executor import ClusterExecutor\n"
            f"with ClusterExecutor({str(path)!r}) as cluster: pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'pydantic', 'urllib3')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cli_names_a_missing_kubeconfig(tmp_path, capsys):
    missing = tmp_path / "nope"
    code, _, err = run(["rollout", "step", "-f", str(EXAMPLES / "prefill-decode.yaml"),
                        "--kubeconfig", str(missing)], capsys)
    assert code == 1 and err.strip() == f"--kubeconfig {missing}: no such file"
