"""A throwaway Kubernetes control plane: real etcd + kube-apiserver, no kubelet.

This is the envtest idea for kubectl-disagg: everything the plugin does against
a cluster is exercised against the genuine API server, with the project's CRDs
(config/crd and testenv/crd) or, where they are present, the upstream ones
(validation, defaulting, status subresource, RBAC). Nothing runs
controllers, so tests (or :mod:`testenv.lws_simulator`) play
the LWS controller by writing LWS status themselves.

Usage::

    with ControlPlane() as cp:
        cp.kubectl("get", "leaderworkersets", "-A")
        api = cp.api_client("viewer")

or ``python -m testenv.controlplane`` (``make cluster``) for a playground: the same with the LWS
status simulator running, until Ctrl-C.

Only the standard library is used to bootstrap the cluster (TLS, tokens,
readiness, RBAC, CRDs); :meth:`ControlPlane.api_client` hands out a
``kubernetes`` client for callers that want one.

One module although long (over 700 lines): starting, checking and stopping the two servers
share the same state (ports, certificates, processes) and read best in one piece; it is test
environment code, not part of the plugin.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import http.client
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "EXAMPLES_NAMESPACE",
    "ControlPlane",
    "ControlPlaneError",
    "KubectlError",
    "USERS",
    "PROJECT_CRDS",
    "ensure_binaries",
    "upstream_crds_dir",
    "main",
    "playground_env",
    "playground_lines",
    "run_as_command",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-testenv.sh"
BINARIES = ("etcd", "kube-apiserver", "kubectl")

ENV_BIN_DIR = "KUBECTL_DISAGG_TESTENV_BIN"
ENV_CRDS_DIR = "KUBECTL_DISAGG_CRDS"
# KUBECTL_DISAGG_CRDS=project: the project's CRDs even where the upstream ones are present, as in
# a clone with nothing beside it.
PROJECT_ONLY = "project"

# The project's own CRDs: the DisaggregatedSet ones it ships, and an LWS CRD for this
# control plane (a real cluster has its LWS installation's).
PROJECT_CRDS = (REPO_ROOT / "config" / "crd", REPO_ROOT / "testenv" / "crd")
# The upstream CRDs, the conformance reference, where a checkout has them (CI does).
UPSTREAM_CRDS = REPO_ROOT.parent / "shared" / "crds"
# kubectl-disagg's own API (RolloutState, RolloutPolicy): no upstream counterpart, so it is installed from
# config/crd whichever CRD directories are chosen.
OWN_GROUP = "kubectl-disagg.x-k8s.io"

# CRDs the control plane must serve; every other *.yaml in the CRD directory is
# installed too. The LWS CRD is what kubectl-disagg writes; the
# DisaggregatedSet ones are what it reads; the RolloutState is what Argo CD applies for it.
REQUIRED_CRDS = (
    "leaderworkersets.leaderworkerset.x-k8s.io",
    "disaggregatedsets.disaggregatedset.x-k8s.io",
    "disaggregatedsetrolescalers.disaggregatedset.x-k8s.io",
    f"rolloutstates.{OWN_GROUP}",
    f"rolloutpolicies.{OWN_GROUP}",
)


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    # Namespaced ClusterRole binding created at start: (clusterrole, namespace).
    binding: tuple[str, str] | None = None


# `admin` is a cluster admin through the system:masters group. `viewer` may
# read (built-in `view` role) in `default` only. `nobody` is authenticated but
# bound to nothing, so it only gets the discovery permissions every user has.
USERS = (
    User("admin", groups=("system:masters",)),
    User("viewer", binding=("view", "default")),
    User("nobody"),
)

# The built-in aggregated roles are filled by the clusterrole-aggregation
# controller of kube-controller-manager, which we do not run. Without it
# `view` grants nothing; ControlPlane fills them in once at start. This role
# lets `view` (and through it `edit` and `admin`) read the CRDs under test, as
# the roles shipped with an LWS installation would.
CRD_AGGREGATION_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {
        "name": "kubectl-disagg-testenv:crds-view",
        "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
    },
    "rules": [
        {
            "apiGroups": ["leaderworkerset.x-k8s.io", "disaggregatedset.x-k8s.io", OWN_GROUP],
            "resources": ["*"],
            "verbs": ["get", "list", "watch"],
        }
    ],
}
AGGREGATED_ROLES = ("view", "edit", "admin")

SERVICE_CIDR = "10.96.0.0/16"
START_ATTEMPTS = 3  # each with fresh ports, in case another process grabs one
LOG_TAIL_LINES = 40


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or bootstrapped."""


class _PortInUse(ControlPlaneError):
    """A component lost the race for a port we picked; retry with new ones."""


class KubectlError(subprocess.CalledProcessError):
    """kubectl exited non-zero; unlike CalledProcessError, str() shows stderr."""

    def __str__(self) -> str:
        return f"{super().__str__()}\nstderr:\n{self.stderr}"


# --------------------------------------------------------------------------
# Locating binaries and CRDs


def ensure_binaries() -> Path:
    """Return the directory holding etcd, kube-apiserver and kubectl.

    ``$KUBECTL_DISAGG_TESTENV_BIN`` wins; otherwise hack/build-testenv.sh is
    run, which returns at once when its per-user cache is complete and builds
    the binaries from the Go module proxy when it is not.
    """
    override = os.environ.get(ENV_BIN_DIR)
    if override:
        return _check_bin_dir(Path(override), f"${ENV_BIN_DIR}")
    if not BUILD_SCRIPT.is_file():
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} not found; set {ENV_BIN_DIR} to a directory with "
            f"{', '.join(BINARIES)}"
        )
    # stderr is inherited so a cold build shows its progress and Go errors.
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False
    )
    if result.returncode != 0:
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} failed with exit code {result.returncode} "
            "(its output above shows why)"
        )
    return _check_bin_dir(Path(result.stdout.strip().splitlines()[-1]), str(BUILD_SCRIPT))


def _check_bin_dir(path: Path, origin: str) -> Path:
    missing = [b for b in BINARIES if not os.access(path / b, os.X_OK)]
    if missing:
        raise ControlPlaneError(f"{origin}: {path} lacks executable {', '.join(missing)}")
    return path


def upstream_crds_dir() -> Path | None:
    """``$KUBECTL_DISAGG_CRDS`` when set (None for ``project``), else ``../shared/crds`` when it
    exists, else None."""
    override = os.environ.get(ENV_CRDS_DIR)
    if override == PROJECT_ONLY:
        return None
    if override:
        return Path(override)
    return UPSTREAM_CRDS if UPSTREAM_CRDS.is_dir() else None


def load_crds(directories: Sequence[Path]) -> list[dict[str, Any]]:
    """Parse every CRD in ``directories``, plus the project's own API group's from config/crd
    where they lack it; fail naming the path if any is missing."""
    for directory in directories:
        if not directory.is_dir():
            raise ControlPlaneError(f"CRD directory {directory} does not exist (unset {ENV_CRDS_DIR} or fix it)")
    crds = [crd for directory in directories for crd in _crds_in(directory)]
    found = {c["metadata"]["name"] for c in crds}
    crds += [c for c in _crds_in(PROJECT_CRDS[0]) if c["spec"]["group"] == OWN_GROUP and c["metadata"]["name"] not in found]
    found = {c["metadata"]["name"] for c in crds}
    missing = [name for name in REQUIRED_CRDS if name not in found]
    if missing:
        raise ControlPlaneError(f"CRD directories {', '.join(map(str, directories))} lack {', '.join(missing)}")
    return crds


def _crds_in(directory: Path) -> list[dict[str, Any]]:
    # The upstream CRDs are over 1 MB each: libyaml parses them in a fraction
    # of the time the pure-Python loader needs.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crds = []
    for path in sorted(directory.glob("*.yaml")):
        with path.open() as f:
            crds += [d for d in yaml.load_all(f, Loader=loader) if d and d.get("kind") == "CustomResourceDefinition"]
    return crds


# --------------------------------------------------------------------------
# Processes


def _free_ports(count: int) -> list[int]:
    """Ports the kernel considers free right now (all held open together so
    they are distinct). Another process may still take one before our
    component binds it: start() retries on that."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def _load_prctl():
    # Resolved in the parent: the child between fork and exec should do as
    # little as possible (no dlopen, no allocation-heavy work).
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _load_prctl()
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Runs in the child before exec: have the kernel SIGKILL it when the
    thread that started it dies, even by SIGKILL, so a crashed test run does
    not leave an API server behind. Start control planes from a long-lived
    thread (the main thread, as pytest fixtures do)."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class _Process:
    """A component running in its own process group, logging to a file."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path):
        self.name = name
        self.log_path = log_path
        self._log = log_path.open("wb")
        try:
            self.popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                # Own session: a terminal's Ctrl-C reaches only Python, which
                # then stops apiserver before etcd, and killpg() reaches every
                # process the component might spawn.
                start_new_session=True,
                preexec_fn=_die_with_parent if _prctl else None,
            )
        except BaseException:
            self._log.close()
            raise

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the group, SIGKILL it after ``timeout``, reap the leader."""
        if self.running():
            self._signal_group(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.popen.wait()
        self._log.close()

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)


# --------------------------------------------------------------------------
# Safety net: stop every running control plane when the interpreter exits
# normally (atexit) or on SIGTERM/SIGHUP, whose default action would skip
# atexit. SIGKILL is covered by _die_with_parent.

_running: set[ControlPlane] = set()
_safety_net_lock = threading.Lock()
_safety_net_installed = False


def _stop_all() -> None:
    for cp in list(_running):
        cp.stop()


def _on_fatal_signal(signum: int, frame: Any) -> None:
    _stop_all()
    # Die the way the signal would have killed us, so the exit status is right.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_safety_net() -> None:
    global _safety_net_installed
    with _safety_net_lock:
        if _safety_net_installed:
            return
        _safety_net_installed = True
        atexit.register(_stop_all)
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread
        for sig in (signal.SIGTERM, signal.SIGHUP):
            # Never override a handler the application chose itself.
            if signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _on_fatal_signal)


# --------------------------------------------------------------------------
# TLS material and credentials


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(
        ["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed:\n{result.stderr}")


def _write_pki(workdir: Path) -> None:
    """A throwaway CA, a serving cert for 127.0.0.1/localhost signed by it,
    and the service-account token signing key pair. EC P-256 keys: instant to
    generate, and accepted everywhere these are used."""
    if shutil.which("openssl") is None:
        raise ControlPlaneError("the openssl command is needed to create TLS certificates")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2")
    _openssl("req", "-x509", *ec, "-subj", "/CN=kubectl-disagg-testenv-ca",
             "-keyout", "ca.key", "-out", "ca.crt", cwd=workdir)
    _openssl("req", "-x509", *ec, "-CA", "ca.crt", "-CAkey", "ca.key",
             "-subj", "/CN=kube-apiserver",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
             "-addext", "extendedKeyUsage=serverAuth",
             "-keyout", "apiserver.key", "-out", "apiserver.crt", cwd=workdir)
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-out", "sa.key", cwd=workdir)
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=workdir)


def _write_token_file(path: Path, tokens: dict[str, str]) -> None:
    # Static token file format: token,user,uid,"group1,group2"
    lines = []
    for user in USERS:
        groups = ",".join(user.groups)
        lines.append(f'{tokens[user.name]},{user.name},{user.name},"{groups}"')
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)


# --------------------------------------------------------------------------
# The control plane


class ControlPlane:
    """etcd + kube-apiserver on loopback, with tokens, RBAC and CRDs installed.

    Attributes available after :meth:`start`: ``server`` (https URL),
    ``kubeconfig`` (path; one context per user, named after it, ``admin``
    current), ``ca_file``, ``bin_dir``, ``workdir``.
    """

    def __init__(
        self,
        *,
        crds: Path | Sequence[Path] | None = None,
        bin_dir: Path | None = None,
        start_timeout: float = 120.0,
        keep_workdir: bool = False,
    ):
        # Default: the project's CRDs, unless $KUBECTL_DISAGG_CRDS names others.
        if crds is None:
            override = os.environ.get(ENV_CRDS_DIR)
            crds = Path(override) if override and override != PROJECT_ONLY else PROJECT_CRDS
        self._crd_dirs = (Path(crds),) if isinstance(crds, (str, Path)) else tuple(map(Path, crds))
        self._bin_dir_override = Path(bin_dir) if bin_dir else None
        self.start_timeout = start_timeout
        self.keep_workdir = keep_workdir
        self.bin_dir: Path | None = None
        self.workdir: Path | None = None
        self.server: str | None = None
        self.kubeconfig: Path | None = None
        self.ca_file: Path | None = None
        self._tokens: dict[str, str] = {}
        self._etcd: _Process | None = None
        self._apiserver: _Process | None = None
        self._opener: urllib.request.OpenerDirector | None = None
        # Re-entrant: the SIGTERM safety net may run stop() inside stop().
        self._stop_lock = threading.RLock()

    # -- lifecycle -------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ControlPlane:
        """Start and bootstrap; on any failure (or Ctrl-C) clean up and raise."""
        if self.workdir is not None:
            raise ControlPlaneError("a ControlPlane can be started only once")
        _install_safety_net()
        try:
            # Fail on missing inputs before spending time on processes.
            crds = load_crds(self._crd_dirs)
            self.bin_dir = (
                _check_bin_dir(self._bin_dir_override, "bin_dir")
                if self._bin_dir_override
                else ensure_binaries()
            )
            self.workdir = Path(tempfile.mkdtemp(prefix="kubectl-disagg-testenv-"))
            _running.add(self)
            self._prepare_workdir()
            self._start_processes()
            self._write_kubeconfig()
            self._bootstrap_rbac()
            self._install_crds(crds)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop apiserver, then etcd, and remove the work dir. Idempotent."""
        with self._stop_lock:
            self._stop_processes()
            if self.workdir is not None and not self.keep_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            _running.discard(self)

    def running(self) -> bool:
        """Whether etcd and kube-apiserver are both still running."""
        procs = (self._etcd, self._apiserver)
        return all(p is not None and p.running() for p in procs)

    @property
    def pids(self) -> dict[str, int]:
        """PIDs of the running components (empty once stopped)."""
        return {p.name: p.pid for p in (self._etcd, self._apiserver) if p is not None}

    def _prepare_workdir(self) -> None:
        assert self.workdir is not None
        _write_pki(self.workdir)
        self.ca_file = self.workdir / "ca.crt"
        self._opener = urllib.request.build_opener(
            # Loopback requests must never go through an HTTP(S)_PROXY from the env.
            urllib.request.ProxyHandler({}),
            urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=str(self.ca_file))),
        )
        self._tokens = {u.name: secrets.token_hex(16) for u in USERS}
        _write_token_file(self.workdir / "tokens.csv", self._tokens)

    def _start_processes(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        for attempt in range(1, START_ATTEMPTS + 1):
            etcd_port, peer_port, api_port = _free_ports(3)
            try:
                self._launch_etcd(etcd_port, peer_port, deadline)
                self._launch_apiserver(etcd_port, api_port, deadline)
                self.server = f"https://127.0.0.1:{api_port}"
                return
            except _PortInUse:
                self._stop_processes()
                # The next etcd gets other URLs: it must not find a member
                # bootstrapped with the old ones.
                shutil.rmtree(self.workdir / "etcd", ignore_errors=True)
                if attempt == START_ATTEMPTS:
                    raise

    def _stop_processes(self) -> None:
        # apiserver first: it would otherwise spin on a vanished etcd.
        for proc in (self._apiserver, self._etcd):
            if proc is not None:
                proc.stop()
        self._apiserver = self._etcd = None

    # The _launch_* methods record the process before waiting for it, so that
    # whatever interrupts the wait (timeout, Ctrl-C) still gets it stopped.

    def _launch_etcd(self, port: int, peer_port: int, deadline: float) -> None:
        assert self.workdir is not None and self.bin_dir is not None
        client_url, peer_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{peer_port}"
        # etcd is reachable only from this machine and only holds test data,
        # so plain HTTP and no fsync (much faster on slow disks) are fine.
        self._etcd = etcd = _Process("etcd", [
            str(self.bin_dir / "etcd"),
            "--name=testenv",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=testenv={peer_url}",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ], self.workdir / "etcd.log")
        self._wait(etcd, f"{client_url}/health", deadline, lambda body: b'"true"' in body)

    def _launch_apiserver(self, etcd_port: int, port: int, deadline: float) -> None:
        assert self.workdir is not None and self.bin_dir is not None
        w = self.workdir
        self._apiserver = apiserver = _Process("kube-apiserver", [
            str(self.bin_dir / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={w / 'certs'}",
            f"--tls-cert-file={w / 'apiserver.crt'}",
            f"--tls-private-key-file={w / 'apiserver.key'}",
            f"--token-auth-file={w / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={w / 'sa.pub'}",
            f"--service-account-signing-key-file={w / 'sa.key'}",
            # Nothing creates the `default` ServiceAccount (no
            # kube-controller-manager), so this plugin would reject every Pod.
            "--disable-admission-plugins=ServiceAccount",
            "--profiling=false",
        ], w / "kube-apiserver.log")
        self._wait(apiserver, f"https://127.0.0.1:{port}/readyz", deadline, lambda body: body.strip() == b"ok")

    def _wait(self, proc: _Process, url: str, deadline: float, is_ready) -> None:
        """Poll ``url`` until ``is_ready(body)``; fail fast if ``proc`` exits."""
        headers = {"Authorization": f"Bearer {self._tokens['admin']}"} if url.startswith("https") else {}
        while True:
            if not proc.running():
                tail = proc.log_tail()
                if "address already in use" in tail:
                    raise _PortInUse(f"{proc.name}: port taken:\n{tail}")
                raise ControlPlaneError(
                    f"{proc.name} exited with code {proc.popen.returncode} while starting; "
                    f"last lines of {proc.log_path.name}:\n{tail}"
                )
            # Refused, reset, TLS not up yet, not ready (HTTP 500)...: poll on.
            with contextlib.suppress(OSError, http.client.HTTPException):
                req = urllib.request.Request(url, headers=headers)
                with self._opener.open(req, timeout=2) as resp:
                    if is_ready(resp.read()):
                        return
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"{proc.name} not ready at {url} within {self.start_timeout:.0f}s; "
                    f"last lines of {proc.log_path.name}:\n{proc.log_tail()}"
                )
            time.sleep(0.1)

    # -- kubeconfig and clients ------------------------------------------

    def _write_kubeconfig(self) -> None:
        assert self.workdir is not None
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "testenv", "cluster": {
                "server": self.server, "certificate-authority": str(self.ca_file)}}],
            "users": [{"name": u.name, "user": {"token": self._tokens[u.name]}} for u in USERS],
            "contexts": [{"name": u.name, "context": {
                "cluster": "testenv", "user": u.name, "namespace": "default"}} for u in USERS],
            "current-context": "admin",
        }
        self.kubeconfig = self.workdir / "kubeconfig"
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
        self.kubeconfig.chmod(0o600)

    def token(self, user: str = "admin") -> str:
        """Bearer token of ``user`` (one of :data:`USERS`)."""
        try:
            return self._tokens[user]
        except KeyError:
            raise KeyError(f"unknown user {user!r}; known: {', '.join(self._tokens)}") from None

    def api_client(self, user: str = "admin"):
        """A ``kubernetes.client.ApiClient`` authenticated as ``user``."""
        # Imported on use: it takes a quarter of a second, and nothing else
        # here needs it (start-up, `python -m`).
        from kubernetes import client

        config = client.Configuration(
            host=self.server,
            api_key={"BearerToken": self.token(user)},
            api_key_prefix={"BearerToken": "Bearer"},
            ssl_ca_cert=str(self.ca_file),
        )
        return client.ApiClient(config)

    def kubectl(
        self,
        *args: str,
        user: str = "admin",
        input: str | None = None,
        check: bool = True,
        timeout: float = 120.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run the matching kubectl as ``user``; raise KubectlError on failure
        when ``check``. Output is captured as text."""
        if self.kubeconfig is None or self.bin_dir is None:
            raise ControlPlaneError("control plane not started")
        self.token(user)  # validate the name before kubectl says something vaguer
        argv = [str(self.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", f"--context={user}", *args]
        result = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, argv, result.stdout, result.stderr)
        return result

    # -- bootstrap over the REST API --------------------------------------

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json", user: str = "admin") -> Any:
        """Minimal JSON REST call (the bootstrap needs nothing more). Raises
        urllib.error.HTTPError for non-2xx responses."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.server + path, data=data, method=method,
            headers={"Authorization": f"Bearer {self.token(user)}",
                     "Content-Type": content_type, "Accept": "application/json"},
        )
        with self._opener.open(req, timeout=30) as resp:
            payload = resp.read()
        return json.loads(payload) if payload else None

    def _bootstrap_rbac(self) -> None:
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        self.request("POST", f"{rbac}/clusterroles", CRD_AGGREGATION_ROLE)
        self._aggregate_cluster_roles()
        for user in USERS:
            if user.binding is None:
                continue
            role, namespace = user.binding
            self.request("POST", f"{rbac}/namespaces/{namespace}/rolebindings", {
                "metadata": {"name": f"testenv-{user.name}-{role}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user.name}],
            })

    def _aggregate_cluster_roles(self) -> None:
        """Do once what kube-controller-manager's clusterrole-aggregation
        controller does continuously: a role with an aggregationRule gets the
        rules of every ClusterRole its selectors match."""
        rbac = "/apis/rbac.authorization.k8s.io/v1"
        roles = self.request("GET", f"{rbac}/clusterroles")["items"]
        for name in AGGREGATED_ROLES:
            target = next(r for r in roles if r["metadata"]["name"] == name)
            selectors = [s.get("matchLabels", {}) for s in target["aggregationRule"]["clusterRoleSelectors"]]
            rules = []
            for role in sorted(roles, key=lambda r: r["metadata"]["name"]):
                labels = role["metadata"].get("labels", {})
                if role is not target and any(sel.items() <= labels.items() for sel in selectors):
                    rules += [r for r in role.get("rules") or [] if r not in rules]
            self.request("PATCH", f"{rbac}/clusterroles/{name}", {"rules": rules},
                         content_type="application/merge-patch+json")
            # `view` aggregates into `edit`, `edit` into `admin`: later roles
            # must see the rules just computed.
            target["rules"] = rules

    def _install_crds(self, crds: list[dict[str, Any]]) -> None:
        # create (not client-side apply): a 1.5 MB CRD would not fit the
        # last-applied-configuration annotation (256 KiB limit).
        for crd in crds:
            try:
                self.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            except urllib.error.HTTPError as err:
                raise ControlPlaneError(f"the API server refused CRD {crd['metadata']['name']}: "
                                        f"{_status_message(err)}") from None
        deadline = time.monotonic() + self.start_timeout
        for crd in crds:
            self._wait_crd_served(crd, deadline)

    def _wait_crd_served(self, crd: dict[str, Any], deadline: float) -> None:
        """Established, and a list on every served version answers (the
        handler can lag the condition briefly)."""
        name = crd["metadata"]["name"]
        group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
        paths = [f"/apis/{group}/{v['name']}/{plural}" for v in crd["spec"]["versions"] if v.get("served")]
        while True:
            crd_now = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            status = crd_now.get("status", {})
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
            established = conditions.get("Established") == "True"
            if established and all(self._lists(p) for p in paths):
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"CRD {name} not established and served: status {status}")
            time.sleep(0.1)

    def _lists(self, path: str) -> bool:
        try:
            self.request("GET", f"{path}?limit=1")
            return True
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return False
            raise


def _status_message(err: urllib.error.HTTPError) -> str:
    """The message of the Status object an API server error carries, else the HTTP reason."""
    try:
        return json.loads(err.read())["message"]
    except (ValueError, KeyError, TypeError, OSError):
        return f"{err.code} {err.reason}"


# --------------------------------------------------------------------------
# python -m testenv.controlplane


def main(argv: Sequence[str] | None = None) -> int:
    """Start a control plane with the LWS status simulator, print how to use it, run until Ctrl-C."""
    del argv  # no options yet
    # A shell starts background jobs with SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: restore it, Ctrl-C (or kill -INT) is how this is meant to stop.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # Imported here: the simulator needs the kubernetes client, the rest of this module does not.
    from testenv.lws_simulator import LWSSimulator
    from testenv.upstream import unavailable_reason

    started = time.monotonic()
    with ControlPlane() as cp, cp.api_client() as client, LWSSimulator(client).running(delay=1.0):
        cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": EXAMPLES_NAMESPACE}})
        print(f"# control plane up in {time.monotonic() - started:.1f}s: {cp.server}", file=sys.stderr)
        print(f"export KUBECONFIG={cp.kubeconfig}", flush=True)  # a pipe reader waits for this line
        for line in playground_lines(cp, simulated=True, upstream_buildable=unavailable_reason() is None):
            print(line, file=sys.stderr)
        print("# Ctrl-C to stop and delete everything", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            _wait_forever(cp)
    return 0


# The namespace of the bundled examples: the playground creates it, so they apply as they are.
EXAMPLES_NAMESPACE = "serving"


def playground_env(cp: ControlPlane) -> dict[str, str]:
    """The environment a playground's commands run in: its kubeconfig, and PATH with the matching
    kubectl and (where this Python has it) the plugin, so `kubectl disagg` works."""
    return {**os.environ, "KUBECONFIG": str(cp.kubeconfig), "PATH": os.pathsep.join(
        [*map(str, _playground_path(cp)), os.environ.get("PATH", "")])}


def _playground_path(cp: ControlPlane) -> list[Path]:
    assert cp.bin_dir is not None
    plugin_dir = Path(sys.executable).parent
    return [cp.bin_dir, *([plugin_dir] if (plugin_dir / "kubectl-disagg").exists() else [])]


def playground_lines(cp: ControlPlane, *, simulated: bool, upstream_buildable: bool = False) -> list[str]:
    """What a person needs to use a running playground (after its `export KUBECONFIG=` line)."""
    path = ":".join(map(str, _playground_path(cp)))
    lines = [f"export PATH={path}:$PATH  # the matching kubectl, and kubectl disagg",
             f"# contexts: {', '.join(u.name for u in USERS)} (admin is current); "
             f"namespace {EXAMPLES_NAMESPACE} exists (the examples')"]
    if simulated:
        lines.append("# the LWS status simulator plays the LWS controller: every LeaderWorkerSet is reported "
                     "ready a second after it changes (status only: no pods)")
        if upstream_buildable:
            lines.append("# the real LWS and DisaggregatedSet controllers with pods on kwok nodes: "
                         "make cluster-upstream")
    return lines


def _wait_forever(cp: ControlPlane) -> None:
    while cp.running():
        time.sleep(1)
    raise ControlPlaneError("a control plane component exited unexpectedly")


def run_as_command(prog: str, entry) -> int:
    """Run ``entry()`` for a person at a terminal: any failure becomes ``prog: error: ...``
    on stderr and exit code 1 (130 on Ctrl-C), never a traceback."""
    try:
        return entry()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except ControlPlaneError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
    except subprocess.CalledProcessError as err:
        detail = f"\n{err.stderr.strip()}" if isinstance(err.stderr, str) and err.stderr.strip() else ""
        print(f"{prog}: error: {shlex.join(map(str, err.cmd))} exited {err.returncode}{detail}", file=sys.stderr)
    except urllib.error.HTTPError as err:
        print(f"{prog}: error: the API server answered {err.code} {err.reason} for {err.url}", file=sys.stderr)
    except Exception as err:  # noqa: BLE001 - the last line of defence against a traceback
        print(f"{prog}: error: {type(err).__name__}: {err}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(run_as_command("testenv.controlplane", main))
