"""The three demos run end to end, each one command (`make demo`, `make demo-progressive`, `make
demo-git`), and leave nothing running; `--keep` (`make demo KEEP=1`) leaves the cluster up until
Ctrl-C and says how to reach it."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

from testenv.upstream import unavailable_reason
from tests.oracles.prometheus_oracle import require
from tests.support.hack_modules import hack_module
from tests.support.paths import REPO

docs = hack_module("docs.py")


def demo_env(binaries: Path) -> dict[str, str]:
    # binaries: the control plane's, built once; a demo starts and stops its own control plane
    # (with the project's CRDs unless KUBECTL_DISAGG_CRDS names others), which must leave nothing
    # behind. No session control plane is started for these tests.
    return {**os.environ, "KUBECTL_DISAGG_TESTENV_BIN": str(binaries)}


def run_demo(module: str, binaries: Path) -> str:
    # stderr with stdout, in order, as a terminal shows them (the analysis progress is on stderr)
    result = subprocess.run([sys.executable, "-m", module], cwd=REPO, env=demo_env(binaries),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    out = result.stdout
    assert result.returncode == 0, out[-6000:]
    assert "cleaning up" in out.splitlines()[-1]
    assert_stopped(out)
    return out


def assert_stopped(out: str) -> None:
    """Every server the demo said it started (`https://127.0.0.1:PORT`, `http://...`) is gone."""
    ports = {int(port) for port in re.findall(r"\bhttps?://127\.0\.0\.1:(\d+)", out)}
    assert ports
    for port in ports:
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still answers after the demo"


def commands(out: str) -> list[str]:
    return [line[2:] for line in out.splitlines() if line.startswith("$ ")]


# A tutorial's setting up that its demo does by itself: making it, exporting, changing directory.
SET_UP = ("make ", "export ", "cd ")


def assert_tutorial_is_the_demo(target: str, out: str) -> None:
    """The demo's tutorial (hack/docs.py's DEMO_TUTORIALS) walks through what the demo ran: the
    commands of the page's blocks that run in the docs' test or say they are run by this demo
    (read by hack/docs.py's `commands`), but the setting up the demo does itself, are commands
    the demo echoed, in the page's order, each with the code the page gives it (`# exits N`,
    which the demo echoes where it expects a code other than 0)."""
    page = docs.ROOT / docs.DEMO_TUTORIALS[target]
    blocks = [b for b in docs.shell_blocks(page.read_text()) if b.not_run is None or b.run_by == target]
    walked = [found for block in blocks for found in docs.commands(block) if not found[0].startswith(SET_UP)]
    assert walked, f"{page.name} has no command {target} runs"
    ran = [found for line in commands(out) if (found := docs.command(line)) is not None]
    after = 0  # the page's commands, in its order: each one after the one before it
    for command, code in walked:
        assert (command, code) in ran[after:], (f"{page.name}: `{command}` (exit {code}) is not a command {target} ran "
                                                f"after the page's previous one; it ran: {ran[after:]}")
        after += ran[after:].index((command, code)) + 1


def test_demo_rolls_out_a_template_change_and_cleans_up(binaries):
    out = run_demo("testenv.demo", binaries)
    assert out.count("rollout complete at revision") == 2
    assert out.count(": Available") == 2
    assert "rollout to revision" in out and "dry run" in out
    # It says what plays the LWS controller: the real one where its source is beside the clone.
    real = unavailable_reason() is None
    assert ("starting the upstream stack" in out) == real
    assert ("the LWS status simulator plays the LWS controller" in out) == (not real)
    assert_tutorial_is_the_demo("demo", out)


def test_demo_progressive_promotes_a_good_canary_and_aborts_a_bad_one(binaries):
    require("prometheus")
    out = run_demo("testenv.demo_progressive", binaries)
    good, bad = out.split("== a bad image")
    # The good image: the canary's analysis passes, wave 2 holds at its gate, promote, complete.
    assert re.search(r"analysis wave 1: ttft .* 3/3 +0\.099 < 0\.5 +passed", good), good[-4000:]
    assert "wave 2 is paused: `kubectl disagg rollout promote` starts the next wave" in good
    assert "RolloutPolicy: AtGate, wave 2 of 3" in good
    assert good.count("rollout complete at revision") == 2  # the first deploy, then after promote
    # The bad image: the analysis fails on the canary's own latency, the canary rolls back, the
    # other slices are never written.
    assert re.search(r"analysis wave 1: ttft .* 1/3 +2\.425 is not < 0\.5 +FAILED", bad), bad[-4000:]
    assert "RolloutPolicy: Aborted, wave 1 of 3" in bad
    assert "every slice is back at the stable revision" in bad
    assert "# slices 1-3: the same 6 LeaderWorkerSets, never written" in bad
    assert "rollout complete" not in bad
    assert_tutorial_is_the_demo("demo-progressive", out)


def test_demo_git_commits_each_step_and_stays_up_with_keep(binaries):
    """`--keep`: after the demo the cluster answers at the printed kubeconfig until SIGINT, then
    everything stops."""
    proc = subprocess.Popen([sys.executable, "-m", "testenv.demo_git", "--keep"], cwd=REPO,
                            env=demo_env(binaries), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("export KUBECONFIG=") and any("the cluster stays up" in s for s in lines):
                break
        out = "".join(lines)
        assert lines and lines[-1].startswith("export KUBECONFIG="), out[-3000:] + proc.stderr.read()[-3000:]
        kubeconfig = Path(lines[-1].strip().split("=", 1)[1])
        live = subprocess.run([str(binaries / "kubectl"), f"--kubeconfig={kubeconfig}", "get",
                               "leaderworkersets", "-n", "serving", "-o", "name"],
                              capture_output=True, text=True, check=True, timeout=60).stdout.split()
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    out += rest
    assert "cleaning up" in out.splitlines()[-1]
    assert not kubeconfig.parent.exists()
    assert_stopped(out)
    # The git rollout: one commit per step, each synced, the old revision pruned at the end.
    steps = re.findall(r"^\w+ llama: rollout to (\w+), step (\d+)(, remove \w+)?$", out, re.MULTILINE)
    # git log: newest first; numbered by the rollout's commits, the last one removes the old revision
    assert steps and [int(s[1]) for s in reversed(steps)] == list(range(1, len(steps) + 1))
    new = steps[0][0]
    assert steps[0][2] and not any(s[2] for s in steps[1:])
    assert "pruned" in out and "next: complete" in out
    assert live == [f"leaderworkerset.leaderworkerset.x-k8s.io/llama-0-{new}-{role}" for role in ("decode", "prefill")]
    shown = commands(out)
    assert shown.count("gitops-sync.sh apps/llama serving") == len(steps) + 2  # deploy, change, each commit of the rollout
    assert "kubectl disagg rollout state init -f apps/llama/" in shown
    assert_tutorial_is_the_demo("demo-git", out)


def test_the_playground_completes_a_first_rollout_step(binaries):
    """`make cluster`: the LWS status simulator runs, so `rollout step --until-complete` on the
    example completes (it waited on groups that never became ready and exited 4 before)."""
    proc = subprocess.Popen([sys.executable, "-m", "testenv.controlplane"], cwd=REPO, env=demo_env(binaries),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("export KUBECONFIG="), proc.stderr.read() if proc.poll() is not None else line
        env = {**os.environ, "KUBECONFIG": line.strip().split("=", 1)[1],
               "PATH": f"{binaries}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        step = subprocess.run(["kubectl", "disagg", "rollout", "step", "-f", "examples/prefill-decode.yaml",
                               "--until-complete", "--timeout", "1m"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120)
        assert step.returncode == 0, step.stdout + step.stderr
        assert "rollout complete at revision" in step.stdout
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        told = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "the LWS status simulator plays the LWS controller" in told
    assert ("make cluster-upstream" in told) == (unavailable_reason() is None)
    assert re.search(r"^export PATH=\S+ ", told, re.MULTILINE)
