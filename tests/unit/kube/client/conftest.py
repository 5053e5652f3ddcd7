"""Fixtures shared by the kube client tests: `serve` starts scripted local servers and closes them after the test."""

from __future__ import annotations

import ssl

import pytest

from kubectl_disagg.kube.client.transport import Transport
from tests.fakes.servers import Server, transport_to


@pytest.fixture
def serve():
    started: list[tuple[Server, Transport]] = []

    def start(*scripts, prefix: str = "", tls: ssl.SSLContext | None = None, **fields) -> tuple[Server, Transport]:
        server = Server(*scripts, tls=tls)
        scheme = "https" if tls is not None else "http"
        transport = transport_to(f"{scheme}://127.0.0.1:{server.port}{prefix}", **fields)
        started.append((server, transport))
        return server, transport

    yield start
    for server, transport in started:
        transport.close()
        server.close()
