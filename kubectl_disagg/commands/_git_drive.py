"""`rollout step --gitops --push REMOTE`: the driver's flags, and the one adapter from the driver's
loop (`rollout.git_drive.drive`) to `rollout step --gitops --wait --commit` (`take_step`).

`driver` decorates the step command: it adds the driver's flags and, when --push is given, runs
the loop instead of a single step. Everything else is the step's, through `take_step` alone, so
the driver follows the step wherever its library goes.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Callable

import click

from kubectl_disagg.commands._modes import Mode

DECISION_KINDS = ("wave", "analysis", "pause", "abort")  # gitops/decisions.py DECISIONS, for --help without importing it
# --push goes with --gitops; it commits and waits itself, so the single step's own flags for that do not go with it.
MODES = [Mode("push", needs=("filenames", "-f (the sets' directory in the clone)"),
              refuses=("commit", "branch", "wait", "pr_description")),
         Mode("push", only=("review", "decisions_to", "on_decision"))]
DRIVER_FLAGS = ("push", "review", "decisions_to", "on_decision")


def driver(func: Callable[..., int]) -> Callable[..., int]:
    """The step command, with the driver's flags; --push runs the driver."""
    @functools.wraps(func)
    def step(options: Any, /, name: str | None, dry_run: str, timeout: float | None, gitops: bool,
             **flags: Any) -> int:
        drive = {flag: flags.pop(flag) for flag in DRIVER_FLAGS}
        if drive["push"] is not None:
            return run(options, timeout, flags, **drive)
        if gitops and flags["until_complete"]:
            raise click.UsageError("--gitops --until-complete takes --push REMOTE: each step is pushed there, "
                                   "and the driver waits for its sync")
        return func(options, name, dry_run=dry_run, timeout=timeout, gitops=gitops, **flags)

    for option in reversed([
        click.option("--push", metavar="REMOTE", default=None,
                     help="Drive the rollout through git, step after step: fetch REMOTE, take the next step, commit "
                          "it (as git's identity: the bot's), push it to the current branch there, wait until the cluster shows it synced "
                          "and ready, and repeat until complete. A decision (a wave starts, an analysis opens a wave, "
                          "a pause is reached, an abort) is pushed to a branch of its own instead, and the run exits "
                          "7 naming it; run again after the merge. See docs/gitops.md."),
        click.option("--review", metavar="KINDS", default=",".join(DECISION_KINDS), show_default=True,
                     help="With --push: the kinds of step that wait for a person's review on a branch of their own "
                          f"(comma-separated of {', '.join(DECISION_KINDS)}, step; all; none). The others land "
                          "on the branch by themselves."),
        click.option("--decisions-to", metavar="PREFIX", default="disagg", show_default=True,
                     help="With --push: where decisions go: branch PREFIX/NAME/REVISION/step-N-KIND of REMOTE."),
        click.option("--on-decision", metavar="CMD", default=None,
                     help="With --push: a shell command run once a decision's branch is pushed (e.g. one that opens a "
                          "pull request); its environment names DISAGG_DECISION_BRANCH, _KIND, _COMMIT, _TITLE, "
                          "DISAGG_BASE_BRANCH and DISAGG_REMOTE."),
    ]):
        step = option(step)
    return step


def run(options: Any, timeout: float | None, flags: dict[str, Any], *, push: str, review: str,
        decisions_to: str, on_decision: str | None) -> int:
    """The driver over the repository of the sets' directory."""
    from kubectl_disagg.gitops.decisions import KINDS, Routes
    from kubectl_disagg.gitops.git import author as git_author
    from kubectl_disagg.gitops.remote import Author
    from kubectl_disagg.rollout.git_drive import DriveOptions, drive
    from kubectl_disagg.rollout.run import StepOptions
    from kubectl_disagg.views.git_drive import DriveConsole
    from kubectl_disagg.wait import Deadline

    kinds = {"all": set(KINDS), "none": set()}.get(review, {kind.strip() for kind in review.split(",") if kind.strip()})
    if unknown := sorted(kinds - set(KINDS)):
        raise click.UsageError(f"--review: unknown kind {unknown[0]!r} (known: {', '.join(KINDS)}, all, none)")
    clone = _clone(options, push)
    identity = re.fullmatch(r"(.+?) <([^<>]*)>", git_author(clone.root) or "")
    bot = Author(identity.group(1), identity.group(2)) if identity else None  # who the step commits name
    how = StepOptions(deadline=Deadline.after(timeout, options.clock), wait=True, commit=True,
                      max_in_flight=flags["max_in_flight"], quiet=flags["quiet"], state_file=flags["state_file"],
                      revision_services=options.revision_services)
    state_name = os.path.basename(flags["state_file"] or "disagg-rollout-state.yaml")
    extra = " ".join(word for word in (f"--review {review}" if review != ",".join(DECISION_KINDS) else "",
                                       f"--decisions-to {decisions_to}" if decisions_to != "disagg" else "") if word)
    printer = DriveConsole(options.filenames, push, quiet=flags["quiet"], extra=extra)
    return drive(clone, lambda moved: take_step(options, how, moved), printer,
                 DriveOptions(Routes(frozenset(kinds)), decisions_to, on_decision, bot, frozenset({state_name})))


def _clone(options: Any, remote: str) -> Any:
    from kubectl_disagg.errors import UserError
    from kubectl_disagg.gitops.remote import Clone

    start = options.filenames[0] if os.path.isdir(options.filenames[0]) else os.path.dirname(options.filenames[0])
    probe = Clone(start or ".", remote, "")
    root = probe.out("rev-parse", "--show-toplevel", what=f"--push: {start} is not in a git repository")
    branch = probe.git("symbolic-ref", "--quiet", "--short", "HEAD", what="", check=False).stdout.strip()
    if not branch:
        raise UserError(["--push: check out the branch the rollout lands on (HEAD is detached)"])
    return Clone(root, remote, branch)


def take_step(options: Any, how: Any, moved: Callable[[], bool]) -> Any:
    """The adapter: one `rollout step --gitops --wait --commit` of the directory as it is now on
    disk (read again each time; its waits also watch the remote: `moved`), its result as the driver reads it (`rollout.git_drive.Taken`)."""
    from functools import partial

    from kubectl_disagg.commands import _gitops, _session
    from kubectl_disagg.rollout import run
    from kubectl_disagg.rollout.git_drive import Stepped, Taken, WatchingRemote
    from kubectl_disagg.rollout.git_run import GitStore
    from kubectl_disagg.views.git_drive import StepLines

    with _session.session_and_directory(options, how.state_file) as (cluster, reading, tree, directory):
        repository = _gitops.repository(directory, None)
        store = GitStore(tree, reading, options.namespace, cluster=WatchingRemote(cluster, moved), loaded=directory,
                         commit=partial(_gitops.commit, repository=repository, branch=None))
        code = run.step(store, StepLines("text", quiet=how.quiet, clock=options.clock), how)
    return Taken(code, tuple(Stepped(r.ds, r.step.before, r.step.state, r.step.outcome, r.step.reasons, r.timed_out)
                             for r in store.results), store.revision)
