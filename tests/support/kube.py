"""Clients, requests and kubeconfig files for the kube client tests."""

from __future__ import annotations

import json
import pathlib
import stat

import yaml

from kubectl_disagg.kube.client.transport import Transport
from tests.fakes.servers import TIMEOUT


def get(transport: Transport, path: str = "/api", method: str = "GET", body: bytes | None = None, **kwargs):
    return transport.request(method, transport.base + path, body, {"Accept": "application/json"},
                             read_timeout=TIMEOUT, **kwargs)


def bounded(call, seconds: float):
    """`call()` in a thread, which must end within `seconds`: (what it raised or returned, the time it took)."""
    import threading
    import time
    out = {}

    def run():
        try:
            out["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            out["value"] = error
    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds}s"
    return out["value"], time.monotonic() - started


def write_kubeconfig(directory, server: str, namespace: str = "serving"):
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "down",
        "clusters": [{"name": "down", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "down", "context": {"cluster": "down", "user": "u", "namespace": namespace}}],
    }))
    return path


def write(path: pathlib.Path, *, clusters=(), users=(), contexts=(), current: str | None = None) -> pathlib.Path:
    document = {"apiVersion": "v1", "kind": "Config",
                "clusters": [{"name": n, "cluster": c} for n, c in clusters],
                "users": [{"name": n, "user": u} for n, u in users],
                "contexts": [{"name": n, "context": c} for n, c in contexts]}
    if current is not None:
        document["current-context"] = current
    path.write_text(yaml.safe_dump(document))
    return path


def plugin(tmp_path: pathlib.Path, body: str, name: str = "get-token") -> pathlib.Path:
    script = tmp_path / name
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def credential(token: str, expires: str | None = None) -> str:
    status = {"token": token, **({"expirationTimestamp": expires} if expires else {})}
    return json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status})


def exec_user(command: pathlib.Path | str, **extra) -> dict:
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(command),
                     "interactiveMode": "Never", **extra}}


def single(tmp_path, user: dict, cluster: dict | None = None, namespace: str | None = None) -> pathlib.Path:
    context = {"cluster": "c", "user": "u", **({"namespace": namespace} if namespace else {})}
    return write(tmp_path / "config", clusters=[("c", cluster or {"server": "https://10.0.0.1:6443"})],
                 users=[("u", user)], contexts=[("ctx", context)], current="ctx")
