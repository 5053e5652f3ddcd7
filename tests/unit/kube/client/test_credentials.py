"""No credential ever reaches a message: forged kubeconfigs in, one readable line out.

Each case runs a real command (`rollout status -f`) against a kubeconfig that holds a secret in
some form and checks the exit code, the message, and that the secret appears nowhere in stdout,
stderr or the log. No control plane: every case fails while loading the configuration.
"""

from __future__ import annotations

import logging
import stat

import pytest
import yaml

from kubectl_disagg.cli import main
from kubectl_disagg.kube.client.kubeconfig import redact_url
from tests.support.paths import EXAMPLES

SECRET = "s3cr3t-Tok3n"
EXAMPLE = str(EXAMPLES / "prefill-decode.yaml")


def kubeconfig(tmp_path, user: dict, server: str = "https://127.0.0.1:6443"):
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "alice", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "alice"}}],
    }, allow_unicode=True), encoding="utf-8")
    return path


def run_status(path, capsys, caplog) -> tuple[int, str]:
    capsys.readouterr()
    with caplog.at_level(logging.DEBUG), pytest.raises(SystemExit) as exited:
        main(["rollout", "status", "-f", EXAMPLE, "--kubeconfig", str(path)])
    out, err = capsys.readouterr()
    everything = out + err + caplog.text
    assert SECRET not in everything and "Traceback" not in everything
    assert out == ""
    return exited.value.code, err


def test_token_with_a_line_break_is_refused_without_printing_it(tmp_path, capsys, caplog):
    code, err = run_status(kubeconfig(tmp_path, {"token": f"{SECRET}\nX-Injected: 1"}), capsys, caplog)
    assert code == 1
    assert err.strip() == (f"user alice in kubeconfig {tmp_path / 'kubeconfig'}: the credential from its token "
                           "contains a line break, so it cannot be sent in an HTTP header (it is not shown "
                           "here); fix the token and try again")


def test_token_outside_latin1_is_refused_without_a_traceback(tmp_path, capsys, caplog):
    code, err = run_status(kubeconfig(tmp_path, {"token": f"{SECRET}\u20ac"}), capsys, caplog)
    assert code == 1 and "characters outside printable ASCII" in err


def test_userinfo_in_the_server_url_is_never_echoed(tmp_path, capsys, caplog):
    path = kubeconfig(tmp_path, {"token": "fine"}, server=f"https://admin:{SECRET}@127.0.0.1:6443")
    code, err = run_status(path, capsys, caplog)
    assert code == 1 and "https://***@127.0.0.1:6443 carries a user name and password" in err


def test_basic_auth_is_refused_instead_of_running_as_anonymous(tmp_path, capsys, caplog):
    code, err = run_status(kubeconfig(tmp_path, {"username": "alice", "password": SECRET}), capsys, caplog)
    assert code == 1 and "username/password (basic authentication)" in err and "system:anonymous" in err


def test_failing_exec_plugin_is_an_error_not_an_anonymous_request(tmp_path, capsys, caplog):
    plugin = tmp_path / "get-token"
    plugin.write_text(f"#!/bin/sh\necho 'refresh failed: token={SECRET}' >&2\nexit 1\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    path = kubeconfig(tmp_path, {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                          "command": str(plugin), "interactiveMode": "Never"}})
    code, err = run_status(path, capsys, caplog)
    assert code == 1
    assert err.splitlines() == [
        f"kubeconfig {path}: the exec credential plugin of user alice ({plugin}) exited with status 1; "
        "its output is not shown because it may hold credentials",
        f"run `{plugin}` yourself to see why, then try again",
    ]


def test_exec_plugin_printing_a_broken_token_is_refused(tmp_path, capsys, caplog):
    plugin = tmp_path / "get-token"
    credential = ('{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
                  f'"status":{{"token":"{SECRET}\\nX: y"}}}}')
    plugin.write_text(f"#!/bin/sh\nprintf '%s' '{credential}'\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    path = kubeconfig(tmp_path, {"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                          "command": str(plugin), "interactiveMode": "Never"}})
    code, err = run_status(path, capsys, caplog)
    assert code == 1 and f"from its exec plugin {plugin} contains a line break" in err


@pytest.mark.parametrize(("text", "expected"), [
    ("https://u:p@host:6443/x", "https://***@host:6443/x"),
    ("see http://token@h and https://h2", "see http://***@h and https://h2"),
    ("no url here", "no url here"),
])
def test_redact_url(text, expected):
    assert redact_url(text) == expected


@pytest.mark.parametrize("key", ["tokenFile", "client-certificate"])
def test_a_credential_file_without_end_is_refused_in_one_line(tmp_path, capsys, caplog, key):
    """/dev/zero as a tokenFile (or a certificate) was read until memory ran out (MemoryError)."""
    user = {"tokenFile": "/dev/zero"} if key == "tokenFile" else \
        {"client-certificate": "/dev/zero", "client-key": "/dev/zero"}
    code, err = run_status(kubeconfig(tmp_path, user), capsys, caplog)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "/dev/zero" in err and "larger than 10 MiB" in err
