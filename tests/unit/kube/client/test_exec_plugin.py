"""Exec credential plugins on a terminal, as kubectl runs them: the login prompt on the
person's screen, their answer to the plugin, no time limit; without one, today's quiet run."""

from __future__ import annotations

import os
import pty
import select
import socket
import subprocess
import sys

import pytest

from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client import exec_plugin
from kubectl_disagg.kube.client.credentials import Credentials
from kubectl_disagg.kube.client.kubeconfig import load_configuration
from tests.support.kube import credential, exec_user, plugin, single
from tests.support.paths import EXAMPLES

PROMPT = "open https://login.example/device and enter code WXYZ-1234, then press Enter"
LIMIT = 60.0  # a hung test ends here; nothing below depends on how long anything takes


def login_plugin(tmp_path, mode: str) -> dict:
    """A device-code plugin: prompt on stderr, read the answer from stdin, then issue a token."""
    script = plugin(tmp_path, f"printf '%s\\n' '{PROMPT}' >&2\nread answer\n"
                              f"printf '%s' \"$answer\" > {tmp_path / 'answered'}\n"
                              f"printf '%s' '{credential('tok')}'\n")
    return exec_user(script, interactiveMode=mode)


def run_on_a_terminal(argv: list[str], answer: bytes) -> tuple[int, str]:
    """`argv` with a pseudo-terminal as its stdin, stdout and stderr; `answer` typed once the
    prompt shows. Everything the terminal showed, and the exit code."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(argv, stdin=terminal, stdout=terminal, stderr=terminal, close_fds=True)
    os.close(terminal)
    shown, answered = b"", False
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], LIMIT)
            if not ready:
                raise AssertionError(f"the terminal stayed quiet; it showed {shown!r}")
            try:
                data = os.read(controller, 4096)
            except OSError:  # EIO: every process holding the terminal is gone
                break
            if not data:
                break
            shown += data
            if not answered and PROMPT.encode() in shown:
                os.write(controller, answer)
                answered = True
    finally:
        os.close(controller)
        code = process.wait(LIMIT)
    return code, shown.decode(errors="replace")


def test_an_interactive_plugin_shows_its_prompt_on_the_terminal_and_reads_the_answer(tmp_path):
    with socket.socket() as probe:  # a server nobody listens on: the command fails after the login
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = single(tmp_path, login_plugin(tmp_path, "IfAvailable"), {"server": f"http://127.0.0.1:{port}"})
    code, shown = run_on_a_terminal([sys.executable, "-m", "kubectl_disagg", "rollout", "status", "-f",
                                     str(EXAMPLES / "prefill-decode.yaml"), "--kubeconfig", str(path)], b"done\n")
    assert PROMPT in shown  # passed through, as kubectl passes it
    assert (tmp_path / "answered").read_text() == "done"  # the terminal's stdin reached the plugin
    assert code == 1 and f"cannot reach the API server at http://127.0.0.1:{port}: connection refused" in shown


def test_interactive_means_no_timeout_and_the_terminal_inherited(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(exec_plugin, "_terminal", lambda: True)
    monkeypatch.setattr(exec_plugin.subprocess, "run",
                        lambda argv, **kwargs: calls.append(kwargs) or subprocess.CompletedProcess(
                            argv, 0, credential("tok").encode()))
    connection, _ = load_configuration(str(single(tmp_path, login_plugin(tmp_path, "Always"))), None)
    assert Credentials(connection).authorization() == "Bearer tok"
    assert "timeout" not in calls[0] and "stdin" not in calls[0] and "stderr" not in calls[0]


@pytest.mark.parametrize(("mode", "terminal"), [("Never", True), ("IfAvailable", False)])
def test_without_a_terminal_or_with_never_the_plugin_runs_quietly_with_a_limit(tmp_path, monkeypatch, mode, terminal):
    calls = []
    monkeypatch.setattr(exec_plugin, "_terminal", lambda: terminal)
    monkeypatch.setattr(exec_plugin, "_run_quietly",
                        lambda argv, env: calls.append(argv) or subprocess.CompletedProcess(
                            argv, 0, credential("tok").encode()))
    connection, _ = load_configuration(str(single(tmp_path, login_plugin(tmp_path, mode))), None)
    Credentials(connection)
    assert len(calls) == 1


def test_a_plugin_past_its_timeout_is_killed_with_every_child_it_started(tmp_path, monkeypatch):
    """Killing the plugin alone left its children running after the timeout."""
    monkeypatch.setattr(exec_plugin, "_terminal", lambda: False)
    monkeypatch.setattr(exec_plugin, "EXEC_TIMEOUT_SECONDS", 1.0)
    pid_file = tmp_path / "child.pid"
    script = plugin(tmp_path, f"sleep 300 </dev/null >/dev/null 2>&1 &\necho $! > {pid_file}\nsleep 300\n")
    connection, _ = load_configuration(str(single(tmp_path, exec_user(script))), None)
    with pytest.raises(UserError) as raised:
        Credentials(connection)
    assert "did not finish in 1s" in raised.value.lines()[0]
    child = int(pid_file.read_text())
    for _ in range(100):  # SIGKILL is delivered at once; the exit shows when its parent (init) reaps it
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as stat:
            if stat.read().split(") ")[1].startswith("Z"):
                break
        import time
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        raise AssertionError("the plugin's child outlived the timeout")


def test_a_failing_interactive_plugin_points_at_what_it_printed(tmp_path, monkeypatch):
    monkeypatch.setattr(exec_plugin, "_terminal", lambda: True)
    monkeypatch.setattr(exec_plugin.subprocess, "run",
                        lambda argv, **kwargs: subprocess.CompletedProcess(argv, 3, b""))
    connection, _ = load_configuration(str(single(tmp_path, login_plugin(tmp_path, "IfAvailable"))), None)
    with pytest.raises(UserError) as raised:
        Credentials(connection)
    assert raised.value.lines()[0].endswith("exited with status 3 (what it printed is above)")
