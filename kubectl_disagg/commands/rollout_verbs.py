"""`kubectl disagg rollout promote|pause|resume|abort`: move a RolloutPolicy's rollout by hand.

One command each, made by `verb_command` (they differ only in their words and `--full`):
flags → `verbs.run_verb` (cluster) or `rollout_verbs_gitops.run` (--gitops) → `VerbConsole`.
"""

from __future__ import annotations

import click

from kubectl_disagg.commands import _inputs, _options, _session
from kubectl_disagg.commands._modes import GITOPS_INPUT, Command, Mode
from kubectl_disagg.commands._help import exit_section
from kubectl_disagg.exits import VerbExit

MODES = [Mode("gitops", needs=GITOPS_INPUT, refuses=("name",), only=("pr_description", "commit", "state_file"))]

HELP = {
    "promote": ("Pass the gate a paced rollout waits at (a pause after a wave, or a soak before its time).",
                "With --full, pass every remaining gate (analysis too) and lift maxSlicesInFlight: the next "
                "steps roll every remaining slice."),
    "pause": ("Stop a paced rollout where it stands: rollout step changes nothing until rollout resume.",
              "Needs no lease: a running rollout step (--until-complete, an analysis) stops at its next boundary "
              "(its pass, watch or measurement) and exits 7."),
    "resume": ("Continue a paused rollout (a failed analysis that paused it runs again).", ""),
    "abort": ("Roll every slice that has the new revision back to the stable one, step by step.",
              "Slices the rollout never started are not touched. The rollout stays aborted until the set's "
              "template changes: back to the stable revision (the abort is done) or to a new one. Needs no "
              "lease: a running rollout step --until-complete turns back at its next boundary, rolls back, "
              "and exits 7."),
}


def verb_command(verb: str) -> click.Command:
    summary, more = HELP[verb]

    examples = (f"\b\nkubectl disagg rollout {verb} my-llm -n serving\n"
                f"kubectl disagg rollout {verb} --gitops -f apps/llama/ --commit")
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
    @_options.pass_options
    def command(options: _options.Options, name, gitops, pr_description, commit, state_file,
                full=False) -> VerbExit:
        from kubectl_disagg.views.verbs import VerbConsole

        console = VerbConsole(options.output, gitops)
        if gitops:  # its own library, imported only here
            from kubectl_disagg.commands import rollout_verbs_gitops

            return rollout_verbs_gitops.run(options, verb, console, full=full, state_file=state_file,
                                            pr_description=pr_description, commit=commit)
        _options.check_name_or_files(name, options)
        sets = _inputs.sets_from_files(options) if options.filenames else None
        from kubectl_disagg.rollout.verbs import run_verb

        with _session.executor(options) as cluster:
            sets = sets or [_session.stored_set(cluster, name, options.namespace)]
            return run_verb(cluster, sets, options.namespace, verb, console, full=full)

    if verb == "promote":
        command = click.option("--full", is_flag=True, help="Pass every remaining gate and lift the budget.")(command)
    return command


promote, pause, resume, abort = (verb_command(verb) for verb in ("promote", "pause", "resume", "abort"))
