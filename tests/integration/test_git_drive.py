"""The rollout driver (`rollout step --gitops --push`, issue 49) as a process, against a bare
remote, the real kube-apiserver and the real-process sync (hack/gitops-sync.sh, polled like
Argo CD polls its repository), with the LWS status simulator playing the LWS controller and a
real Prometheus judging the canary.

A person's actions are only the decisions: merging the decision branches the driver pushed, and
`rollout promote --gitops --commit` at the pause. A good 12-slice rollout with a canary, an
analysis and a pause completes; a bad canary is aborted and rolled back by the driver after one
merge.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from testenv.controlplane import playground_env
from tests.support.paths import REPO

SLICES = 12
TTFT = "vllm:time_to_first_token_seconds"
BOT = {"GIT_AUTHOR_NAME": "disagg-bot", "GIT_AUTHOR_EMAIL": "bot@example.invalid",
       "GIT_COMMITTER_NAME": "disagg-bot", "GIT_COMMITTER_EMAIL": "bot@example.invalid"}
PERSON = {"GIT_AUTHOR_NAME": "carol", "GIT_AUTHOR_EMAIL": "carol@example.invalid",
          "GIT_COMMITTER_NAME": "carol", "GIT_COMMITTER_EMAIL": "carol@example.invalid"}


def policy(namespace: str, prometheus: str) -> dict:
    query = (f'histogram_quantile(0.95, sum by (le) (rate({TTFT}_bucket{{namespace="{{{{namespace}}}}", '
             'set="{{set}}", revision="{{revision}}", slice=~"{{slices}}"}[10s])))')
    return {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
            "metadata": {"name": "llm", "namespace": namespace},
            "spec": {"targetRef": {"name": "llm"}, "maxSlicesInFlight": 3,
                     "waves": [{"slices": 1, "analysis": ["ttft"]}, {"slices": "25%", "pause": {}},
                               {"slices": "100%"}],
                     "onFailure": "abort",
                     "analysis": {"prometheus": {"address": prometheus}, "checks": [
                         {"name": "ttft", "role": "prefill", "query": query, "successCondition": "< 0.5",
                          "interval": "1s", "count": 2}]}}}


def the_set(namespace: str, image: str) -> dict:
    roles = [{"name": role, "spec": {"replicas": 1, "leaderWorkerTemplate": {
        "workerTemplate": {"spec": {"containers": [{"name": "vllm", "image": image}]}}}}}
        for role in ("prefill", "decode")]
    return {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
            "metadata": {"name": "llm", "namespace": namespace}, "spec": {"slices": SLICES, "roles": roles}}


class Fleet:
    """The bare remote, the bot's clone, a person's clone, Argo CD's clone and its poll loop."""

    def __init__(self, root: Path, cp, namespace: str, prometheus: str):
        self.root, self.namespace, self.prometheus = root, namespace, prometheus
        self.env = playground_env(cp)
        self.bare = root / "remote.git"
        self.run("git", "init", "-q", "--bare", "-b", "main", str(self.bare), cwd=root)
        self.desk, self.work, self.argo = (self.clone(name) for name in ("desk", "work", "argo"))
        self.stop, self.syncs, self.failed = threading.Event(), 0, ""  # failed: the last sync that failed, its words
        self.poller: threading.Thread | None = None

    def run(self, *argv: str, cwd: Path, who: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=cwd, env={**self.env, **(who or PERSON)}, capture_output=True, text=True,
                              check=check, timeout=600)

    def clone(self, name: str) -> Path:
        self.run("git", "clone", "-q", str(self.bare), name, cwd=self.root)
        return self.root / name

    def write(self, image: str) -> None:
        app = self.desk / "app"
        app.mkdir(exist_ok=True)
        (app / "llm.yaml").write_text(yaml.safe_dump_all([the_set(self.namespace, image),
                                                          policy(self.namespace, self.prometheus)], sort_keys=False))

    def person_commits(self, image: str, message: str) -> None:
        self.run("git", "pull", "-q", "--ff-only", "origin", "main", cwd=self.desk, check=False)
        self.write(image)
        self.run("git", "add", "-A", cwd=self.desk)
        self.run("git", "commit", "-q", "-m", message, cwd=self.desk)
        self.run("git", "push", "-q", "origin", "HEAD:main", cwd=self.desk)

    def first_deploy(self, image: str) -> None:
        self.write(image)
        self.run("kubectl", "disagg", "rollout", "state", "init", "-f", "app/", cwd=self.desk)
        self.run("git", "add", "-A", cwd=self.desk)
        self.run("git", "commit", "-q", "-m", "llm: deploy through git", cwd=self.desk)
        self.run("git", "push", "-q", "origin", "HEAD:main", cwd=self.desk)
        for clone in (self.work, self.argo):
            self.run("git", "pull", "-q", "origin", "main", cwd=clone)

    @contextlib.contextmanager
    def argo_cd(self):
        """Argo CD's stand-in: poll the remote's main, sync each new commit with hack/gitops-sync.sh."""
        def poll():
            synced = None
            while not self.stop.is_set():
                listed = self.run("git", "ls-remote", "origin", "refs/heads/main", cwd=self.argo, check=False)
                head = listed.stdout.split("\t", 1)[0]
                if head and head != synced:
                    self.run("git", "fetch", "-q", "origin", cwd=self.argo, check=False)
                    self.run("git", "reset", "-q", "--hard", head, cwd=self.argo, check=False)
                    done = self.run(str(REPO / "hack" / "gitops-sync.sh"), "app", self.namespace, cwd=self.argo,
                                    check=False)
                    if done.returncode == 0:
                        synced, self.syncs = head, self.syncs + 1
                    else:
                        self.failed = f"{head[:12]}: {done.stderr[-2000:]}"
                self.stop.wait(0.5)
        self.poller = threading.Thread(target=poll, daemon=True)
        self.poller.start()
        try:
            yield
        finally:
            self.stop.set()
            self.poller.join(30)

    def drive(self, *flags: str) -> tuple[int, str, float]:
        started = time.monotonic()
        done = self.run("kubectl", "disagg", "rollout", "step", "--gitops", "-f", "app/", "--push", "origin",
                        "--timeout", "10m", "-q", *flags, cwd=self.work, who=BOT, check=False)
        return done.returncode, done.stderr + done.stdout, time.monotonic() - started

    def decision_branch(self) -> str:
        listed = self.run("git", "ls-remote", "--heads", "origin", "refs/heads/disagg/*", cwd=self.desk).stdout
        (ref,) = [line.split("\t")[1] for line in listed.splitlines()]
        return ref.removeprefix("refs/heads/")

    def merge(self, branch: str) -> None:
        self.run("git", "fetch", "-q", "origin", cwd=self.desk)
        self.run("git", "reset", "-q", "--hard", "origin/main", cwd=self.desk)
        self.run("git", "merge", "-q", "--no-ff", "-m", f"Merge {branch}", f"origin/{branch}", cwd=self.desk)
        self.run("git", "push", "-q", "origin", "HEAD:main", cwd=self.desk)

    def promote(self) -> None:
        self.run("git", "pull", "-q", "--ff-only", "origin", "main", cwd=self.desk)
        self.run("kubectl", "disagg", "rollout", "promote", "--gitops", "-f", "app/", "--commit", cwd=self.desk)
        self.run("git", "push", "-q", "origin", "HEAD:main", cwd=self.desk)

    def revisions(self) -> set[str]:
        """Every revision the committed tree renders (the old one and the new one at 0)."""
        rendered = yaml.safe_load_all(self.run("kubectl", "disagg", "render", "-f", "app/", cwd=self.desk).stdout)
        return {d["metadata"]["labels"]["disaggregatedset.x-k8s.io/revision"] for d in rendered
                if d["kind"] == "LeaderWorkerSet"}

    def main_log(self) -> list[tuple[str, str]]:
        self.run("git", "fetch", "-q", "origin", cwd=self.desk)
        out = self.run("git", "log", "--format=%an%x1f%s", "origin/main", cwd=self.desk).stdout
        return [tuple(line.split("\x1f", 1)) for line in reversed(out.splitlines())]


@pytest.fixture
def fleet(tmp_path, control_plane, namespace, lws_simulator, exporter, prometheus):
    fleet = Fleet(tmp_path, control_plane, namespace, prometheus.address)
    with lws_simulator.running(namespace, delay=0.2, interval=0.2):
        yield fleet, exporter, prometheus


def serve(fleet: Fleet, exporter, prometheus, seconds: float) -> None:
    """Every revision's pods answer in `seconds` to the first token (the analysis judges the new one)."""
    for revision in fleet.revisions():
        for slice_ in range(SLICES):
            exporter.set(TTFT, seconds, namespace=fleet.namespace, set="llm", revision=revision, slice=str(slice_),
                         role="prefill")
        prometheus.wait_for_samples(f'rate({TTFT}_count{{revision="{revision}"}}[10s]) > 0')


def test_a_12_slice_rollout_runs_itself_between_the_decisions(fleet):
    fleet, exporter, prometheus = fleet
    fleet.first_deploy("img:1")
    with fleet.argo_cd():
        assert fleet.drive()[0] == 0  # synced and ready: nothing to roll
        fleet.person_commits("img:2", "llm: img:2")
        serve(fleet, exporter, prometheus, 0.1)
        runs, actions = [], 0
        for _ in range(10):
            code, out, seconds = fleet.drive()
            runs.append((code, out, seconds))
            if code == 0:
                break
            assert code == 7, f"{out}\nlast failed sync: {fleet.failed}"
            if "held: the RolloutPolicy holds the rollout" in out:
                fleet.promote()
            else:
                fleet.merge(fleet.decision_branch())
            actions += 1
        else:
            raise AssertionError(runs)
    log = fleet.main_log()
    steps = [subject for author, subject in log if author == "disagg-bot"]
    assert code == 0 and "complete" in out, runs
    assert actions == 4, runs  # the analysis opens wave 2, the pause, promote, wave 3 starts
    assert {author for author, _ in log[log.index(("carol", "llm: img:2")) + 1:]} == {"disagg-bot", "carol"}
    passed = fleet.run("git", "log", "--format=%H", "--grep=analysis after wave 1 passed", "origin/main",
                       cwd=fleet.desk).stdout.split()
    assert len(passed) == 1, log  # the whole title is the body's first line
    lines = sum(len(out.splitlines()) for _, out, _ in runs)
    print(f"12 slices: {len(steps)} bot commits, {actions} person actions, "
          f"{sum(s for _, _, s in runs):.0f}s, {lines} lines printed")


def test_a_bad_canary_is_aborted_and_rolled_back_after_one_decision(fleet):
    fleet, exporter, prometheus = fleet
    fleet.first_deploy("img:1")
    with fleet.argo_cd():
        fleet.person_commits("img:bad", "llm: img:bad")
        serve(fleet, exporter, prometheus, 2.0)
        code, out, _ = fleet.drive()
        assert code == 7 and "decision: the rollout is aborted: its rollback starts" in out, out
        fleet.merge(fleet.decision_branch())
        code, out, _ = fleet.drive()
    assert code == 7 and "aborted" in out, f"{out}\nlast failed sync: {fleet.failed}"  # rolled back: held until the template is reverted or retried
    log = fleet.main_log()
    assert any("rollback of slice 0" in subject for _, subject in log), log
    live = yaml.safe_load(fleet.run("kubectl", "get", "leaderworkersets", "-n", fleet.namespace, "-o", "yaml",
                                    cwd=fleet.desk).stdout)["items"]
    revisions = {o["metadata"]["labels"]["disaggregatedset.x-k8s.io/revision"] for o in live}
    assert len(revisions) == 1 and len(live) == 2 * SLICES  # every slice back at the stable revision


def test_the_cronjob_and_its_rbac_are_accepted_by_the_api_server(control_plane, namespace):
    """deploy/rbac.yaml and deploy/driver/cronjob.yaml, moved to the test's namespace, and the
    Secret of the git credentials as the CronJob's comment creates it: --dry-run=server, so
    admission and the schemas judge them, nothing stored."""
    texts = [(REPO / "deploy" / "rbac.yaml").read_text(), (REPO / "deploy" / "driver" / "cronjob.yaml").read_text()]
    documents = [d for text in texts for d in yaml.safe_load_all(text) if d]
    for document in documents:
        document["metadata"]["namespace"] = namespace
        for subject in document.get("subjects", []):
            subject["namespace"] = namespace
    applied = control_plane.kubectl("apply", "--dry-run=server", "--server-side", "-f", "-",
                                    input=yaml.safe_dump_all(documents))
    assert "cronjob.batch/kubectl-disagg-driver serverside-applied (server dry run)" in applied.stdout, applied.stdout
    secret = control_plane.kubectl("create", "secret", "generic", "kubectl-disagg-git", "-n", namespace,
                                   "--from-literal=token=t", "--dry-run=server")
    assert "created (server dry run)" in secret.stdout
