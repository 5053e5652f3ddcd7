"""Docs that cannot lie: every shell block of README.md and of each docs/tutorials/ page runs, in
order, as a reader would paste them (issue 41).

Each page gets what `make cluster` gives a reader: a fresh local control plane with the
project's CRDs, the examples' namespace and the LWS status simulator (so rollouts complete),
`KUBECONFIG` exported, kubectl and kubectl-disagg on PATH, and a copy of the clone (a git
repository of the tracked files) as the working directory. A command must succeed, unless its
comment says `# exits N` (hack/docs.py's `script_of`). A block that cannot run there (it installs
something, starts a control plane of its own, needs Argo CD) is marked by a line
`<!-- not run: REASON -->` just above it; the extractor and its rules are hack/docs.py's
(`shell_blocks`). A block a demo runs instead (a tutorial that walks through `make demo-git`,
whose commands need the demo's own set-up between them) says "run by `make TARGET`": that
demo's test must check that page (`test_a_block_run_by_a_demo_is_checked_by_the_demos_test`,
in tests/unit/test_docs.py: it needs no control plane).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.hack_modules import hack_module
from testenv.controlplane import PROJECT_CRDS, ControlPlane
from testenv.lws_simulator import LWSSimulator

docs = hack_module("docs.py")
ROOT = docs.ROOT
PAGES = docs.run_pages()
MARK = "::docs-shell-block "  # printed before each block, to name the one that failed
PAGE_TIMEOUT = 900  # seconds for all of a page's blocks
EXAMPLES_NAMESPACE = "serving"  # the examples' namespace, which `make cluster` creates
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "Docs Reader", "GIT_AUTHOR_EMAIL": "reader@example.com",
                "GIT_COMMITTER_NAME": "Docs Reader", "GIT_COMMITTER_EMAIL": "reader@example.com"}


def clone(into: Path) -> Path:
    """A copy of the repository's tracked files (as they are now), committed in a git
    repository of its own: what a reader's clone holds, and nothing of this checkout changes."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, names.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name, follow_symlinks=False)
    env = {**os.environ, **GIT_IDENTITY}
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "clone"]):
        subprocess.run(argv, cwd=into, env=env, check=True, capture_output=True)
    return into


def script(page: Path) -> str:
    """The page's runnable blocks as one bash script, each after a line naming it."""
    name = page.relative_to(ROOT).as_posix()
    blocks = docs.shell_blocks(page.read_text())
    return "set -eo pipefail\n" + "".join(docs.script_of(block, f"{MARK}{name}:{block.line}")
                                           for block in blocks if block.not_run is None)


def failed_block(output: str) -> str:
    """The output from the last block's mark on: the block that failed, and what it printed."""
    return output[output.rfind(MARK):] if MARK in output else output


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_shell_block_of_the_page_runs(page, binaries, tmp_path):
    if all(block.not_run is not None for block in docs.shell_blocks(page.read_text())):
        return  # every block says why it cannot run here
    work = clone(tmp_path / "clone")
    (tmp_path / "page.sh").write_text(script(page))
    with ControlPlane(crds=PROJECT_CRDS, bin_dir=binaries) as cp, cp.api_client() as api:
        cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": EXAMPLES_NAMESPACE}})
        simulator = LWSSimulator(api)
        with simulator.running(delay=0.05, interval=0.05):
            env = {**os.environ, **GIT_IDENTITY, "KUBECONFIG": str(cp.kubeconfig),
                   "PATH": os.pathsep.join([str(binaries), str(Path(sys.executable).parent), os.environ["PATH"]])}
            result = subprocess.run(["bash", str(tmp_path / "page.sh")], cwd=work, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, timeout=PAGE_TIMEOUT, check=False)
    assert result.returncode == 0, (f"a shell block of {page.relative_to(ROOT)} exited {result.returncode} "
                                    f"(fix it, or mark it `<!-- not run: REASON -->`):\n"
                                    f"{failed_block(result.stdout)[-6000:]}")
