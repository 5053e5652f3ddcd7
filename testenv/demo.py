"""`make demo`: the bundled example on a local control plane, end to end.

Starts a real kube-apiserver + etcd (building them once), deploys
examples/prefill-decode.yaml with `rollout step --until-complete`, shows the objects and their
status, then changes the image and rolls the new revision out step by step — plan, dry run,
steps — and cleans up. Where the LWS source is beside the clone, the real LWS controller runs
the LWS (the upstream stack of testenv/upstream.py: pods on kwok nodes); elsewhere the LWS status
simulator plays it. The first lines say which.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from testenv.controlplane import ControlPlane, run_as_command
from testenv.lws_simulator import LWSSimulator
from testenv.upstream import UpstreamStack, unavailable_reason

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "prefill-decode.yaml"
SHOWN_EXAMPLE = "examples/prefill-decode.yaml"  # commands run from the repository, as a reader would
NEW_IMAGE = "vllm/vllm-openai:v0.11.1"


def banner(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}", flush=True)


def run(argv: list[str], env: dict, check: bool = True) -> int:
    shown = [Path(argv[0]).name, *argv[1:]]
    print(f"$ {shlex.join(shown)}", flush=True)
    result = subprocess.run(argv, env=env, cwd=REPO)
    if check and result.returncode != 0:
        raise SystemExit(f"demo: {shown[0]} {shown[1]} exited {result.returncode}")
    return result.returncode


def changed_example(directory: Path) -> Path:
    """The example with a new image in every role: a template change, so a new revision."""
    document = yaml.safe_load(EXAMPLE.read_text())
    for role in document["spec"]["roles"]:
        for container in role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]:
            container["image"] = NEW_IMAGE
    path = directory / "prefill-decode-v2.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@contextlib.contextmanager
def cluster(namespace: str):
    """(a started control plane, what runs the LWS there) for the demo's lifetime."""
    reason = unavailable_reason()
    if reason is None:
        banner("starting the upstream stack: kube-apiserver + etcd, the real LWS and DisaggregatedSet "
               "controllers, kube-controller-manager, kube-scheduler and kwok nodes")
        with UpstreamStack() as stack:
            yield stack.cp, contextlib.nullcontext()
        return
    banner("starting a local control plane (kube-apiserver + etcd, the project's CRDs)")
    print(f"the LWS status simulator plays the LWS controller: {reason}")
    with ControlPlane() as cp, cp.api_client() as client:
        yield cp, LWSSimulator(client).running(namespace, delay=1.0)


def main() -> int:
    plugin = str(Path(sys.executable).parent / "kubectl-disagg")
    namespace = yaml.safe_load(EXAMPLE.read_text())["metadata"]["namespace"]
    with cluster(namespace) as (cp, lws_controller), tempfile.TemporaryDirectory(prefix="kubectl-disagg-demo-") as scratch:
        env = {**os.environ, "KUBECONFIG": str(cp.kubeconfig)}
        kubectl = str(cp.bin_dir / "kubectl")
        cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
        print(f"server {cp.server}; namespace {namespace}")

        banner("render: what the DisaggregatedSet stands for")
        run([plugin, "validate", "-f", SHOWN_EXAMPLE], env)
        rendered = subprocess.run([plugin, "render", "-f", SHOWN_EXAMPLE], env=env, cwd=REPO, capture_output=True,
                                  text=True, check=True).stdout
        kinds = [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(rendered)]
        for kind, name in kinds:
            print(f"  {kind}/{name}")

        with lws_controller:
            banner("first deploy: rollout step until every role is ready")
            run([plugin, "rollout", "step", "-f", SHOWN_EXAMPLE, "--until-complete", "--timeout", "2m"], env)
            run([kubectl, "get", "leaderworkersets,services", "-n", namespace,
                 "-L", "disaggregatedset.x-k8s.io/revision"], env)
            run([plugin, "rollout", "status", "-f", SHOWN_EXAMPLE], env)

            banner(f"template change: image {NEW_IMAGE}")
            new = changed_example(Path(scratch))
            run([plugin, "rollout", "plan", "-f", str(new)], env)
            run([plugin, "rollout", "step", "-f", str(new), "--dry-run"], env)
            run([plugin, "rollout", "step", "-f", str(new), "--until-complete", "--timeout", "3m"], env)

            banner("after the rollout")
            run([kubectl, "get", "leaderworkersets,services,pods", "-n", namespace,
                 "-L", "disaggregatedset.x-k8s.io/revision"], env)
            run([plugin, "rollout", "status", "-f", str(new)], env)
        banner("cleaning up: control plane stopped, temporary files removed")
    return 0


if __name__ == "__main__":
    sys.exit(run_as_command("demo", main))
