"""What a rollout through the driver costs (issue 49): commits, a person's actions, wall time and
lines printed, for 12 and 100 slices.

The fleet of docs/gitops.md ("How many commits"): prefill 3 and decode 2 per slice, surge 1,
max unavailable 0; a canary whose analysis (a stub Prometheus answering 0.1 s to the first
token) opens the 25 % wave, which ends at a pause; the rest; `maxSlicesInFlight: 3`. The driver
(`rollout step --gitops --push origin`, in-process) runs in a clone of a bare remote; Argo CD is
the in-memory one syncing the remote's main whenever the step waits (tests/support/git_drive.py),
so wall time is the driver's own work (git, reading, deciding, writing), not a cluster's. A
person's actions: the template change, each merge of a decision branch, `promote` at the pause.

    python benchmarks/git_drive.py [--slices 12 100]
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import io
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kubectl_disagg.cli import main as cli  # noqa: E402
from tests.support.cli import on  # noqa: E402
from tests.support.git_drive import APP, BOT, Remote, RemoteArgo, as_person, git  # noqa: E402


class Prometheus(http.server.BaseHTTPRequestHandler):
    """Every query: one sample, 0.1."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {}, "value": [time.time(), "0.1"]}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def policy(address: str) -> dict:
    return {"maxSlicesInFlight": 3, "onFailure": "abort",
            "waves": [{"slices": 1, "analysis": ["ttft"]}, {"slices": "25%", "pause": {}}, {"slices": "100%"}],
            "analysis": {"prometheus": {"address": address}, "checks": [
                {"name": "ttft", "role": "prefill", "query": "ttft", "successCondition": "< 0.5", "interval": "1s",
                 "count": 2}]}}


def run(argv: list[str], session, env: dict[str, str]) -> tuple[int, str]:
    saved = dict(os.environ)
    os.environ.update(env)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stderr(printed), contextlib.redirect_stdout(printed):
            try:
                cli(argv, on(session))
            except SystemExit as exited:
                return int(exited.code or 0), printed.getvalue()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    raise AssertionError("the CLI did not exit")


def measured(slices: int, address: str) -> dict:
    bot = {"GIT_AUTHOR_NAME": BOT[0], "GIT_AUTHOR_EMAIL": BOT[1], "GIT_COMMITTER_NAME": BOT[0],
           "GIT_COMMITTER_EMAIL": BOT[1]}
    with tempfile.TemporaryDirectory() as scratch:
        remote = Remote(Path(scratch), slices, {"prefill": 3, "decode": 2}, policy(address))
        session = RemoteArgo(remote)
        driver = ["rollout", "step", "--gitops", "-f", str(remote.work / APP), "--push", "origin", "--timeout", "3h"]
        code, _ = run(driver, session, bot)
        assert code == 0, code
        remote.person_pushes("img:2", "llm: img:2")
        actions, lines, runs, seconds = 1, 0, 0, 0.0
        for _ in range(50):
            started = time.monotonic()
            code, out = run(driver, session, bot)
            seconds += time.monotonic() - started
            runs, lines = runs + 1, lines + len(out.splitlines())
            if code == 0:
                break
            assert code == 7, out
            if "held: the RolloutPolicy holds the rollout" in out:
                git(remote.desk, "pull", "-q", "--ff-only", "origin", "main")
                promoted, said = run(["rollout", "promote", "--gitops", "-f", str(remote.desk / APP), "--commit"],
                                     session, as_person())
                assert promoted == 0, said
                git(remote.desk, "push", "-q", "origin", "main")
            else:
                (branch,) = remote.decision_branches()
                remote.merge(branch)
            actions += 1
        else:
            raise AssertionError("the rollout did not complete")
        git(remote.desk, "fetch", "-q", "origin")
        change = git(remote.desk, "log", "-1", "--format=%H", "--grep=^llm: img:2$", "origin/main")
        log = git(remote.desk, "log", "--format=%ae", f"{change}^..origin/main").splitlines()  # the rollout's
        return {"bot": sum(1 for email in log if email == BOT[1]), "merged": sum(1 for email in log if email != BOT[1]),
                "actions": actions, "runs": runs, "seconds": seconds, "lines": lines}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slices", type=int, nargs="+", default=[12, 100])
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Prometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"http://127.0.0.1:{server.server_address[1]}"
    print(f"{'slices':>6}  {'bot commits':>11}  {'people commits':>14}  {'person actions':>14}  {'driver runs':>11}  "
          f"{'wall time':>9}  {'lines printed':>13}")
    for slices in args.slices:
        m = measured(slices, address)
        print(f"{slices:>6}  {m['bot']:>11}  {m['merged']:>14}  {m['actions']:>14}  {m['runs']:>11}  "
              f"{m['seconds']:>8.0f}s  {m['lines']:>13}")
    server.shutdown()


if __name__ == "__main__":
    main()
