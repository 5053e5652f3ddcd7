"""The upstream stack beside the local control plane: the real LWS manager (the LeaderWorkerSet
and DisaggregatedSet controllers and their webhooks), kube-controller-manager, kube-scheduler
and kwok nodes, all on loopback (test and demo code only).

Where :mod:`testenv.lws_simulator` plays the LWS controller by writing status, this runs the
controller: the manager creates StatefulSets, kube-controller-manager's StatefulSet controller
creates the pods, kube-scheduler binds them to kwok's fake nodes (GPU capacity, a zone label)
and kwok marks them running and ready. The garbage collector runs too, so ``--cascade=orphan``
and cascading deletes behave as in a cluster.

The manager runs with its internal certificate management off; its webhooks serve on
127.0.0.1 with a certificate signed by the control plane's CA, and the webhook
configurations of its ``config/webhook`` name that URL with the CA bundle. Its CRDs are the
extracted source's ``config/crd/bases`` (``$KUBECTL_DISAGG_CRDS`` names others).

Usage::

    with UpstreamStack() as stack:
        stack.cp.kubectl("apply", "-f", "ds.yaml")
        with stack.nodes_paused():   # pods created now stay unready: hold a rollout mid-way
            ...

Binaries come from hack/build-lws-manager.sh (the source archive beside the clone) and
hack/build-upstream-tools.sh (the Go module proxy); :func:`unavailable_reason` says why the
stack cannot run here (no archive), for a test to skip naming it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from testenv.controlplane import (
    ENV_CRDS_DIR,
    EXAMPLES_NAMESPACE,
    REPO_ROOT,
    ControlPlane,
    ControlPlaneError,
    _free_ports,
    _openssl,
    _Process,
    _status_message,
    playground_lines,
)

__all__ = ["NODE_GPUS", "UpstreamStack", "ensure_upstream", "source_archive", "unavailable_reason"]

LWS_BUILD = REPO_ROOT / "hack" / "build-lws-manager.sh"
TOOLS_BUILD = REPO_ROOT / "hack" / "build-upstream-tools.sh"
ENV_SOURCE = "KUBECTL_DISAGG_LWS_SOURCE"
ARCHIVE_DIR = REPO_ROOT.parent / "shared" / "upstream"
NO_ARCHIVE_EXIT = 3

# kwok manages the nodes carrying this annotation (and only those).
KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
ZONE_LABEL = "topology.kubernetes.io/zone"
NODE_GPUS = 8
# The controllers kube-controller-manager runs: the garbage collector (ownerReferences,
# orphaning deletes), StatefulSets (LWS groups are StatefulSets of pods) and namespaces (a test's
# namespace deleted takes its pods, and their GPUs, with it).
KCM_CONTROLLERS = ("garbage-collector-controller", "statefulset-controller", "namespace-controller")


def source_archive() -> Path | None:
    """The LWS source archive: ``$KUBECTL_DISAGG_LWS_SOURCE``, else ``../shared/upstream/lws-*.tar.gz``."""
    override = os.environ.get(ENV_SOURCE)
    if override:
        return Path(override) if Path(override).is_file() else None
    found = sorted(ARCHIVE_DIR.glob("lws-*.tar.gz"))
    return found[0] if found else None


def unavailable_reason() -> str | None:
    """Why the upstream stack cannot run in this checkout, or None when it can."""
    if source_archive() is None:
        return (f"the upstream LWS source archive is not beside the clone ({ARCHIVE_DIR}/lws-*.tar.gz; "
                f"set {ENV_SOURCE}), so the real LWS and DisaggregatedSet controllers cannot be built")
    return None


def _run_build(script: Path) -> Path:
    # stderr is inherited: a cold build shows its progress and Go errors.
    result = subprocess.run(["bash", str(script)], stdout=subprocess.PIPE, text=True, check=False)
    if result.returncode == NO_ARCHIVE_EXIT:
        raise ControlPlaneError(unavailable_reason() or f"{script} found no source archive")
    if result.returncode != 0:
        raise ControlPlaneError(f"{script} failed with exit code {result.returncode} (its output above shows why)")
    return Path(result.stdout.strip().splitlines()[-1])


def ensure_upstream() -> tuple[Path, Path]:
    """(the LWS manager's bin directory, the tools' bin directory), building what is missing."""
    return _run_build(LWS_BUILD), _run_build(TOOLS_BUILD)


class UpstreamStack:
    """A :class:`ControlPlane` with the upstream CRDs and the components that act on them.

    Attributes after :meth:`start`: ``cp`` (the control plane), ``nodes`` (node names),
    ``source`` (the extracted LWS source, whose ``config/`` was installed).
    """

    def __init__(self, *, nodes: int = 8, zones: int = 4, start_timeout: float = 180.0):
        self.node_count, self.zone_count = nodes, zones
        self.start_timeout = start_timeout
        self.cp: ControlPlane | None = None
        self.source: Path | None = None
        self.nodes: list[str] = []
        self._processes: dict[str, _Process] = {}
        self._lws_bin: Path | None = None
        self._tools_bin: Path | None = None
        self._webhook_port = 0

    def __enter__(self) -> UpstreamStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- lifecycle -------------------------------------------------------

    def start(self, binaries: tuple[Path, Path] | None = None) -> UpstreamStack:
        lws_bin, self._tools_bin = binaries or ensure_upstream()
        self._lws_bin = lws_bin
        self.source = lws_bin.parent / "src"
        # The manager's own CRDs, unless $KUBECTL_DISAGG_CRDS names others (ControlPlane reads it).
        crds = None if os.environ.get(ENV_CRDS_DIR) else self.source / "config" / "crd" / "bases"
        self.cp = ControlPlane(crds=crds, start_timeout=self.start_timeout)
        self.cp.start()
        try:
            self._start_cluster_components()
            self._create_nodes()
            self._start_manager()
            self._install_webhooks()
            self._wait_webhooks_answer()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for proc in reversed(list(self._processes.values())):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGCONT)  # a paused kwok must see its SIGTERM
            proc.stop()
        self._processes.clear()
        if self.cp is not None:
            self.cp.stop()

    def running(self) -> bool:
        return self.cp is not None and self.cp.running() and all(p.running() for p in self._processes.values())

    @property
    def workdir(self) -> Path:
        assert self.cp is not None and self.cp.workdir is not None
        return self.cp.workdir

    def log(self, component: str) -> str:
        """The last lines of a component's log (``lws-manager``, ``kwok``, ...)."""
        return self._processes[component].log_tail(80)

    # -- holding a point -------------------------------------------------

    @contextlib.contextmanager
    def nodes_paused(self) -> Iterator[None]:
        """kwok frozen (SIGSTOP): pods created meanwhile are bound but never become ready, pods
        deleted meanwhile stay terminating; everything else runs on. Resumed on exit."""
        kwok = self._processes["kwok"]
        os.killpg(kwok.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.killpg(kwok.pid, signal.SIGCONT)

    @contextlib.contextmanager
    def manager_stopped(self) -> Iterator[None]:
        """The LWS manager stopped (its webhooks with it), started again on exit."""
        self._processes.pop("lws-manager").stop()
        try:
            yield
        finally:
            self._start_manager()
            self._wait_webhooks_answer()

    # -- components ------------------------------------------------------

    def _kubeconfig(self) -> str:
        assert self.cp is not None and self.cp.kubeconfig is not None
        return str(self.cp.kubeconfig)

    def _launch(self, name: str, argv: Sequence[str]) -> _Process:
        proc = _Process(name, argv, self.workdir / f"{name}.log")
        self._processes[name] = proc
        return proc

    def _config(self, component: str, api_version: str, kind: str, **fields: Any) -> Path:
        """A component's configuration file in the work dir."""
        path = self.workdir / f"{component}.yaml"
        path.write_text(yaml.safe_dump({"apiVersion": api_version, "kind": kind, **fields}))
        return path

    def _start_cluster_components(self) -> None:
        assert self._tools_bin is not None
        kubeconfig = self._kubeconfig()
        self._launch("kube-controller-manager", [
            str(self._tools_bin / "kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            f"--controllers={','.join(KCM_CONTROLLERS)}",
            "--leader-elect=false",
            "--secure-port=0",
            "--use-service-account-credentials=false",
        ])
        scheduler_config = self._config("kube-scheduler", "kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration",
                                        clientConnection={"kubeconfig": kubeconfig},
                                        leaderElection={"leaderElect": False})
        self._launch("kube-scheduler", [
            str(self._tools_bin / "kube-scheduler"), f"--config={scheduler_config}", "--secure-port=0",
        ])
        stages = sorted((self._tools_bin.parent / "stages").glob("*.yaml"))
        (kwok_port,) = _free_ports(1)
        self._launch("kwok", [
            str(self._tools_bin / "kwok"),
            f"--kubeconfig={kubeconfig}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={'='.join(KWOK_ANNOTATION)}",
            f"--server-address=127.0.0.1:{kwok_port}",
            "--node-ip=127.0.0.1",
            *(f"--config={s}" for s in stages),
        ])

    def _create_nodes(self) -> None:
        assert self.cp is not None
        for i in range(self.node_count):
            name = f"kwok-node-{i}"
            capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(NODE_GPUS)}
            self.cp.request("POST", "/api/v1/nodes", {
                "metadata": {
                    "name": name,
                    "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1], "node.alpha.kubernetes.io/ttl": "0"},
                    "labels": {"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                               ZONE_LABEL: f"zone-{i % self.zone_count}"},
                },
                "status": {"capacity": capacity, "allocatable": capacity},
            })
            self.nodes.append(name)
        self._until(lambda: all(self._node_ready(n) for n in self.nodes), "kwok nodes Ready", "kwok")
        # The API server's TaintNodesByCondition taints a new node not-ready; the node lifecycle
        # controller would lift it once kwok reports Ready. Lifted here instead: that controller
        # would also taint the nodes unreachable whenever kwok is paused.
        for name in self.nodes:
            self.cp.request("PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": None}},
                            content_type="application/merge-patch+json")

    def _node_ready(self, name: str) -> bool:
        assert self.cp is not None
        node = self.cp.request("GET", f"/api/v1/nodes/{name}")
        return any(c["type"] == "Ready" and c["status"] == "True" for c in node.get("status", {}).get("conditions") or [])

    def _start_manager(self) -> None:
        assert self._lws_bin is not None
        certs = self.workdir / "webhook-certs"
        if not certs.is_dir():
            certs.mkdir()
            _sign_serving_cert(self.workdir, certs)
            (self._webhook_port,) = _free_ports(1)
        config = self._config("lws-manager", "config.lws.x-k8s.io/v1alpha1", "Configuration",
                              leaderElection={"leaderElect": False}, internalCertManagement={"enable": False},
                              webhook={"host": "127.0.0.1", "port": self._webhook_port, "certDir": str(certs)},
                              metrics={"bindAddress": "0"}, health={"healthProbeBindAddress": "0"})
        self._launch("lws-manager", [str(self._lws_bin / "lws-manager"), f"--config={config}",
                                     f"--kubeconfig={self._kubeconfig()}"])
        self._until(self._webhook_listening, f"LWS manager webhooks on 127.0.0.1:{self._webhook_port}", "lws-manager")

    def _webhook_listening(self) -> bool:
        context = ssl.create_default_context(cafile=str(self.workdir / "ca.crt"))
        try:
            with socket.create_connection(("127.0.0.1", self._webhook_port), timeout=1) as raw:
                with context.wrap_socket(raw, server_hostname="127.0.0.1"):
                    return True
        except OSError:
            return False

    def _install_webhooks(self) -> None:
        """The webhook configurations of the source's config/webhook (its kustomize patches
        applied), each clientConfig turned from the in-cluster Service into our URL."""
        assert self.cp is not None and self.source is not None
        bundle = base64.b64encode((self.workdir / "ca.crt").read_bytes()).decode()
        for doc in webhook_configurations(self.source / "config" / "webhook"):
            for hook in doc["webhooks"]:
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {"url": f"https://127.0.0.1:{self._webhook_port}{path}", "caBundle": bundle}
            plural = "mutatingwebhookconfigurations" if doc["kind"].startswith("Mutating") else "validatingwebhookconfigurations"
            try:
                self.cp.request("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", doc)
            except urllib.error.HTTPError as err:
                raise ControlPlaneError(f"the API server refused {doc['kind']} {doc['metadata']['name']}: "
                                        f"{_status_message(err)}") from None

    def _wait_webhooks_answer(self) -> None:
        """A dry-run LWS create goes through the mutating and validating webhooks: once it is
        accepted, the manager answers the API server."""
        assert self.cp is not None
        probe = {
            "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "webhook-probe", "namespace": "default"},
            "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}},
        }

        def accepted() -> bool:
            try:
                self.cp.request("POST", "/apis/leaderworkerset.x-k8s.io/v1/namespaces/default/leaderworkersets?dryRun=All", probe)
                return True
            except urllib.error.HTTPError:
                return False
        self._until(accepted, "the API server reaching the LWS webhooks", "lws-manager")

    def _until(self, check, what: str, component: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while not check():
            for proc in self._processes.values():
                if not proc.running():
                    raise ControlPlaneError(f"{proc.name} exited with code {proc.popen.returncode}; "
                                            f"last lines of {proc.log_path.name}:\n{proc.log_tail()}")
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"no {what} within {self.start_timeout:.0f}s; last lines of "
                                        f"{component}.log:\n{self._processes[component].log_tail()}")
            time.sleep(0.2)


def _sign_serving_cert(workdir: Path, certs: Path) -> None:
    """tls.crt/tls.key for 127.0.0.1, signed by the control plane's CA (controller-runtime's
    webhook server reads those two names from its certDir)."""
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
             "-CA", str(workdir / "ca.crt"), "-CAkey", str(workdir / "ca.key"),
             "-subj", "/CN=lws-webhook", "-addext", "subjectAltName=IP:127.0.0.1",
             "-addext", "extendedKeyUsage=serverAuth",
             "-keyout", str(certs / "tls.key"), "-out", str(certs / "tls.crt"), cwd=workdir)


def webhook_configurations(directory: Path) -> list[dict[str, Any]]:
    """The documents of ``directory``'s kustomization resources with its JSON patches applied
    (the only kind of patch the manager's config/webhook uses: ``replace`` of a webhook)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    docs = [d for resource in kustomization["resources"]
            for d in yaml.safe_load_all((directory / resource).read_text())
            if d and d.get("kind", "").endswith("WebhookConfiguration")]
    for patch in kustomization.get("patches") or []:
        target = patch.get("target") or {}
        for op in yaml.safe_load((directory / patch["path"]).read_text()):
            for doc in docs:
                if doc["kind"] == target.get("kind") and doc["metadata"]["name"] == target.get("name"):
                    _apply_json_patch_op(doc, op)
    return docs


def _apply_json_patch_op(doc: dict[str, Any], op: dict[str, Any]) -> None:
    parts = op["path"].strip("/").split("/")
    parent: Any = doc
    for part in parts[:-1]:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    key: Any = int(parts[-1]) if isinstance(parent, list) else parts[-1]
    if op["op"] not in ("replace", "add"):
        raise ControlPlaneError(f"unsupported patch op {json.dumps(op)}")
    parent[key] = op["value"]


def main() -> int:
    """Start the upstream stack, print how to use it, run until Ctrl-C."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    reason = unavailable_reason()
    if reason:
        raise ControlPlaneError(reason)
    started = time.monotonic()
    with UpstreamStack() as stack:
        assert stack.cp is not None
        print(f"# upstream stack up in {time.monotonic() - started:.1f}s: {stack.cp.server}, "
              f"nodes {', '.join(stack.nodes)}", flush=True)
        stack.cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": EXAMPLES_NAMESPACE}})
        print(f"export KUBECONFIG={stack.cp.kubeconfig}", flush=True)
        for line in playground_lines(stack.cp, simulated=False):
            print(line, file=sys.stderr)
        print("# Ctrl-C to stop and delete everything", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while stack.running():
                time.sleep(1)
    return 0


if __name__ == "__main__":
    from testenv.controlplane import run_as_command

    sys.exit(run_as_command("testenv.upstream", main))
