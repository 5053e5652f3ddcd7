"""`kubectl disagg rollout promote|pause|resume|abort`: move a RolloutPolicy's rollout by hand.

One command each, made by `verb_command` (they differ only in their words and `--full`):
flags → `verbs.run_verb` (cluster) or `rollout_verbs_gitops.run` (--gitops) → `VerbConsole`.
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _options, _session, load

GITOPS = "kubectl_disagg.commands.rollout_verbs_gitops:run"  # --gitops, loaded when asked for
EXIT_CODES = """\b
Exit codes:
  0  done: the position was written (the next rollout step acts on it)
  1  error: invalid input, no RolloutPolicy for the set, an API or network error
     (409: the RolloutState changed since it was read; run it again)
  2  usage: invalid flags
  3  refused (nothing written): the verb does not apply where the rollout
     stands (the message says why), or another stepper holds the set's lease"""

HELP = {
    "promote": ("Pass the gate a paced rollout waits at (a pause after a wave, or a soak before its time).",
                "With --full, pass every remaining gate (analysis too) and lift maxSlicesInFlight: the next "
                "steps roll every remaining slice."),
    "pause": ("Stop a paced rollout where it stands: rollout step changes nothing until rollout resume.", ""),
    "resume": ("Continue a paused rollout (a failed analysis that paused it runs again).", ""),
    "abort": ("Roll every slice that has the new revision back to the stable one, step by step.",
              "Slices the rollout never started are not touched. The rollout stays aborted until the set's "
              "template changes: back to the stable revision (the abort is done) or to a new one."),
}


def verb_command(verb: str) -> click.Command:
    summary, more = HELP[verb]

    @click.command(verb, help=f"{summary}\n\n{more}\n\nGive NAME (the set stored in the cluster) or -f (the "
                   "set and its RolloutPolicy); the position is kept in the set's RolloutState. With --gitops "
                   "-f DIR, in the state file beside the set: one reviewed commit.", epilog=EXIT_CODES)
    @click.argument("name", required=False)
    @_options.filenames(required=False)
    @_options.namespace
    @_options.cluster
    @_options.output("text", "yaml", "json", default="text")
    @click.option("--gitops", is_flag=True, help="Write the position into the state file beside the set "
                  "(disagg-rollout-state.yaml) instead of the cluster.")
    @click.option("--pr-description", metavar="FILE", default=None,
                  help="With --gitops: write a Markdown description of the change (for its pull request).")
    @click.option("--commit", is_flag=True, help="With --gitops: commit the state file (git), the pull "
                  "request's text as the message; refuses a working tree with other changes.")
    @click.option("--state", "state_file", metavar="FILE", help="With --gitops: the state file.")
    @click.pass_context
    def command(ctx, name, filenames, recursive, namespace, kubeconfig, context, output, gitops, pr_description,
                commit, state_file, full=False) -> None:
        from kubectl_disagg.views.verbs import VerbConsole

        console = VerbConsole(output, gitops)
        if gitops:
            if name or not filenames:
                raise click.UsageError("--gitops takes -f (the set's file or directory, where its state is kept)")
            ctx.exit(load(GITOPS)(filenames, recursive, namespace, verb, console, full=full, state_file=state_file,
                                  pr_description=pr_description, commit=commit))
        if pr_description or commit or state_file:
            raise click.UsageError("--pr-description, --commit and --state go with --gitops")
        _options.check_name_or_files(name, filenames)
        sets = _options.sets_from_files(filenames, recursive) if filenames else None
        from kubectl_disagg.rollout.verbs import run_verb

        with _session.executor(kubeconfig, context) as cluster:
            sets = sets or [_session.stored_set(cluster, name, namespace)]
            ctx.exit(run_verb(cluster, sets, namespace, verb, console, full=full))

    if verb == "promote":
        command = click.option("--full", is_flag=True, help="Pass every remaining gate and lift the budget.")(command)
    return command


promote, pause, resume, abort = (verb_command(verb) for verb in ("promote", "pause", "resume", "abort"))
