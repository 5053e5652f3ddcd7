"""What `rollout promote|pause|resume|abort|retry` print: a line per set (templates/rollout_verb.txt.j2),
or with -o yaml|json the position written; why a verb was refused; with --gitops, the pull
request text too."""

from __future__ import annotations

import os
from collections.abc import Sequence

import click

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.position import ANALYSIS, position_document
from kubectl_disagg.core.api.naming import slices_words
from kubectl_disagg.core.delivery.waves import Gate, Progress, Refuse, VerbRefused, WaveDecision
from kubectl_disagg.manifests.writer import to_json, to_yaml
from kubectl_disagg.rollout.verbs import VerbResult
from kubectl_disagg.views.invocation import Invocation
from kubectl_disagg.views.templating import render_template


def slice_list(indices: list[int]) -> str:
    if not indices:
        return "no slice"
    return slices_words(indices)


def passed_words(gates: tuple[Gate, ...]) -> str:
    """What a `promote --full` passes, each gate named: `the pause after wave 1 and the analysis
    after wave 2 (ttft), without its verdict, pass as their waves complete`."""
    parts = [f"the analysis after wave {g.wave + 1} ({', '.join(g.checks)}), without its verdict,"
             if g.kind == ANALYSIS else f"the {'soak' if g.until else 'pause'} after wave {g.wave + 1}" for g in gates]
    if not parts:
        return "no gate was ahead"
    if len(parts) == 1:
        return f"{parts[0]} passes as its wave completes"
    return f"{', '.join(parts[:-1])} and {parts[-1]} pass as their waves complete"


def passed_document(gates: tuple[Gate, ...]) -> list[dict[str, object]]:
    """The same for -o json|yaml: one entry per gate, `skipped` for an analysis passed without verdict."""
    return [{"wave": g.wave + 1, "gate": g.kind, **({"checks": list(g.checks), "skipped": True}
                                                    if g.kind == ANALYSIS else {})} for g in gates]


def verb_line(result: VerbResult, gitops: bool = False, invocation: Invocation | None = None) -> str:
    """What the verb did, in a sentence naming the command that acts on it next, spelled with
    the user's NAME or -f and -n (`invocation`; None: the generic `--gitops -f DIR`)."""
    after = result.after
    invocation = invocation or Invocation(gitops=gitops)
    # an abort rolls back the slices that run something; one the set gained is started at the stable revision
    gained = [s for s in after.moves if s < len(after.progress) and after.progress[s] == Progress.EMPTY]
    untouched = sorted({*after.held, *gained})
    return render_template(
        "rollout_verb.txt.j2", verb=result.verb, full=result.full, passes=passed_words(result.passed),
        paused_by=after.position.paused.by if after.position.paused is not None else "",
        changed=result.changed, subject=f"disaggregatedset/{result.ds.name} in {result.namespace}",
        wave=result.before.wave + 1, waves=len(result.before.waves), stable=after.position.stable,
        moving=slice_list([s for s in after.moves if s not in gained]),
        revision=after.position.revision, reason=result.reason,
        untouched=slice_list(untouched) if untouched else "",
        step=invocation.command("step"), resume=invocation.command("resume"),
        stepper=None if gitops else result.stepper)


class VerbConsole:
    def __init__(self, output: str, gitops: bool = False, invocation: Invocation | None = None):
        self.output, self.gitops, self.invocation = output, gitops, invocation
        self.results: list[VerbResult] = []  # what was done, in order (for the pull request text)

    def done(self, result: VerbResult) -> None:
        self.results.append(result)
        if self.output != "text":
            document = {"set": result.ds.name, "namespace": result.namespace, "verb": result.verb,
                        "changed": result.changed, "position": position_document(result.after.position)}
            if result.full and result.verb == "promote":
                document["passes"] = passed_document(result.passed)
            if result.stepper:  # the `rollout step` that holds the Lease: it stops (or turns back) at its next boundary
                document["runningStepper"] = result.stepper
            click.echo(to_yaml(document) if self.output == "yaml" else to_json(document), nl=False)
            return
        click.echo(verb_line(result, self.gitops, self.invocation), nl=False)

    def refused(self, verb: str, ds: DisaggregatedSet, namespace: str, refused: VerbRefused, together: bool) -> None:
        """A verb the position refused (core/waves.py VerbRefused); `together`: nothing was written."""
        why = refusal_sentence(refused)
        if together:
            self.error([f"refusing to {verb}: disaggregatedset/{ds.name} in {namespace}: {why}; nothing was written"])
        else:
            self.error([f"refusing to {verb} disaggregatedset/{ds.name} in {namespace}: {why}"])

    def conflicted(self, verb: str, ds: DisaggregatedSet, namespace: str, what: str, attempts: int) -> None:
        self.error([f"could not {verb} disaggregatedset/{ds.name} in {namespace}: {what}, {attempts} times in a row; "
                    "run it again"])

    def warn(self, message: str) -> None:
        click.echo(f"Warning: {message}", err=True)

    def error(self, lines: list[str]) -> None:
        for line in lines:
            click.echo(line, err=True)


def refusal_sentence(refused: VerbRefused) -> str:
    """Why the verb cannot apply, and what would, in a sentence."""
    decision, why = refused.decision, refused.why
    if why in (Refuse.NOTHING_TO_PAUSE, Refuse.NOT_PAUSED):
        return {Refuse.NOTHING_TO_PAUSE: "the rollout was aborted: nothing moves forward to pause",
                Refuse.NOT_PAUSED: "the rollout is not paused"}[why]
    assert decision is not None
    if why == Refuse.UNVERIFIED:
        return f"--full would pass {_analyses_words(refused.gates)} without a verdict; add --skip-analysis to skip it"
    if why == Refuse.NOT_AT_A_GATE:
        return (f"the rollout waits at no gate: {_where(decision)}, and its gates come once every slice of it is "
                "done; promote passes the gate the rollout waits at (`rollout status` says when)")
    if why == Refuse.ANALYSIS_GATE:
        gate = refused.gates[0]
        return (f"wave {gate.wave + 1}'s gate is analysis ({', '.join(gate.checks)}): it passes on its verdict; "
                "promote --full --skip-analysis passes it without one")
    return {
        Refuse.ABORTED: "the rollout was aborted: it stays so until the set's template changes",
        Refuse.COMPLETE: f"the rollout to {decision.moves_to} is complete: no gate to pass",
        Refuse.NO_GATES: "no gate to pass: the remaining waves have none (promote --full lifts the budget)",
        Refuse.NOT_ABORTED: "the rollout is not aborted: retry starts an aborted rollout again",
        Refuse.ROLLED_BACK: f"the aborted rollout rolled back to revision {decision.position.stable}: "
                            "nothing to start again",
        Refuse.NOTHING_TO_ABORT: f"the rollout to {decision.moves_to} is complete: nothing to abort; to go back, "
                                 "change the set's template back",
        Refuse.NO_STABLE: "no stable revision to go back to: no slice ran another revision",
    }[why]


def _analyses_words(gates: Sequence[Gate]) -> str:
    """`the analysis after wave 1 (ttft)`, `the analyses after waves 1 (ttft) and 2 (ttft, errors)`."""
    parts = [f"{gate.wave + 1} ({', '.join(gate.checks)})" for gate in gates]
    if len(parts) == 1:
        return f"the analysis after wave {parts[0]}"
    return f"the analyses after waves {', '.join(parts[:-1])} and {parts[-1]}"


def _where(decision: WaveDecision) -> str:
    """Where the rollout stands, in words: its wave and how many of that wave's slices are done."""
    wave = decision.waves[decision.wave]
    done = sum(1 for s in wave.slices if s < len(decision.progress) and decision.progress[s] == Progress.DONE)
    slices = f"slice {wave.start}" if wave.end - wave.start == 1 else f"slices {wave.start}-{wave.end - 1}"
    return (f"wave {decision.wave + 1} of {len(decision.waves)} ({slices}) has {done} of "
            f"{wave.end - wave.start} slices done")


def verb_pr_description(result: VerbResult) -> str:
    """The pull request text of a --gitops verb (its state file is `result.where`)."""
    waves = len(result.before.waves)
    title = f"{result.ds.name}: rollout {result.verb}{' --full' if result.full else ''} at wave " \
            f"{result.before.wave + 1} of {waves}"
    invocation = Invocation(files=(os.path.dirname(result.where) or ".",), gitops=True)  # the set's directory
    return render_template("rollout_verb_pr.md.j2", title=title,
                           summary=verb_line(result, gitops=True, invocation=invocation).strip(),
                           step=invocation.command("step"),
                           set_name=result.ds.name, namespace=result.namespace, revision=result.ds.revision,
                           stable=result.after.position.stable, wave=result.before.wave + 1, waves=waves,
                           by=result.by, path=result.where, reason=result.reason)
