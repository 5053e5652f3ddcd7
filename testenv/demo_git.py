"""`make demo-git`: a rollout through git, one commit per step, synced by a local stand-in for Argo CD.

In a scratch git repository: the bundled example committed with its first rollout state
(`rollout state init`), synced by hack/gitops-sync.sh (`cmp generate` over HEAD's tree, applied
server-side with pruning: what Argo CD does with the plugin); then an image change committed,
and `rollout step --gitops --wait --commit` writes and commits each step, each synced in turn,
until the rollout is complete and the old revision pruned. Each command echoed.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from pathlib import Path

from testenv.controlplane import EXAMPLES_NAMESPACE, ControlPlaneError, run_as_command
from testenv.demo import NEW_IMAGE, OLD_IMAGE, SHOWN_EXAMPLE, Demo, Playground, banner, demo_main, note

APP = "apps/llama"
MAX_STEPS = 20
SYNC = f"gitops-sync.sh {APP} {EXAMPLES_NAMESPACE}"


def preflight() -> None:
    if shutil.which("git") is None:
        raise ControlPlaneError("git is not on PATH: apt-get install git")


def sync(demo: Demo) -> None:
    demo.run(SYNC)


def git(pg: Playground, scratch: Path, resources: contextlib.ExitStack) -> None:
    repo = scratch / "gitops"
    repo.mkdir()
    demo = Demo(pg, repo)
    lws = f"kubectl get leaderworkersets,rolloutstates -n {EXAMPLES_NAMESPACE} -L disaggregatedset.x-k8s.io/revision"

    banner("a git repository with the set and its first rollout state")
    demo.run("git init -q -b main && git config user.name Demo && git config user.email demo@example.com")
    demo.run(f'mkdir -p {APP} && cp "$CLONE/{SHOWN_EXAMPLE}" {APP}/llama.yaml')
    demo.run(f"kubectl disagg rollout state init -f {APP}/")
    demo.run(f"git add {APP} && git commit -q -m 'llama: deploy through git'")

    banner("sync: what Argo CD does, here by hack/gitops-sync.sh")
    note("gitops-sync.sh renders HEAD's tree with `kubectl disagg cmp generate` and pipes it to "
         f"`KUBECTL_APPLYSET=true kubectl apply --server-side --prune --applyset=llama-sync -n {EXAMPLES_NAMESPACE} -f -`")
    sync(demo)
    # --wait: until the cluster shows the commit and is ready; then nothing is left to roll (exit 6).
    demo.run(f"kubectl disagg rollout step --gitops -f {APP}/ --wait --timeout 2m", expect=(6,))

    banner(f"a template change in git: image {NEW_IMAGE}")
    demo.run(f"sed -i 's|{OLD_IMAGE}|{NEW_IMAGE}|' {APP}/llama.yaml && git commit -q -am 'llama: vllm v0.11.1'")
    sync(demo)
    note("the new revision is rendered at 0 replicas beside the old one: nothing restarts yet")
    demo.run(lws)

    banner("one reviewed commit per step: step --gitops --commit, then sync")
    for step in range(MAX_STEPS):
        code = demo.run(f"kubectl disagg rollout step --gitops -f {APP}/ --wait --timeout 2m --commit", expect=(0, 6))
        if code == 6:
            break
        if step == 1:
            note("what a reviewer reads: a step's commit changes replica counts and the count of commits in the state file, nothing else")
            demo.run("git show --format=%s HEAD")
        sync(demo)
    else:
        raise SystemExit(f"demo: the rollout did not complete in {MAX_STEPS} steps")

    banner("after the rollout: the history is in git, the old revision pruned")
    demo.run("git log --oneline")
    demo.run(lws)
    demo.run(f"kubectl disagg rollout status --gitops -f {APP}/", expect=(6,))


main = demo_main("A rollout through git: one commit per step, synced by a local stand-in for Argo CD.", git, preflight)

if __name__ == "__main__":
    sys.exit(run_as_command("demo-git", main))
