"""`kubectl disagg rollout step`: one reconcile pass of the DisaggregatedSet controller, client-side.

Flags → one library call → one view: `rollout.run.step` over the store --gitops picks,
`rollout.store.ClusterStore` or `rollout.git_run.GitStore` (the next step written into the state
file in git, the cluster only read), shown by one `Console` (views/step_console.py); the run maps
its sets' `Outcome`s to the one exit table (`rollout.outcome.step_exit`)."""

from __future__ import annotations

from typing import Any

import click

from kubectl_disagg.commands import _git_drive, _inputs, _options, _services, _session
from kubectl_disagg.commands._modes import GITOPS_INPUT, Mode
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.exits import GITOPS_STEP, STEP_CLUSTER, StepExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.outcome import step_exit
from kubectl_disagg.core.delivery.outcome import Outcome
from kubectl_disagg.rollout.run import StepOptions
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.write_scheduler import DEFAULT_MAX_IN_FLIGHT, MAX_IN_FLIGHT_LIMIT
from kubectl_disagg.views.step_console import Console
from kubectl_disagg.wait import Deadline

DEFAULT_TIMEOUT = "30m"
# Which flags go with --gitops (a step written into git) and which only with a step in the cluster.
MODES = [Mode("gitops", needs=GITOPS_INPUT, refuses=("name", "dry_run", "wait_for_lease"),
              only=("wait", "pr_description", "commit", "branch", "state_file", "push")),
         Mode("commit", only=("branch",)), *_git_drive.MODES]


@click.command(cls=_options.DryRunCommand, modes=MODES, exit_codes=[
    exit_section(STEP_CLUSTER), exit_section(StepExit, "Exit codes with --gitops (docs/gitops.md):", GITOPS_STEP)])
@click.argument("name", required=False)
@_options.filenames(required=False)
@_options.namespace
@_session.cluster
@_options.dry_run("Print the actions and the object changes (diffs), change nothing. client (a bare --dry-run): "
                  "plan only; server: also send every write of the pass to the API server as a dry run "
                  "(dryRun=All), each marked accepted or refused, nothing stored.")
@click.option("--until-complete", is_flag=True,
              help="Repeat passes until the rollout is complete. It watches the LeaderWorkerSets in between.")
@click.option("--wait-for-lease", is_flag=True,
              help="Queue behind another stepper that holds the set's lease, instead of exiting 3. It "
                   "watches the lease until it is free, bounded by --timeout.")
@_options.timeout(DEFAULT_TIMEOUT, "Give up after this long (e.g. 90s, 5m, 1h; 0 means no limit). It bounds "
                                   "--until-complete, --wait-for-lease and --gitops --wait, and an analysis "
                                   "gate's measurements in every step.")
@_options.output("text", "yaml", "json", default="text")
@_services.revision_services
@click.option("-q", "--quiet", is_flag=True, help="Print only waves, gates, the end, errors.")
@click.option("--gitops", is_flag=True,
              help="Git-driven rollout: write the next step into the state file beside the set. It first "
                   "checks the cluster shows the committed rollout state, then writes the next step into "
                   "disagg-rollout-state.yaml instead of the cluster; it reads LeaderWorkerSets only.")
@click.option("--wait", is_flag=True, help="With --gitops: watch until the step can advance, then write it.")
@click.option("--max-in-flight", type=click.IntRange(1, MAX_IN_FLIGHT_LIMIT), default=DEFAULT_MAX_IN_FLIGHT,
              show_default=True, metavar="N",
              help="At most N writes at once. Different slices are written concurrently; the writes of one "
                   "slice stay in order. 1 writes one object at a time.")
@click.option("--ignore-controller", is_flag=True,
              help="Step a stored set whose status says a DisaggregatedSet controller reconciles it. For "
                   "when that controller no longer runs; objects the controller owns are never stepped.")
@click.option("--pr-description", metavar="FILE", default=None,
              help="With --gitops: write a Markdown description of the step (for its pull request).")
@click.option("--commit", is_flag=True,
              help="With --gitops: commit the state file (git), the pull request's text as the message; refuses "
                   "a working tree with other changes.")
@click.option("--branch", metavar="NAME", default=None,
              help="With --commit: create branch NAME from HEAD and commit there.")
@click.option("--state", "state_file", metavar="FILE", help="With --gitops: the state file (default: "
              "disagg-rollout-state.yaml beside the set's file, as the plugin's rollout-state parameter).")
@click.option("--ignore-rollout-state", is_flag=True, help="Step a set driven through git directly. "
              "It has a rollout state beside its file: Argo CD's self-heal would undo the step.")
@_options.pass_options
@_git_drive.driver  # --push: the driver, a loop of these steps (docs/gitops.md)
def step(options: _options.Options, /, name: str | None, dry_run: str, timeout: float | None, gitops: bool,
         **flags: Any) -> int:
    """Run one reconcile pass of each DisaggregatedSet: what its controller would do next.

    Give -f with the set's manifest, or NAME to step the DisaggregatedSet object stored in
    the cluster (applied there by GitOps; no controller acts on it).

    A pass takes the set's Lease (coordination.k8s.io, kubectl-disagg-NAME) so that two steppers never act at once
    (held by another: exit 3, or with --wait-for-lease queue until it is released or lapses), checks that the user
    may make every write the pass needs (SelfSubjectAccessReview: a pass is refused whole, never cut in half by a
    403), reads the set's LeaderWorkerSets and Services, and creates, scales, annotates or deletes what the
    coordinated rollout calls for. Scales and annotations are pinned to the spec.replicas they were computed from (a
    status write in between does not matter; a replica change fails them), deletes to the resourceVersion. The
    scales of one revision group land together: one that fails undoes the group's earlier writes, so no group is
    left serving some roles without the others.

    \b
    kubectl disagg rollout step -f ds.yaml --dry-run   # the next pass, unchanged
    kubectl disagg rollout step -f ds.yaml --until-complete --timeout 1h
    kubectl disagg rollout step -f ds.yaml --dry-run=server   # ... and would the API server accept it
    kubectl disagg rollout step -f ds.yaml               # do it
    kubectl disagg rollout step -f ds.yaml --until-complete --wait-for-lease   # queue behind another operator

    With --until-complete, sets are rolled one after another in input order, and the first that does not complete
    stops the run.

    --dry-run=server computes the pass as a real step does and checks its permissions, then sends each of its
    writes to the API server with dryRun=All (and strict field validation): admission and validation run, nothing
    is stored, no Lease is taken. Each write is judged against the live objects as they are, and marked accepted
    or refused; a refused create is traced back to the set's FILE:LINE where the server names a field.
    """
    how = StepOptions(dry_run=None if dry_run == "none" else dry_run, deadline=Deadline.after(timeout, options.clock),
                      revision_services=options.revision_services, **flags)
    if gitops:
        return _step_gitops(options, how)
    if how.dry_run and (how.wait_for_lease or how.until_complete):
        raise click.UsageError("--dry-run takes no lease, so --wait-for-lease has nothing to wait for"
                               if how.wait_for_lease else "--dry-run and --until-complete cannot be combined: a dry "
                               "run changes nothing, so the rollout would never advance")
    _options.check_name_or_files(name, options)
    tree, sets = _inputs.sets_and_tree(options) if options.filenames else (None, None)
    console = Console(options.output, quiet=how.quiet, clock=options.clock)
    if refusal := [] if how.dry_run or how.ignore_rollout_state or not sets or tree is None else \
            _inputs.git_driven(sets, tree):
        console.error(refusal)
        return step_exit([Outcome.REFUSED])
    with _session.executor(options) as cluster:
        if name:  # a set deployed with -f has no object to step: say so, and how
            _session.stored_object(cluster, name, options.namespace)
        return run.step(ClusterStore(cluster, sets, options.namespace, name=name), console, how)


def _step_gitops(options: _options.Options, how: StepOptions) -> int:
    """--gitops: the inputs read once, the directory loaded once and passed down; imported here only."""
    from functools import partial

    from kubectl_disagg.commands import _gitops
    from kubectl_disagg.rollout.git_run import GitStore

    with _session.session_and_directory(options, how.state_file) as (cluster, reading, tree, directory):
        repository = _gitops.repository(directory, how.branch) if how.commit else None  # before anything is written
        store = GitStore(tree, reading, options.namespace, cluster=cluster, loaded=directory,
                         commit=partial(_gitops.commit, repository=repository, branch=how.branch))
        return run.step(store, Console(options.output, clock=options.clock), how)
