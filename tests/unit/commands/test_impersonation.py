"""kubectl's impersonation flags (--as, --as-group, --as-uid) on every command that talks to the
cluster, sent as Impersonate-* headers on each request (design §9.5)."""

from __future__ import annotations

import pytest

from kubectl_disagg.commands._help import commands
from kubectl_disagg.commands.root import cli
from tests.fakes.servers import Server
from tests.support.cli import run
from tests.support.kube import write_kubeconfig

IMPERSONATION = {"as_user", "as_groups", "as_uid"}
NOT_FOUND = (b'HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 52\r\n\r\n'
             b'{"kind":"Status","code":404,"reason":"NotFound","x":1}')


def test_every_command_that_reaches_the_cluster_takes_the_impersonation_flags():
    for path, command, _ in commands(cli):
        names = {param.name for param in command.params}
        if "kubeconfig" in names:
            assert IMPERSONATION <= names, " ".join(path)


def answering_not_found(peer) -> None:
    while peer.request()[0]:
        peer.send(NOT_FOUND)


@pytest.mark.parametrize("argv", [
    ["rollout", "status", "llm"],
    ["rollout", "history", "llm"],
    ["rollout", "step", "llm"],
])
def test_each_request_carries_the_impersonation_headers(argv, tmp_path, capsys):
    server = Server(*[answering_not_found] * 8)
    try:
        config = write_kubeconfig(tmp_path, f"http://127.0.0.1:{server.port}")
        code, _, err = run([*argv, "--kubeconfig", str(config), "--as", "alice", "--as-group", "ops",
                            "--as-group", "sre", "--as-uid", "42"], capsys)
    finally:
        server.close()
    assert code != 2, err  # the flags are accepted
    assert server.heads, err
    for head in server.heads:
        fields = [tuple(line.split(": ", 1)) for line in head.split("\r\n")[1:]]
        assert ("Impersonate-User", "alice") in fields and ("Impersonate-Uid", "42") in fields, head
        assert [value for name, value in fields if name == "Impersonate-Group"] == ["ops", "sre"], head
