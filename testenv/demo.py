"""`make demo`: the bundled example on a local control plane, end to end; and what the three demos
share (`make demo`, `make demo-progressive`: testenv/demo_progressive.py, `make demo-git`:
testenv/demo_git.py).

Starts a real kube-apiserver + etcd (building them once), deploys
examples/prefill-decode.yaml with `rollout step --until-complete`, shows the objects and their
status, then changes the image and rolls the new revision out — plan, dry run, one step, the
rest — and cleans up: docs/tutorials/terminal-rollout.md, command for command. Where the LWS
source is beside the clone, the real LWS controller runs the LWS (the upstream stack of
testenv/upstream.py: pods on kwok nodes); elsewhere the LWS status simulator plays it. The first
lines say which.

Every command a demo runs is echoed (`$ ...`) and run as shown, by bash, with the cluster's
kubeconfig and the matching kubectl and the plugin on PATH, so a reader can type the same lines
into a playground (`make cluster`). With `--keep` (`make demo KEEP=1`) the cluster stays up after
the demo until Ctrl-C, and the demo prints how to reach it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from testenv.controlplane import (EXAMPLES_NAMESPACE, ControlPlane, playground_env, playground_lines,
                                  run_as_command)
from testenv.lws_simulator import LWSSimulator
from testenv.upstream import UpstreamStack, unavailable_reason

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "prefill-decode.yaml"
SHOWN_EXAMPLE = "examples/prefill-decode.yaml"
OLD_IMAGE, NEW_IMAGE = "vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.11.1"  # the example's, and the next
REVISION_LABEL = "disaggregatedset.x-k8s.io/revision"
# Scripts the demos run by name (hack/gitops-sync.sh): on the demos' PATH.
SCRIPTS = REPO / "hack"


def banner(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}", flush=True)


def note(text: str) -> None:
    """A line of the demo's own (what it set up behind the scenes), never a command."""
    print(f"# {text}", flush=True)


@dataclass
class Playground:
    """A running cluster for a demo: its control plane, and whether it is still up."""

    cp: ControlPlane
    alive: Callable[[], bool]
    simulated: bool  # the LWS status simulator plays the LWS controller


@contextlib.contextmanager
def playground() -> Iterator[Playground]:
    """The real LWS controller on the upstream stack where its source is beside the clone, else a
    control plane with the LWS status simulator (every namespace), for the demo's lifetime."""
    reason = unavailable_reason()
    if reason is None:
        banner("starting the upstream stack: kube-apiserver + etcd, the real LWS and DisaggregatedSet "
               "controllers, kube-controller-manager, kube-scheduler and kwok nodes")
        with UpstreamStack() as stack:
            assert stack.cp is not None
            yield Playground(stack.cp, stack.running, simulated=False)
        return
    banner("starting a local control plane (kube-apiserver + etcd, the project's CRDs)")
    print(f"the LWS status simulator plays the LWS controller: {reason}")
    with ControlPlane() as cp, cp.api_client() as client, LWSSimulator(client).running(delay=1.0):
        yield Playground(cp, cp.running, simulated=True)


class Demo:
    """Runs a demo's commands as shown: each echoed, then run by bash in `cwd` against the
    playground (its kubeconfig; kubectl, the plugin and hack/'s scripts on PATH; $CLONE the clone)."""

    def __init__(self, pg: Playground, cwd: Path):
        self.pg, self.cwd = pg, cwd
        env = playground_env(pg.cp)
        # CLONE: the clone, for commands run elsewhere (`cp "$CLONE/examples/..."`), as a tutorial has them.
        self.env = {**env, "CLONE": str(REPO), "PATH": f"{SCRIPTS}{os.pathsep}{env['PATH']}"}

    def run(self, command: str, *, expect: Iterable[int] = (0,)) -> int:
        """Echo and run `command`; stop the demo unless it exits with one of `expect`. A single
        code other than 0 is echoed as the tutorials write it, `  # exits N`."""
        expected = tuple(expect)
        print(f"$ {command}" + (f"  # exits {expected[0]}" if len(expected) == 1 and expected[0] else ""), flush=True)
        code = subprocess.run(["bash", "-o", "pipefail", "-c", command], env=self.env, cwd=self.cwd).returncode
        if code not in expected:
            raise SystemExit(f"demo: `{command}` exited {code} (expected {' or '.join(map(str, expected))})")
        return code

    def read(self, command: str) -> str:
        """The output of `command`, for the demo's own use (not echoed)."""
        return subprocess.run(["bash", "-o", "pipefail", "-c", command], env=self.env, cwd=self.cwd,
                              capture_output=True, text=True, check=True).stdout


def stay_up(pg: Playground, scratch: Path, extra: list[str]) -> None:
    """After a demo with --keep: how to reach the cluster and how to stop it, then wait for Ctrl-C."""
    banner("the cluster stays up: in another terminal,")
    print(f"export KUBECONFIG={pg.cp.kubeconfig}")
    for line in playground_lines(pg.cp, simulated=pg.simulated):
        print(line)
    print(f"export CLONE={REPO} PATH={SCRIPTS}:$PATH  # as the demo's commands had them")
    print(f"cd {scratch}  # the demo's files (removed when it stops)")
    for line in extra:
        print(line)
    print("# Ctrl-C here stops it and deletes everything", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        while pg.alive():
            time.sleep(1)


Body = Callable[[Playground, Path, contextlib.ExitStack], "list[str] | None"]


def demo_main(description: str, body: Body, preflight: Callable[[], None] = lambda: None) -> Callable[[], int]:
    """The entry point of a demo: `--keep`, a playground and a scratch directory around
    `body(playground, scratch, resources)`. What the body puts on `resources` (servers of its own)
    is closed after the cluster was kept; the lines it returns say how to reach them."""
    def main() -> int:
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--keep", action="store_true",
                            help="leave the cluster running after the demo, until Ctrl-C")
        args = parser.parse_args()
        # Started in the background by a shell, SIGINT is ignored: Ctrl-C (kill -INT) must stop it.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        preflight()
        with playground() as pg, tempfile.TemporaryDirectory(prefix="kubectl-disagg-demo-") as scratch, \
                contextlib.ExitStack() as resources:
            pg.cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": EXAMPLES_NAMESPACE}})
            print(f"server {pg.cp.server}; namespace {EXAMPLES_NAMESPACE}")
            extra = body(pg, Path(scratch), resources) or []
            if args.keep:
                stay_up(pg, Path(scratch), extra)
            banner("cleaning up: control plane stopped, temporary files removed")
        return 0
    return main


def basic(pg: Playground, scratch: Path, resources: contextlib.ExitStack) -> None:
    """docs/tutorials/terminal-rollout.md, command for command."""
    demo = Demo(pg, scratch)
    banner("render: what the DisaggregatedSet stands for")
    demo.run(f'cp "$CLONE/{SHOWN_EXAMPLE}" llama.yaml')
    demo.run("kubectl disagg validate -f llama.yaml")
    demo.run("kubectl disagg render -f llama.yaml | grep -E '^(kind|  name):'")

    banner("first deploy: rollout step until every role is ready")
    demo.run("kubectl disagg rollout step -f llama.yaml --until-complete --timeout 2m")
    demo.run(f"kubectl get leaderworkersets,services -n {EXAMPLES_NAMESPACE} -L {REVISION_LABEL}")
    demo.run("kubectl disagg rollout status -f llama.yaml")

    banner(f"template change: image {NEW_IMAGE}")
    demo.run(f"sed 's|{OLD_IMAGE}|{NEW_IMAGE}|' llama.yaml > llama-v2.yaml")
    demo.run("kubectl disagg rollout plan -f llama-v2.yaml")

    banner("step by step")
    demo.run("kubectl disagg rollout step -f llama-v2.yaml --dry-run")
    demo.run("kubectl disagg rollout step -f llama-v2.yaml")
    demo.run("kubectl disagg rollout status -f llama-v2.yaml", expect=(3,))  # mid-rollout: not Available
    demo.run("kubectl disagg rollout step -f llama-v2.yaml --until-complete --timeout 3m")

    banner("after the rollout")
    demo.run(f"kubectl get leaderworkersets,services,pods -n {EXAMPLES_NAMESPACE} -L {REVISION_LABEL}")
    demo.run("kubectl disagg rollout status -f llama-v2.yaml")


main = demo_main("The bundled example deployed, then a template change rolled out step by step.", basic)

if __name__ == "__main__":
    sys.exit(run_as_command("demo", main))
