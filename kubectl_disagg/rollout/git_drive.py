"""`rollout step --gitops --push REMOTE`: a git rollout that runs itself between decisions (issue 49).

The loop, each round: the working tree must be clean; fetch the rollout's branch; the local
branch must be the remote's (behind it: moved up to it; ahead by step commits of the bot that
never landed, a crash between commit and push: they are dropped and the step decided again,
never rebased; ahead by anything else: refused); the decision branches merged since the last
run are noted with who merged them (and deleted); then one step is taken (`take`, the one
adapter to `rollout step --gitops --wait --commit`: it waits until the cluster shows the
remote's commit synced and ready, then decides and commits the next step locally; while it
waits, the remote is looked at too: a branch that moved ends the wait, and the round starts over).

A step that is not a decision (`gitops.decisions`) is pushed to the branch, and the loop goes
on. A decision's commit is pushed to a branch named for it (and `on_decision` run, e.g. to open
a pull request), the local branch put back, and the run ends 7 naming what a person reviews;
run again after the merge, it goes on. A push the remote refuses (a protected branch) ends the
run, 1; a push that finds the remote moved (another driver landed first) drops the commit and
decides again. Every wait is bounded by the run's deadline (in `take`); a sync that never comes
ends 4 naming the commit the cluster does not show.

Nothing is printed here: each event goes to a `DrivePrinter` (views/git_drive.py).
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.errors import UserError
from kubectl_disagg.exits import StepExit
from kubectl_disagg.gitops.decisions import STEP, Routes, decision_branch, step_kind
from kubectl_disagg.gitops.remote import Author, Clone, Pushed
from kubectl_disagg.gitops.state import RolloutState


@dataclass(frozen=True)
class Stepped:
    """One set's step as the driver reads it (from `rollout step --gitops`'s own result)."""

    ds: DisaggregatedSet
    before: RolloutState | None
    after: RolloutState | None
    outcome: Outcome
    reasons: tuple[str, ...] = ()
    timed_out: bool = False


@dataclass(frozen=True)
class Taken:
    """What one `rollout step --gitops --wait --commit` did: its code, each set's step, and the
    commit it made locally (None: nothing advanced)."""

    code: StepExit
    steps: tuple[Stepped, ...]
    revision: str | None = None


@dataclass(frozen=True)
class Decision:
    """Where the run stopped for a person: the decision's kind, its commit and the branch it is on
    (`pending`: pushed by an earlier run, not merged yet), the commit's subject."""

    kind: str
    commit: str
    branch: str
    subject: str
    pending: bool = False


@dataclass(frozen=True)
class Approval:
    """A decision branch merged into the rollout's branch: the merge and who made it."""

    branch: str
    merge: str
    by: Author | None  # None: fast-forwarded, so git does not say who merged it


class DrivePrinter(Protocol):
    """Where the driver's events go (views/git_drive.py)."""

    def landed(self, commit: str, subject: str, kind: str) -> None: ...

    def note(self, event: str, *details: str) -> None: ...

    def approved(self, approval: Approval) -> None: ...

    def decision(self, decision: Decision) -> None: ...

    def held(self, steps: Sequence[Stepped]) -> None: ...

    def refused(self, branch: str, words: Sequence[str]) -> None: ...

    def not_synced(self, commit: str, subject: str, steps: Sequence[Stepped]) -> None: ...

    def stopped(self, code: StepExit, steps: Sequence[Stepped]) -> None: ...

    def complete(self, landed: int) -> None: ...


@dataclass(frozen=True)
class DriveOptions:
    """`routes`: which kinds stop for review; `prefix`: the decision branches' (`PREFIX/NAME/...`);
    `on_decision`: a shell command run after a decision's branch is pushed (DISAGG_DECISION_*
    in its environment); `bot`: the identity the step commits carry (None: git's own); `state_files`:
    the names of the files a bot's step commit may touch (the state files'); `rounds`: a bound
    on the loop (a step per round)."""

    routes: Routes = Routes()
    prefix: str = "disagg"
    on_decision: str | None = None
    bot: Author | None = None
    state_files: frozenset[str] = field(default_factory=frozenset)
    rounds: int = 10_000


class RemoteMoved(Exception):
    """The remote's branch moved while a step waited for the cluster: decide again from it."""


class WatchingRemote:
    """A cluster session whose watches (a step waiting for the sync) last at most `poll` seconds
    and then look at the remote: a branch that moved meanwhile (another driver, a person) ends the
    step (`RemoteMoved`), since the cluster will show that commit, never this step's. A quiet
    watch is reported as a change, so the step looks again (a cheap look: the step's watch names
    the LeaderWorkerSets and the RolloutState object, so nothing the sync writes is missed)."""

    def __init__(self, cluster: Any, moved: Callable[[], bool], poll: float = 3.0):
        self._cluster, self._moved, self._poll = cluster, moved, poll

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cluster, name)

    def wait_for_change(self, *args: Any, **kwargs: Any) -> bool:
        if len(args) >= 4:
            args = (*args[:3], min(args[3], self._poll), *args[4:])
        self._cluster.wait_for_change(*args, **kwargs)
        if self._moved():
            raise RemoteMoved()
        return True


def drive(clone: Clone, take: Callable[[Callable[[], bool]], Taken], printer: DrivePrinter,
          options: DriveOptions) -> StepExit:
    """Steps until the rollout is complete (0), a decision or a hold stops it (7), or anything
    else does (its code)."""
    landed = 0
    for _ in range(options.rounds):
        if dirty := clone.dirty():
            raise UserError([f"the working tree has changes ({', '.join(dirty[:5])}): the driver steps from the "
                             "remote's branch alone; commit, stash or remove them first"])
        remote = align(clone, printer, options)
        for approval in merged_decisions(clone, remote, options.prefix):
            printer.approved(approval)
        if (waiting := pending_decision(clone, remote, options.prefix)) is not None:
            printer.decision(waiting)  # pushed by an earlier run, on the remote's commit: not merged yet
            return StepExit.HELD
        try:
            taken = take(functools.partial(_moved, clone, remote))
        except RemoteMoved:
            printer.note("moved", clone.remote, clone.branch)
            continue
        if taken.code == StepExit.COMPLETE:
            printer.complete(landed)
            return StepExit.OK
        if taken.code == StepExit.HELD:
            printer.held(taken.steps)
            return StepExit.HELD
        if taken.code == StepExit.TIMEOUT and any(step.timed_out for step in taken.steps):
            printer.not_synced(remote, clone.subject(remote), taken.steps)
            return StepExit.TIMEOUT
        if taken.code != StepExit.OK or taken.revision is None:
            printer.stopped(taken.code, taken.steps)
            return taken.code
        kind = kind_of(taken.steps, options.routes)
        if options.routes.reviewed(kind):
            return _to_review(clone, taken, kind, remote, printer, options)
        pushed = clone.push(taken.revision, clone.branch)
        if pushed.result == Pushed.MOVED:
            printer.note("moved", clone.remote, clone.branch)
            clone.move_to(remote)  # the step is dropped, never rebased: the next round decides again
            continue
        if pushed.result == Pushed.REFUSED:
            clone.move_to(remote)
            printer.refused(clone.branch, pushed.words)
            return StepExit.ERROR
        landed += 1
        printer.landed(taken.revision, clone.subject(taken.revision), kind)
    raise UserError([f"the driver took {options.rounds} rounds without an end; stopped"])


def _moved(clone: Clone, remote: str) -> bool:
    return clone.remote_head() != remote


def kind_of(steps: Sequence[Stepped], routes: Routes) -> str:
    """The kind of a commit of several sets' steps: a decision any of them makes (the first that
    stops for review, else the first at all), else a mechanical step."""
    kinds = [step_kind(step.ds, step.before, step.after) for step in steps if step.outcome == Outcome.ADVANCED]
    reviewed = [kind for kind in kinds if routes.reviewed(kind)]
    return (reviewed or [kind for kind in kinds if kind != STEP] or [STEP])[0]


def align(clone: Clone, printer: DrivePrinter, options: DriveOptions) -> str:
    """The local branch made the remote's (fetched now); the remote's commit. Behind: moved up.
    Ahead by the bot's step commits that never landed (a crash between commit and push): they
    are dropped, so the step is decided again from the remote's state. Anything else: refused."""
    remote = clone.fetch(options.prefix)
    head = clone.head()
    if head == remote:
        return remote
    if clone.is_ancestor(head, remote):
        clone.move_to(remote)
        return remote
    base = clone.out("merge-base", head, remote, what="cannot compare with the remote")
    ahead = clone.ahead(base)
    ours = [commit for commit in ahead if _bot_step(clone, commit, options)]
    if len(ours) != len(ahead):
        raise UserError([f"the local branch has {len(ahead) - len(ours)} commit(s) that {clone.remote}/{clone.branch} "
                         "has not and the driver did not make: push or drop them first"])
    clone.move_to(remote)
    printer.note("dropped", *[f"{commit[:12]} {clone.subject(commit)}" for commit in ours])
    return remote


def _bot_step(clone: Clone, commit: str, options: DriveOptions) -> bool:
    if options.bot is not None and clone.author(commit).email != options.bot.email:
        return False
    changed = clone.changed(commit)
    return bool(changed) and {os.path.basename(path) for path in changed} <= options.state_files


def merged_decisions(clone: Clone, remote: str, prefix: str) -> list[Approval]:
    """The decision branches merged into `remote` (each then deleted from the remote), with who merged."""
    approvals = []
    for branch, tip in sorted(clone.remote_branches(prefix).items()):
        if not clone.is_ancestor(tip, remote):
            continue
        first_parents = clone.out("rev-list", "--first-parent", remote, what="cannot read the history").split()
        if tip in first_parents:
            approvals.append(Approval(branch, tip, None))
        else:
            merge = next((sha for sha in reversed(first_parents) if clone.is_ancestor(tip, sha)), remote)
            approvals.append(Approval(branch, merge, clone.author(merge)))
        clone.delete_branch(branch)
    return approvals


def pending_decision(clone: Clone, remote: str, prefix: str) -> Decision | None:
    """A decision branch an earlier run pushed on top of `remote` (its commit's parent), not merged."""
    for branch, tip in sorted(clone.remote_branches(prefix).items()):
        if clone.out("rev-parse", f"{tip}^", what="cannot read a decision's commit") == remote:
            kind = branch.rsplit("-", 1)[-1]
            return Decision(kind, tip, branch, clone.subject(tip), pending=True)
    return None


def _to_review(clone: Clone, taken: Taken, kind: str, remote: str, printer: DrivePrinter,
               options: DriveOptions) -> StepExit:
    """A decision's commit onto its own branch (once: a run that finds it there says it waits),
    `on_decision` run, the local branch put back at the remote's commit; 7."""
    assert taken.revision is not None
    step = next(step for step in taken.steps if step.outcome == Outcome.ADVANCED and step.after is not None)
    assert step.after is not None
    branch = decision_branch(options.prefix, step.ds.name, step.ds.revision, step.after.commits, kind)
    subject = clone.subject(taken.revision)
    pending = clone.remote_branches(options.prefix).get(branch)
    if pending is None:
        pushed = clone.push(taken.revision, branch)
        if pushed.result == Pushed.REFUSED:
            clone.move_to(remote)
            printer.refused(branch, pushed.words)
            return StepExit.ERROR
        pending = taken.revision if pushed.result == Pushed.LANDED else clone.remote_branches(options.prefix)[branch]
        fresh = pushed.result == Pushed.LANDED
    else:
        fresh = False
    clone.move_to(remote)
    decision = Decision(kind, pending, branch, subject, pending=not fresh)
    if fresh and options.on_decision:
        _run_on_decision(options.on_decision, clone, decision)
    printer.decision(decision)
    return StepExit.HELD


def _run_on_decision(command: str, clone: Clone, decision: Decision) -> None:
    env = {**os.environ, "DISAGG_DECISION_BRANCH": decision.branch, "DISAGG_DECISION_KIND": decision.kind,
           "DISAGG_DECISION_COMMIT": decision.commit, "DISAGG_DECISION_TITLE": decision.subject,
           "DISAGG_BASE_BRANCH": clone.branch, "DISAGG_REMOTE": clone.remote}
    run = subprocess.run(command, shell=True, cwd=clone.root, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise UserError([f"--on-decision: the command exited {run.returncode} (the decision's branch "
                         f"{decision.branch} is pushed): {(run.stderr or run.stdout).strip()}"])
