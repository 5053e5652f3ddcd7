"""The two position stores (design §9.8) over one fleet, for the store contract and its twin runs:
the cluster's (`rollout.store.ClusterStore`, the RolloutState in the in-memory cluster of
tests/fakes/paced.py) and git's (`rollout.git_run.GitStore`, the state file in a real temporary git
repository, committed as `--commit` commits it). Both see the same live LWS (Argo CD's sync of
the committed state, tests/fakes/argo.py) and start from the same recorded position; a verb
runs through `verbs.run_verb` in each, as the command runs it."""

from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.api.naming import STATE_FILE
from kubectl_disagg.core.delivery.position import position_document
from kubectl_disagg.exits import StepExit
from kubectl_disagg.gitops import directory as directories
from kubectl_disagg.gitops.files import write_state
from kubectl_disagg.gitops.git import repository_for
from kubectl_disagg.rollout.git_step import Outcome, gitops_step
from kubectl_disagg.rollout.git_run import GitStore
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.views.verbs import refusal_sentence, verb_line
from tests.fakes.argo import deploy, round_trip
from tests.fakes.clock import FakeClock
from tests.fakes.paced import NS, PacedCluster, Printer
from tests.support.cli import on

# A canary of one slice held at its pause, then half the fleet after a soak, then the rest.
WAVES = """\
  waves:
  - slices: 1
    pause: {}
  - slices: "50%"
    pause: {duration: 15m}
"""


def set_text(name: str, image: str, slices: int, decode: int = 1) -> str:
    roles = "".join(f"""\
  - name: {role}
    spec:
      replicas: {replicas}
      leaderWorkerTemplate: {{workerTemplate: {{spec: {{containers: [{{name: server, image: "{image}"}}]}}}}}}
""" for role, replicas in (("prefill", 1), ("decode", decode)))
    return (f"apiVersion: disaggregatedset.x-k8s.io/v1\nkind: DisaggregatedSet\nmetadata: {{name: {name}, "
            f"namespace: {NS}}}\nspec:\n  slices: {slices}\n  roles:\n{roles}")


def policy_text(name: str, waves: str = WAVES) -> str:
    return (f"---\napiVersion: kubectl-disagg.x-k8s.io/v1alpha1\nkind: RolloutPolicy\nmetadata: {{name: {name}, "
            f"namespace: {NS}}}\nspec:\n  targetRef: {{name: {name}}}\n{waves}")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=Ada", "-c", "user.email=ada@example.invalid",
                           *args], check=True, capture_output=True, text=True).stdout


def loaded(directory: Path) -> list:
    """The sets of `directory` as a --gitops command loads them (their policies beside them)."""
    return [entry.ds for entry in directories.load(inputs.read_tree([str(directory)], inputs.Reading()),
                                                   inputs.Reading()).sets]


@dataclass
class Run:
    """What one verb did in one store: its exit code, the refusals' reasons, the error lines."""

    code: int
    refused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # each set acted on: whether its position changed
    said: list[str] = field(default_factory=list)  # the line the verb prints for each (who acted masked)


class Recording(Printer):
    def __init__(self):
        super().__init__()
        self.refusals: list[str] = []

    def refused(self, verb, ds, namespace, why, together):
        self.refusals.append(f"{ds.name}: {refusal_sentence(why)}")


class Twin:
    """One paced set `llm` (and optionally `plain`, a set without a RolloutPolicy) rolled from
    img:1 to img:2 through git for `steps` steps (None: until a step is held, at the canary's
    pause), then kept by both stores from that position."""

    def __init__(self, root: Path, slices: int = 4, steps: int | None = None, plain: bool = False):
        self.root, self.app, self.slices = root, root / "app", slices
        self.app.mkdir(parents=True)
        git(root, "init", "-q", "-b", "main")
        git(root, "config", "user.name", "Ada")  # the author of the commands' commits too
        git(root, "config", "user.email", "ada@example.invalid")
        (self.app / "llm.yaml").write_text(set_text("llm", "img:2", slices) + policy_text("llm"))
        if plain:
            (self.app / "plain.yaml").write_text(set_text("plain", "img:1", 1))
        (root / "old").mkdir()
        (root / "old" / "llm.yaml").write_text(set_text("llm", "img:1", slices))
        (old,) = loaded(root / "old")
        self.sets = loaded(self.app)
        self.ds = next(ds for ds in self.sets if ds.name == "llm")
        self.argo, self.state = deploy(old)
        self.clock = FakeClock()
        for _ in range(40 if steps is None else steps):
            if not self.step() and steps is None:
                break
        self.commit_state("the rollout so far")
        self.cluster = PacedCluster(self.argo.cluster)
        self.seed()

    # --- the rollout, through git ------------------------------------------------------------

    def sync(self) -> None:
        self.argo.sync(self.ds, self.state)
        self.argo.cluster.settle()

    def step(self) -> bool:
        """One step through git from the live fleet (synced, settled): whether it advanced."""
        self.sync()
        step = gitops_step(self.ds, self.state, self.argo.snapshot(self.ds), self.argo.served, now=self.clock.now())
        if step.outcome == Outcome.ADVANCED:
            self.state = round_trip(step.state, self.ds)
            self.sync()
        return step.outcome == Outcome.ADVANCED

    def template(self, image: str) -> None:
        """The set's template changed in a commit of its own (a new image, or a revert)."""
        (self.app / "llm.yaml").write_text(set_text("llm", image, self.slices) + policy_text("llm"))
        git(self.root, "commit", "-q", "--allow-empty", "-am", f"llm: {image}")
        self.sets = loaded(self.app)
        self.ds = next(ds for ds in self.sets if ds.name == "llm")

    @property
    def state_path(self) -> Path:
        return self.app / STATE_FILE

    def commit_state(self, message: str) -> None:
        write_state(str(self.state_path), self.state_path.read_bytes() if self.state_path.exists() else None,
                    self.state)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "--allow-empty", "-m", message)

    def seed(self) -> None:
        """The cluster's RolloutState given git's position (written through the cluster's store);
        none where git's state records none (a state a step wrote before the set had a policy)."""
        store = ClusterStore(self.cluster, [self.ds], None, clock=self.clock)
        position = self.state.position
        if position is None:
            self.cluster.state = None
            return
        store.write([store.change(self.ds, NS, lambda decision: position, self.clock.now())])

    # --- the stores ----------------------------------------------------------------------------

    def git_store(self, commit: bool = True) -> GitStore:
        """The store a `--gitops -f app/ [--commit]` command makes: the tree read once."""
        reading = inputs.Reading()
        tree = inputs.read_tree([str(self.app)], reading)
        repository = repository_for([str(self.state_path)], None) if commit else None
        return GitStore(tree, reading, None, repository, message=lambda changes: "rollout verb\n")

    def cluster_store(self) -> ClusterStore:
        return ClusterStore(self.cluster, self.sets, None, clock=self.clock)

    def run(self, store, verb: str) -> Run:
        printer = Recording()
        words = verb.split()
        code = run_verb(store, words[0], printer, full="--full" in words, skip_analysis="--full" in words,
                        clock=self.clock)
        return Run(int(code), printer.refusals, printer.errors,
                   [f"{r.ds.name}: {r.verb} changed={r.changed}" for r in printer.reports],
                   [verb_line(r).replace(r.by, "WHO") for r in printer.reports])

    def in_git(self, verb: str) -> Run:
        return self.run(self.git_store(), verb)

    def in_cluster(self, verb: str) -> Run:
        return self.run(self.cluster_store(), verb)

    # --- what each store holds -----------------------------------------------------------------

    def git_position(self) -> dict | None:
        (entry,) = [e for e in directories.load(inputs.read_tree([str(self.app)], inputs.Reading()),
                                                inputs.Reading()).sets if e.ds.name == "llm"]
        return anonymous(position_document(entry.state.position)) if entry.state.position else None

    def cluster_position(self) -> dict | None:
        position = self.cluster.position(self.ds)
        return anonymous(position_document(position)) if position is not None else None

    def head(self) -> str:
        return git(self.root, "rev-parse", "HEAD").strip()


def anonymous(document):
    """A position document without who acted (the cluster's user and git's author differ)."""
    if isinstance(document, dict):
        return {key: anonymous(value) for key, value in document.items() if key != "by"}
    if isinstance(document, list):
        return [anonymous(value) for value in document]
    return document


# --- live twins: one sequence of events through both modes, compared on what runs -------------

class LiveTwins:
    """One paced set `llm` (img:1) driven twice by the commands, in-process, on the same clock:

    - the terminal: the set's file (beside no state) and an in-memory cluster (`PacedCluster`:
      the RolloutState, the Lease, Events); `rollout step -f FILE` and the verbs act on it;
    - git: the set's file in a real temporary repository, `rollout step --gitops --commit` and
      the `--gitops --commit` verbs writing its state file, each commit synced as Argo CD syncs
      it (`MemoryArgo.sync`: the render of the committed state applied, the rest pruned) to a
      second in-memory cluster that `rollout step|status --gitops` read.

    Both clusters get the same readiness (`ready`; `observed` after every write). What each mode
    shows of its fleet: `live` (the LWS and Services), `status_terminal`/`status_git` (`rollout
    status -o json`'s derived fields) and the recorded positions."""

    def __init__(self, root: Path, monkeypatch, slices: int = 3):
        from tests.fakes.argo import MemoryArgo
        from tests.fakes.cluster import MemoryCluster, MemorySession

        self.clock = FakeClock()  # every command's, handed in with the cluster (`self.options`)
        self.terminal = PacedCluster(MemoryCluster(NS))
        self.argo = MemoryArgo()
        self.synced = MemorySession(self.argo.cluster, watches=False)
        self.options = on(self.terminal, self.clock)  # its cluster: the one the next command talks to
        self.root, self.file, self.app = root, root / "terminal" / "llm.yaml", root / "repo" / "app"
        self.file.parent.mkdir(parents=True)
        self.app.mkdir(parents=True)
        self.repo = self.app.parent
        git(self.repo, "init", "-q", "-b", "main")
        git(self.repo, "config", "user.name", "Ada")
        git(self.repo, "config", "user.email", "ada@example.invalid")
        self.image, self.slices, self.decode = "img:1", slices, 1
        self.edit()

    def edit(self, **change) -> None:
        """The set's file changed (image, slices, decode's replicas): in the terminal's file, and
        in git as a commit of its own."""
        for key, value in change.items():
            setattr(self, key, value)
        text = set_text("llm", self.image, self.slices, self.decode) + policy_text("llm")
        self.file.write_text(text)
        (self.app / "llm.yaml").write_text(text)
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "--allow-empty", "-m", f"llm: {change or 'the set'}")
        if (self.app / STATE_FILE).exists():
            self.sync()  # Argo CD syncs the commit (no state yet: the plugin refuses it, design §8.3)

    def cli(self, cluster, *argv: str) -> tuple[int, str, str]:
        import io

        from kubectl_disagg.cli import main

        self.options.sessions.cluster, out, err = cluster, io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(argv), self.options)
                code = 0
            except SystemExit as exited:
                code = int(exited.code or 0)
        assert "Traceback" not in err.getvalue(), err.getvalue()
        return code, out.getvalue(), err.getvalue()

    def in_terminal(self, *argv: str) -> tuple[int, str, str]:
        return self.cli(self.terminal, *argv, "-f", str(self.file))

    def in_git(self, *argv: str) -> tuple[int, str, str]:
        return self.cli(self.synced, *argv, "--gitops", "-f", str(self.app))

    def sync(self) -> None:
        """Argo CD syncs HEAD: the render of the committed set and state (`render_with_state`, what
        `render` and `cmp generate` apply), the rest pruned."""
        from kubectl_disagg.errors import UserError

        (entry,) = directories.load(inputs.read_tree([str(self.app)], inputs.Reading()), inputs.Reading()).sets
        try:
            self.argo.sync(entry.ds, entry.state)
        except UserError:
            return  # the plugin refuses the commit (design §8: a slice gained waits for a step): nothing applied
        observed(self.argo.cluster)

    def ready(self, ready_cap=None) -> None:
        """The pods of both fleets become ready (all, or as `ready_cap` says per LWS)."""
        self.terminal.memory.settle(ready_cap)
        self.argo.cluster.settle(ready_cap)


    def live(self, cluster) -> dict:
        """The live LWS (name → slice, role, revision, spec.replicas) and the Services' names."""
        from kubectl_disagg.core.api import naming

        lws = {}
        for name, obj in cluster.lws().items():
            labels = obj["metadata"]["labels"]
            lws[name] = (int(labels[naming.SLICE_LABEL]), labels[naming.ROLE_LABEL], labels[naming.REVISION_LABEL],
                         obj["spec"].get("replicas", 1))
        return {"lws": lws, "services": sorted(name for kind, name in cluster.objects if kind == "Service")}

    def step_terminal(self, limit: int = 12) -> int:
        """`rollout step` passes until one writes nothing (no LWS, no position): the last one's code."""
        for _ in range(limit):
            actions, position = len(self.terminal.actions), self.terminal_position()
            code = self.in_terminal("rollout", "step")[0]
            observed(self.terminal.memory)
            if code or (len(self.terminal.actions), self.terminal_position()) == (actions, position):
                return code
        raise AssertionError(f"rollout step still writing after {limit} passes")

    def step_git(self, limit: int = 12) -> int:
        """`rollout step --gitops --commit`, each commit synced, until one writes nothing: its code."""
        for _ in range(limit):
            code = self.in_git("rollout", "step", "--commit")[0]
            if code:
                return code
            self.sync()
        raise AssertionError(f"rollout step --gitops still advancing after {limit} commits")

    def verb(self, verb: str) -> tuple[int, int]:
        """`rollout VERB` in the terminal, and `rollout VERB --gitops --commit` (synced)."""
        words = verb.split()
        terminal = self.in_terminal("rollout", *words)[0]
        in_git = self.in_git("rollout", *words, "--commit")[0]
        self.sync()
        return terminal, in_git

    def terminal_position(self) -> dict | None:
        state = self.terminal.state
        return anonymous(state.get("position")) if state else None

    def git_position(self) -> dict | None:
        (entry,) = directories.load(inputs.read_tree([str(self.app)], inputs.Reading()), inputs.Reading()).sets
        position = entry.state.position if entry.state is not None else None
        return anonymous(position_document(position)) if position is not None else None

    def status_terminal(self) -> tuple[int, dict]:
        import json

        code, out, err = self.in_terminal("rollout", "status", "-o", "json")
        document = json.loads(out)
        available = any(c["type"] == "Available" and c["status"] == "True" for c in document["status"]["conditions"])
        return code, {"available": available, "complete": document["complete"],
                      "rollout": anonymous(document.get("rollout")),
                      "slices": {s["slice"]: {r["revision"]: r["replicas"] for r in s["revisions"]}
                                 for s in document["slices"]}}

    def status_git(self) -> tuple[int, dict]:
        import json

        code, out, err = self.in_git("rollout", "status", "-o", "json")
        document = json.loads(out)
        available = any(c["type"] == "Available" and c["status"] == "True" for c in document["status"]["conditions"])
        return code, {"available": available, "complete": document["complete"],
                      "rollout": anonymous(document.get("rollout")),
                      "slices": {index: {r["revision"]: r["replicas"] for r in group["revisions"]}
                                 for group in document["sync"]["slices"] for index in slice_indexes(group["slices"])}}


# `rollout step` ends alike in both modes once each has stepped as far as it can (design §9.7:
# through git the commits are the steps, a slice's start landing in the commit of its first
# planner step, a pause gate it stops at recorded by a commit of its own; the terminal's passes
# group otherwise). Its exit tables differ by design (exits.py): git's "waiting" (the next step
# needs readiness) and "complete" are a terminal pass that had nothing to do (done, 0).
STEP_ENDS = {StepExit.OK: StepExit.OK, StepExit.WAITING: StepExit.OK, StepExit.COMPLETE: StepExit.OK,
             StepExit.HELD: StepExit.HELD, StepExit.REFUSED: StepExit.REFUSED, StepExit.ERROR: StepExit.ERROR}


def running(live: dict) -> dict:
    """What runs: the LWS with replicas, and their Services. An LWS at 0 runs nothing, and the
    modes create and remove them at different times by design (design §9.6: a commit's render starts the
    admitted slices' new revision at 0 before any step; the terminal creates it at its first
    planner step's size, and removes a drained LWS in the pass after it reached 0)."""
    empty = {name for name, (_, _, _, replicas) in live["lws"].items() if not replicas}
    return {"lws": {name: lws for name, lws in live["lws"].items() if name not in empty},
            "services": [s for s in live["services"] if s.removesuffix(naming.SERVICE_SUFFIX) not in empty]}


def slice_indexes(label: str) -> list[int]:
    """The slices a status row names: "slice 3", "slices 0-2", "slices 0-1, 4"."""
    indexes = []
    for part in label.split(" ", 1)[1].split(", "):
        first, _, last = part.partition("-")
        indexes += range(int(first), int(last or first) + 1)
    return indexes


def observed(cluster) -> None:
    """The LWS controller saw every spec written (observedGeneration): no pod became ready
    meanwhile, only the `ready` events make them so. Both fleets are observed after every write
    of theirs (a pass, a sync)."""
    def before(name: str, replicas: int) -> int:
        return min(replicas, cluster.objects[("LeaderWorkerSet", name)].get("status", {}).get("readyReplicas", 0))
    cluster.settle(before)
