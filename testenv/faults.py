"""A faulty network path to the local control plane (test code only).

    client ──TLS──▶ toxiproxy ──TLS──▶ faultproxy ──TLS──▶ kube-apiserver
               (TCP faults)      (counts writes; HTTP faults, stalls)

Both tools are built by hack/build-faults.sh (toxiproxy from the Go module proxy, faultproxy
from hack/faults/faultproxy). toxiproxy passes the TLS bytes through untouched; faultproxy
terminates TLS with the API server's own certificate (issued by the control plane's CA for
127.0.0.1), so a kubeconfig that only swaps the server URL for toxiproxy's listen address
verifies as before.

Which write gets hit is decided by counting, not by timing: faultproxy counts the writes to
leaderworkersets and services and applies the armed fault to the Nth one. A TCP fault (a
toxiproxy toxic) is added by faultproxy itself when the Nth write arrives, and taken away
once the connection closed or the client sent its next request; meanwhile every other request
and every new connection waits, so the toxic hits that one answer and nothing else.

`ApiServerRestart` kills the control plane's kube-apiserver (SIGKILL, as a crash) and starts it
again with the same flags on the same port, over the same etcd: for a client, connections are
refused until it is back.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testenv.controlplane import REPO_ROOT, ControlPlane, ControlPlaneError, _free_ports, _Process

RESTART_TIMEOUT = 180.0  # a loaded 2-core machine starts kube-apiserver in 10 to 60 s

BUILD_SCRIPT = REPO_ROOT / "hack" / "build-faults.sh"
BINARIES = ("toxiproxy-server", "faultproxy")
ENV_BIN_DIR = "KUBECTL_DISAGG_FAULTS_BIN"
PROXY_NAME = "apiserver"
CONTEXT = "faulty"

# No HTTP(S)_PROXY from the environment on loopback.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def ensure_fault_binaries() -> Path:
    """The directory holding toxiproxy-server and faultproxy (built on first use)."""
    override = os.environ.get(ENV_BIN_DIR)
    if override:
        path = Path(override)
    else:
        result = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
        if result.returncode != 0:
            raise ControlPlaneError(f"{BUILD_SCRIPT} failed with exit code {result.returncode} (see above)")
        path = Path(result.stdout.strip().splitlines()[-1])
    missing = [b for b in BINARIES if not os.access(path / b, os.X_OK)]
    if missing:
        raise ControlPlaneError(f"{path} lacks executable {', '.join(missing)}")
    return path


def _call(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with _opener.open(request, timeout=10) as response:
        payload = response.read()
    return json.loads(payload) if payload else None


@dataclass
class FaultState:
    writes: int
    fired: bool
    stalled: bool
    target: str


class FaultPath:
    """toxiproxy and faultproxy in front of `control_plane`; `kubeconfig` has a context
    `faulty` (the admin user) through them. Use as a context manager."""

    def __init__(self, control_plane: ControlPlane, bin_dir: Path, workdir: Path):
        self.cp, self.bin_dir, self.workdir = control_plane, bin_dir, workdir
        self._processes: list[_Process] = []
        self.toxiproxy_api = ""
        self.admin = ""
        self.kubeconfig = workdir / "kubeconfig-faulty"

    def __enter__(self) -> FaultPath:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        for process in reversed(self._processes):
            process.stop()
        self._processes.clear()

    # -- control -----------------------------------------------------------------------------

    def arm(self, nth: int, **fault: Any) -> None:
        """Hit the `nth` write from now on with `fault` (status=, body=, headers=, stall=, toxic=)."""
        _call("POST", f"{self.admin}/arm", {"nth": nth, **fault})

    def reset(self) -> None:
        """Disarm, zero the count, let a stalled request go (it fails: its client is gone)."""
        _call("POST", f"{self.admin}/reset")

    def state(self) -> FaultState:
        return FaultState(**_call("GET", f"{self.admin}/state"))

    def wait_stalled(self, process: subprocess.Popen, timeout: float = 60.0) -> FaultState:
        """Wait until `process` is held at the armed write; fail at once if it exits instead."""
        deadline = time.monotonic() + timeout
        while not (state := self.state()).stalled:
            if process.poll() is not None:
                out, err = process.communicate()
                raise AssertionError(f"exited {process.returncode} before the armed write ({state}):\n{out}{err}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no write stalled within {timeout:.0f}s: {state}")
            time.sleep(0.02)
        return state

    def toxics(self) -> list[dict]:
        return _call("GET", f"{self.toxiproxy_api}/proxies/{PROXY_NAME}/toxics")

    @contextlib.contextmanager
    def toxic(self, **spec: Any):
        """A toxic on every connection through the path while the `with` lasts (name=, type=,
        stream=, toxicity= the share of connections it hits, attributes=)."""
        _call("POST", f"{self.toxiproxy_api}/proxies/{PROXY_NAME}/toxics", spec)
        try:
            yield
        finally:
            _call("DELETE", f"{self.toxiproxy_api}/proxies/{PROXY_NAME}/toxics/{spec['name']}")

    # -- start-up ----------------------------------------------------------------------------

    def _start(self) -> None:
        (api_port,) = _free_ports(1)
        self.toxiproxy_api = f"http://127.0.0.1:{api_port}"
        toxiproxy = self._spawn("toxiproxy", [str(self.bin_dir / "toxiproxy-server"), "-host", "127.0.0.1",
                                              "-port", str(api_port)])
        self._wait_http(toxiproxy, f"{self.toxiproxy_api}/proxies")

        # faultproxy prints its two addresses on stdout first thing.
        log = self.workdir / "faultproxy.log"
        faultproxy = self._spawn("faultproxy", [
            str(self.bin_dir / "faultproxy"), f"-upstream={self.cp.server}", f"-ca={self.cp.ca_file}",
            f"-cert={self.cp.workdir / 'apiserver.crt'}", f"-key={self.cp.workdir / 'apiserver.key'}",
            f"-toxiproxy={self.toxiproxy_api}/proxies/{PROXY_NAME}",
        ], log)
        addresses = self._wait_addresses(faultproxy, log)
        self.admin = f"http://{addresses['admin']}"

        proxy = _call("POST", f"{self.toxiproxy_api}/proxies",
                      {"name": PROXY_NAME, "listen": "127.0.0.1:0", "upstream": addresses["api"]})
        self._write_kubeconfig(f"https://{proxy['listen']}")

    def _spawn(self, name: str, argv: list[str], log: Path | None = None) -> _Process:
        process = _Process(name, argv, log or self.workdir / f"{name}.log")
        self._processes.append(process)
        return process

    @staticmethod
    def _wait_http(process: _Process, url: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError):
                _call("GET", url)
                return
            if not process.running() or time.monotonic() > deadline:
                raise ControlPlaneError(f"{process.name} did not come up:\n{process.log_tail()}")
            time.sleep(0.05)

    @staticmethod
    def _wait_addresses(process: _Process, log: Path, timeout: float = 10.0) -> dict[str, str]:
        deadline = time.monotonic() + timeout
        while True:
            lines = dict(line.split(" ", 1) for line in log.read_text().splitlines()[:2] if " " in line)
            if {"api", "admin"} <= lines.keys():
                return {k: v.strip() for k, v in lines.items()}
            if not process.running() or time.monotonic() > deadline:
                raise ControlPlaneError(f"faultproxy did not come up:\n{process.log_tail()}")
            time.sleep(0.05)

    def _write_kubeconfig(self, server: str) -> None:
        config = yaml.safe_load(self.cp.kubeconfig.read_text())
        config["clusters"].append({"name": CONTEXT, "cluster": {
            "server": server, "certificate-authority": str(self.cp.ca_file)}})
        config["contexts"].append({"name": CONTEXT, "context": {
            "cluster": CONTEXT, "user": "admin", "namespace": "default"}})
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
        self.kubeconfig.chmod(0o600)


class ApiServerRestart:
    """Kill `control_plane`'s kube-apiserver now (`kill`, synchronous: once it returns nothing
    answers) and start it again from a thread after `down` seconds (`back` is set once it is
    ready again; `seconds_down` then says for how long nothing answered)."""

    def __init__(self, control_plane: ControlPlane, down: float = 1.0):
        self.cp, self.down = control_plane, down
        self.back = threading.Event()
        self.seconds_down = 0.0
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def kill(self) -> None:
        old = self.cp._apiserver
        assert old is not None and old.running(), "kube-apiserver is not running"
        argv, log = list(old.popen.args), old.log_path
        old._signal_group(signal.SIGKILL)
        old.popen.wait()
        old._log.close()
        killed = time.monotonic()
        self._thread = threading.Thread(target=self._start_again, args=(argv, log, killed), daemon=True)
        self._thread.start()

    def _start_again(self, argv: list[str], log: Path, killed: float) -> None:
        try:
            time.sleep(self.down)
            self.cp._apiserver = process = _Process("kube-apiserver", argv, log.with_name("kube-apiserver-restarted.log"))
            self.cp._wait(process, f"{self.cp.server}/readyz", time.monotonic() + RESTART_TIMEOUT,
                          lambda body: body.strip() == b"ok")
            self.seconds_down = time.monotonic() - killed
        except BaseException as error:  # noqa: BLE001 - reported by wait()
            self.error = error
        finally:
            self.back.set()
        # kube-apiserver dies with the thread that started it (PR_SET_PDEATHSIG, see
        # controlplane._die_with_parent): this one lives as long as the process.
        threading.Event().wait()

    def wait(self, timeout: float = RESTART_TIMEOUT + 30) -> float:
        """Until kube-apiserver answers again; the seconds it was down."""
        assert self.back.wait(timeout), "kube-apiserver did not come back"
        if self.error is not None:
            raise self.error
        return self.seconds_down
