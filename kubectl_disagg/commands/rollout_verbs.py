"""`kubectl disagg rollout promote|pause|resume|abort|retry`: move a RolloutPolicy's rollout by hand.

One command each, made by `verb_command` (they differ only in their words, and promote's `--full`
and `--skip-analysis`):
flags → the store (`rollout.store.ClusterStore`, or `rollout.git_run.GitStore` with --gitops) →
`verbs.run_verb`, the one implementation of every verb → `VerbConsole`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kubectl_disagg.commands import _inputs, _options, _session
from kubectl_disagg.commands._modes import GITOPS_INPUT, Command, Mode
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.exits import VerbExit

if TYPE_CHECKING:
    from kubectl_disagg.rollout.git_run import GitStore
    from kubectl_disagg.core.delivery.change import PositionChange

MODES = [Mode("gitops", needs=GITOPS_INPUT, refuses=("name",), only=("pr_description", "commit", "state_file"))]

HELP = {
    "promote": ("Pass the gate a paced rollout waits at (a pause after a wave, or a soak before its time).",
                "With --full, pass every remaining gate and lift maxSlicesInFlight: the next steps roll every "
                "remaining slice; it names each gate it passes, and passes an analysis gate without its verdict "
                "only with --skip-analysis (refused otherwise, exit 3)."),
    "pause": ("Stop a paced rollout where it stands: rollout step changes nothing until rollout resume.",
              "Needs no lease: a running rollout step (--until-complete, an analysis) stops at its next boundary "
              "(its pass, watch or measurement) and exits 7."),
    "resume": ("Continue a paused rollout (a failed analysis that paused it runs again).", ""),
    "abort": ("Roll every slice that has the new revision back to the stable one, step by step.",
              "Slices the rollout never started are not touched. The rollout stays aborted until the set's "
              "template changes: back to the stable revision (the abort is done) or to a new one. Needs no "
              "lease: a running rollout step --until-complete turns back at its next boundary, rolls back, "
              "and exits 7."),
    "retry": ("Start an aborted rollout again from its first wave: the same revision, nothing passed, no verdict.",
              "Refused unless the rollout is aborted. The slices that still run the new revision keep it; the "
              "next steps roll the first wave again, under the policy's gates and budget."),
}


def verb_command(verb: str) -> click.Command:
    summary, more = HELP[verb]

    examples = (f"\b\nkubectl disagg rollout {verb} my-llm -n serving\n"
                f"kubectl disagg rollout {verb} --gitops -f apps/llama/ --commit"
                + ("\nkubectl disagg rollout promote my-llm --full --skip-analysis --reason 'incident fix'"
                   if verb == "promote" else ""))
    @click.command(verb, cls=Command, modes=MODES, help=f"{summary}\n\n{examples}\n\n{more}\n\nGive NAME (the set stored in "
                   "the cluster) or -f (the set and its RolloutPolicy); the position is kept in the set's RolloutState. "
                   "With --gitops -f DIR, in the state file beside the set: one reviewed commit.",
                   exit_codes=[exit_section(VerbExit)])
    @click.argument("name", required=False)
    @_options.filenames(required=False)
    @_options.namespace
    @_session.cluster
    @_options.output("text", "yaml", "json", default="text")
    @click.option("--gitops", is_flag=True, help="Write the position into the state file beside the set "
                  "(disagg-rollout-state.yaml) instead of the cluster.")
    @click.option("--pr-description", metavar="FILE", default=None,
                  help="With --gitops: write a Markdown description of the change (for its pull request).")
    @click.option("--commit", is_flag=True, help="With --gitops: commit the state file (git), the pull "
                  "request's text as the message; refuses a working tree with other changes.")
    @click.option("--state", "state_file", metavar="FILE", help="With --gitops: the state file.")
    @click.option("--reason", metavar="TEXT", default="", help="Why: recorded in the position with who acted "
                  "and when.")
    @_options.pass_options
    def command(options: _options.Options, name: str | None, gitops: bool, pr_description: str | None, commit: bool,
                state_file: str | None, reason: str, full: bool = False, skip_analysis: bool = False) -> VerbExit:
        from kubectl_disagg.rollout.verbs import run_verb
        from kubectl_disagg.views.verbs import VerbConsole

        if skip_analysis and not full:
            raise click.UsageError("--skip-analysis needs --full: a plain promote passes only a pause")

        console = VerbConsole(options.output, gitops, _options.invocation(options, name, gitops))
        if gitops:
            store = _git_store(options, verb, state_file, commit, full, reason)
            code = run_verb(store, verb, console, full=full, reason=reason, skip_analysis=skip_analysis,
                            clock=options.clock)
            changed = [result for result in console.results if result.changed]
            if pr_description and changed:  # the description of what was written, or nothing
                from kubectl_disagg.views.verbs import verb_pr_description

                Path(pr_description).write_text("\n".join(map(verb_pr_description, changed)),
                                                encoding="utf-8")
            if store.revision:
                click.echo(f"committed {store.revision[:12]}", err=True)
            return code
        _options.check_name_or_files(name, options)
        sets = _inputs.sets_from_files(options) if options.filenames else None
        from kubectl_disagg.rollout.store import ClusterStore

        with _session.executor(options) as cluster:
            if not sets:
                assert name is not None  # NAME, when not -f (check_name_or_files)
                sets = [_session.stored_set(cluster, name, options.namespace)]
            return run_verb(ClusterStore(cluster, sets, options.namespace, clock=options.clock, warn=console.warn),
                            verb, console, full=full, reason=reason, skip_analysis=skip_analysis, clock=options.clock)

    if verb == "promote":
        command = click.option("--full", is_flag=True, help="Pass every remaining gate (naming each) and lift the "
                               "budget.")(command)
        command = click.option("--skip-analysis", is_flag=True, help="With --full: pass analysis gates without "
                               "their verdict too.")(command)
    return command


def _git_store(options: _options.Options, verb: str, state_file: str | None, commit: bool, full: bool,
               reason: str) -> GitStore:
    """The state files beside the -f sets, read once; with --commit the repository, checked
    before anything is written, and the pull request text of what is written as its message."""
    from kubectl_disagg.rollout.git_run import GitStore
    from kubectl_disagg.inputs import tree as inputs
    from kubectl_disagg.rollout.verbs import VerbResult
    from kubectl_disagg.views.gitops_report import commit_message
    from kubectl_disagg.views.verbs import verb_pr_description

    reading = inputs.Reading(options.recursive, explicit=state_file)
    tree, planned = _inputs.tree_of_sets(options.filenames, reading, options.namespace)
    repository = None
    if commit:
        from kubectl_disagg.gitops.git import repository_for

        repository = repository_for([entry.state_path for entry in planned.sets], None)

    def message(changes: Sequence[PositionChange]) -> str:
        return commit_message([verb_pr_description(VerbResult(c.ds, c.namespace, verb, c.before, c.after, full,
                                                              by=store.who(), where=c.where, reason=reason))
                               for c in changes])

    store = GitStore(tree, reading, options.namespace, repository, message, fallback=_inputs.gitops_namespace(options))
    return store


promote, pause, resume, abort, retry = (verb_command(verb) for verb in ("promote", "pause", "resume", "abort", "retry"))
