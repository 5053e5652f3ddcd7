"""kubectl's -v/--v: each request on stderr at 6, headers at 7, bodies at 8 (cut) and 9 (whole);
credentials never shown."""

from __future__ import annotations

import re

import pytest

from kubectl_disagg.cli import kubectl_spellings
from kubectl_disagg.kube.client import verbosity
from kubectl_disagg.kube.client.transport import NetworkError
from tests.fakes.servers import answering
from tests.support.kube import get

SECRET_BODY = b'{"kind":"Secretish","token":"s3cr3t","spec":{"password":"hunter2"},"x":"' + b"y" * 20_000 + b'"}'


@pytest.fixture(autouse=True)
def quiet_afterwards():
    yield
    verbosity.set_level(0)


def answer(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


@pytest.mark.parametrize("level", [0, 5, 6, 7, 8, 9])
def test_each_level_shows_what_kubectls_does_and_never_a_credential(serve, capsys, level):
    verbosity.set_level(level)
    server, transport = serve(answering(answer(SECRET_BODY)))
    get(transport, "/api/v1/pods?limit=1", method="POST", body=b'{"refresh_token":"r3fr3sh"}')
    err = capsys.readouterr().err
    lines = err.splitlines()
    if level < 6:
        assert err == ""
        return
    assert re.fullmatch(rf"I\d{{4}} \d\d:\d\d:\d\d POST http://127\.0\.0\.1:{server.port}/api/v1/pods\?limit=1 "
                        r"200 OK in \d+ milliseconds", lines[0]), lines[0]
    assert ("Authorization: Bearer <masked>" in err) == (level >= 7)
    assert ("Request Body:" in err and "Response Body:" in err) == (level >= 8)
    for secret in ("t0ken", "s3cr3t", "hunter2", "r3fr3sh"):
        assert secret not in err
    if level >= 8:
        assert '"token":"<redacted>"' in err and '"refresh_token":"<redacted>"' in err
        assert ("[truncated" in err) == (level == 8)


def test_a_request_without_an_answer_is_shown_too(capsys):
    from tests.fakes.servers import transport_to
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    verbosity.set_level(6)
    with pytest.raises(NetworkError):
        get(transport_to(f"http://127.0.0.1:{port}"))
    assert "GET http://127.0.0.1:%d/api (no answer: " % port in capsys.readouterr().err


def test_kubectls_spellings_of_the_flag():
    assert kubectl_spellings(["rollout", "status", "-v=6", "x"]) == ["rollout", "status", "-v", "6", "x"]
    assert kubectl_spellings(["--v=8", "--", "-v=6"]) == ["--v=8", "--", "-v=6"]


def test_the_flag_reaches_the_requests_of_a_command(tmp_path, capsys):
    """No -v/--v flag existed."""
    from kubectl_disagg.cli import main
    from tests.support.paths import EXAMPLES
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "kubeconfig"
    config.write_text(f"apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{{name: c, cluster: "
                      f"{{server: 'http://127.0.0.1:{port}'}}}}]\nusers: [{{name: u, user: {{token: t0ken}}}}]\n"
                      "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    for flag in (["-v=6"], ["--v", "6"], ["-v6"]):
        with pytest.raises(SystemExit) as exited:
            main(["rollout", "status", "-f", str(EXAMPLES / "prefill-decode.yaml"), "--kubeconfig", str(config), *flag])
        err = capsys.readouterr().err
        assert exited.value.code == 1 and f"http://127.0.0.1:{port}/api" in err and "(no answer: " in err, err
        verbosity.set_level(0)
