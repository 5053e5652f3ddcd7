"""A git repository of sets that `rollout step --gitops` commits into, for the integration tests."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from kubectl_disagg.argocd import sidecar
from kubectl_disagg.cli import main
from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.naming import STATE_FILE
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import StepExit
from kubectl_disagg.gitops.served import SERVED_RESOURCE
from tests.oracles.argocd_harness import LWS_API_VERSIONS, resource_health, sync_targets
from tests.support.paths import REPO
from tests.support.stepping import Live, Run, assert_matches_render, check_invariants, model, write_set


ARGO_MANAGER = "argocd-controller"


READER = "nobody"  # bound below to get/list/watch on LeaderWorkerSets and get on RolloutStates


def application_ignores() -> list[dict]:
    """The ignoreDifferences of the Application deploy/argocd ships."""
    application = yaml.safe_load((REPO / "deploy" / "argocd" / "application.yaml").read_text())
    assert "RespectIgnoreDifferences=true" in application["spec"]["syncPolicy"]["syncOptions"]
    return application["spec"]["ignoreDifferences"]


class GitopsRepo:
    """A git repository holding the set, synced to the cluster the way Argo CD syncs it."""

    def __init__(self, root: Path, control_plane, namespace: str, simulator, live: Live, capsys, app_path: str = ""):
        """`app_path`: the Application's directory in the repository, where the set lives."""
        self.root, self.control_plane, self.namespace = root, control_plane, namespace
        self.app_path = app_path
        self.simulator, self.live, self.capsys = simulator, live, capsys
        self.applied: set[tuple[str, str]] = set()
        self.serves_states = True  # KUBE_API_VERSIONS names the RolloutState kind
        self.parameters: dict[str, str] = {}  # the Application's plugin parameters (as ARGOCD_ENV_*)
        self.step_args: list[str] = []  # what every `rollout step --gitops` is given besides -f
        self.label_tracking = False  # Argo CD's tracking label on what the sync applies
        self.set_file = root / app_path / "llm.yaml"
        self.state_file = root / app_path / STATE_FILE
        self.target = str(root / app_path)  # what `-f` names (relative to the working directory, if so)
        self.set_file.parent.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", *args],
                              cwd=self.root, check=True, capture_output=True, text=True).stdout

    def change_set(self, message: str, replicas: dict[str, int], **kwargs) -> None:
        written = write_set(self.root.parent, self.namespace, replicas, **kwargs)
        document = yaml.safe_load(written.read_text())
        written.unlink()
        self.set_file.write_text(yaml.safe_dump(document, sort_keys=False))
        self.commit(message)

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def clean(self) -> bool:
        return self.git("status", "--porcelain") == ""

    # -- Argo CD -----------------------------------------------------------------------------

    def generate_committed(self) -> Run:
        """`cmp generate` over HEAD's tree, as Argo CD's repo server renders a commit for the
        destination cluster (its KUBE_API_VERSIONS) in the plugin's sidecar: the plugin's
        parameters at their defaults, plus `parameters`."""
        export = self.root.parent / "export"
        subprocess.run(["rm", "-rf", str(export)], check=True)
        export.mkdir()
        archive = subprocess.run(["git", "archive", "HEAD"], cwd=self.root, check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(export, filter="data")
        api_versions = LWS_API_VERSIONS + ([SERVED_RESOURCE] if self.serves_states else [])
        environ = {"ARGOCD_APP_NAME": "llm", "ARGOCD_APP_NAMESPACE": self.namespace,
                   "ARGOCD_APP_REVISION": self.git("rev-parse", "HEAD").strip(),
                   "KUBE_API_VERSIONS": ",".join(api_versions), **self.parameters}
        self.capsys.readouterr()
        try:
            code = sidecar.generate(environ, str(export / self.app_path))
        except UserError as err:
            code = 1
            print(*err.lines(), sep="\n", file=sys.stderr)
        out, err = self.capsys.readouterr()
        return Run(code, out if code == 0 else "", err)

    def render_committed(self) -> list[dict]:
        run = self.generate_committed()
        assert run.code == 0, run.err
        warned = [line for line in run.err.splitlines() if f"does not serve {SERVED_RESOURCE}" in line]
        assert len(warned) == (0 if self.serves_states or not self.state_committed() else 1), run.err
        objects = [o for o in yaml.load_all(run.out, Loader=yaml.CSafeLoader) if o]  # LibYAML: a sync reads every object
        states = [o for o in objects if o["kind"] == "RolloutState"]
        assert len(states) == (1 if self.serves_states and self.state_committed() else 0)
        return objects

    def refused_sync(self) -> str:
        """A sync Argo CD cannot start: the plugin refuses the commit (one line), nothing changes."""
        before = self.live.groups()
        run = self.generate_committed()
        assert run.code == 1 and run.out == "", run
        (line,) = run.err.splitlines()
        assert self.live.groups() == before
        return line

    def state_committed(self) -> bool:
        return str(self.state_file.relative_to(self.root)) in self.git("ls-tree", "-r", "--name-only", "HEAD").split()

    def sync(self, kinds: tuple[str, ...] | None = None) -> None:
        """Apply HEAD and prune; with `kinds`, only the objects of those kinds (a sync under
        way: Argo CD applies in waves, and a step may land between them). What is applied is
        what Argo CD applies: the shipped Application's ignoreDifferences with
        RespectIgnoreDifferences, against the live objects (tests/oracles/argocd_harness.py
        `sync_targets`). No LWS falls below its live size unless the commit asked for it."""
        rendered_objects = [o for o in self.render_committed() if kinds is None or o["kind"] in kinds]
        for obj in rendered_objects if self.label_tracking else ():  # Argo CD's label tracking marks what it applies
            obj["metadata"].setdefault("labels", {})["app.kubernetes.io/instance"] = "llm"
        before = {o["metadata"]["name"]: o for o in self.live.lws()}
        state = self.live_state()
        live = {("LeaderWorkerSet", name): o for name, o in before.items()} | {
            ("Service", o["metadata"]["name"]): {"apiVersion": "v1", "kind": "Service", **o}  # (list items lack them)
            for o in self.live.services()} | (
            {("RolloutState", state["metadata"]["name"]): state} if state else {})
        objects = sync_targets([(live.get((o["kind"], o["metadata"]["name"])), o) for o in rendered_objects],
                               application_ignores(),
                               tracking_method="label" if self.label_tracking else "annotation")
        rendered = {(o["kind"], o["metadata"]["name"]) for o in objects}
        # Argo CD's server-side sync forces conflicts (objects another manager wrote are taken over).
        self.control_plane.kubectl("apply", "--server-side", "--force-conflicts", f"--field-manager={ARGO_MANAGER}",
                                   "-f", "-", input="".join("---\n" + yaml.dump(o, Dumper=yaml.CSafeDumper) for o in objects))
        for kind, name in sorted(self.applied - rendered):  # prune
            if kinds is None or kind in kinds:
                self.control_plane.kubectl("delete", kind.lower(), name, "-n", self.namespace)
        self.applied = rendered | {(kind, name) for kind, name in self.applied if kinds and kind not in kinds}
        after = {o["metadata"]["name"]: o["spec"].get("replicas") for o in self.live.lws()}
        for obj in rendered_objects:
            name = obj["metadata"]["name"]
            if obj["kind"] == "LeaderWorkerSet" and name in before and name in after:
                was = before[name]["spec"].get("replicas", 1)
                assert after[name] >= was or after[name] == obj["spec"].get("replicas"), (
                    f"leaderworkerset/{name} fell from {was} to {after[name]} at a sync; the commit said "
                    f"{obj['spec'].get('replicas')} ({naming.REPLICAS_OWNER_ANNOTATION}: "
                    f"{(obj['metadata'].get('annotations') or {}).get(naming.REPLICAS_OWNER_ANNOTATION)})")

    def live_state(self) -> dict | None:
        found = self.control_plane.kubectl("get", "rolloutstates.kubectl-disagg.x-k8s.io", "-n", self.namespace,
                                           "-o", "json").stdout
        items = json.loads(found)["items"]
        assert len(items) <= 1
        return items[0] if items else None

    def state_health(self) -> dict | None:
        """Argo CD's health of the live RolloutState (None when there is none)."""
        live = self.live_state()
        return None if live is None else resource_health(live)

    def step(self, *args: str) -> Run:
        return self.cli("rollout", "step", "--gitops", "-f", self.target, "--kubeconfig",
                        str(self.control_plane.kubeconfig), "--context", READER, *self.step_args, *args)

    def status(self, *args: str) -> Run:
        return self.cli("rollout", "status", "--gitops", "-f", self.target, "--kubeconfig",
                        str(self.control_plane.kubeconfig), "--context", READER, *args)

    def next_action(self) -> tuple[str, int]:
        run = self.status("-o", "json")
        return json.loads(run.out)["sync"]["nextAction"], run.code

    def cli(self, *argv: str) -> Run:
        self.capsys.readouterr()
        with pytest.raises(SystemExit) as exited:
            main(list(argv))
        out, err = self.capsys.readouterr()
        assert "Traceback" not in err
        return Run(exited.value.code, out, err)

    def advance(self, rounds: int) -> None:
        """`rounds` rounds of sync → ready → step (each one advancing) → commit."""
        for round_ in range(rounds):
            self.sync()
            self.simulator.sync(self.namespace)
            assert self.step().code == StepExit.OK
            self.commit(f"step {round_}")

    def roll(self, max_rounds: int = 40) -> list[Run]:
        """Rounds of sync → ready → step → commit until the step says complete."""
        ds = model(self.set_file)
        initial = self.live.totals(ds.name)
        runs = []
        for _ in range(max_rounds):
            self.sync()
            check_invariants(ds, self.live, initial)
            check_floor(ds, self.state_file, self.live)
            check_services(self.live)
            self.check_state_health()
            self.simulator.sync(self.namespace)
            run = self.step()
            runs.append(run)
            if run.code == StepExit.COMPLETE:
                assert self.clean(), "a complete step wrote something"
                return runs
            assert run.code == StepExit.OK, (run.code, run.out, run.err)
            self.commit(f"rollout step {len(runs)}")
        raise AssertionError(f"not complete after {max_rounds} rounds: {runs[-1]}")

    def check_state_health(self) -> None:
        """After a sync: the live state is the committed one, and Argo CD reads it Suspended while
        a slice runs another revision than the set's (waiting for the next commit), Healthy at rest."""
        if not self.serves_states:
            assert self.live_state() is None
            return
        live, committed = self.live_state(), yaml.safe_load(self.state_file.read_text())
        assert {k: live[k] for k in committed if k != "metadata"} == {k: v for k, v in committed.items()
                                                                     if k != "metadata"}
        revision = model(self.set_file).revision  # a slice not at it alone waits for the next commit
        rolling = any({r["revision"] for r in s["revisions"]} != {revision} for s in committed["slices"])
        assert self.state_health() == {"status": "Suspended" if rolling else "Healthy",
                                       "message": live["rollout"]["message"]}
        if rolling:
            assert live["rollout"]["phase"] == "Rolling" and "next: rollout step --gitops" in live["rollout"]["message"]


def check_floor(ds, state_file: Path, live: Live) -> None:
    """The capacity floor on the live objects: in a slice rolling from one old revision, a role
    that started at or above its target keeps target − maxUnavailable across its revisions (the
    target and start the committed state records)."""
    state = yaml.safe_load(state_file.read_text())
    targets = {r["name"]: r for r in state["target"]["roles"]}
    for entry in state["slices"]:
        revisions = entry["revisions"]
        old = [r for r in revisions if r["revision"] != state["target"]["revision"]]
        if len(old) != 1 or entry["slice"] >= ds.slices:
            continue  # at rest, a rollout over a rollout (drained a group at a time, design §4), a slice removed
        groups = live.groups().get(entry["slice"], {})
        for role, target in targets.items():
            started = (old[0].get("initialReplicas") or old[0]["replicas"]).get(role, 0)
            total = sum(group.get(role, 0) for group in groups.values())
            if started >= target["replicas"]:
                floor = target["replicas"] - target["maxUnavailable"]
                assert total >= floor, f"slice {entry['slice']} role {role}: {total} < {floor}: {groups}"


def check_services(live: Live) -> None:
    services = {s["metadata"]["name"] for s in live.services()}
    for lws in live.lws():
        assert lws["metadata"]["name"] + naming.SERVICE_SUFFIX in services, lws["metadata"]["name"]


def deploy(repo: GitopsRepo, replicas: dict[str, int], **kwargs) -> None:
    repo.change_set("add the set", replicas, **kwargs)
    run = repo.step()  # nothing live: the state is created from the document
    assert run.code == StepExit.OK and "created the rollout state" in run.out, run
    repo.commit("rollout state")
    assert len(repo.roll()) == 1  # synced and ready: complete
    assert_matches_render(model(repo.set_file), repo.live)
