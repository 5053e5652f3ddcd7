"""What `rollout promote|pause|resume|abort` print: a line per set (templates/rollout_verb.txt.j2),
or with -o yaml|json the position written; with --gitops, the pull request text too."""

from __future__ import annotations

import click

from kubectl_disagg.core.position import position_document
from kubectl_disagg.manifests.writer import to_json, to_yaml
from kubectl_disagg.rollout.verbs import VerbResult
from kubectl_disagg.views.templating import render_template


def slice_list(indices: list[int]) -> str:
    if not indices:
        return "no slice"
    return f"slice {indices[0]}" if len(indices) == 1 else f"slices {', '.join(map(str, indices))}"


def verb_line(result: VerbResult, gitops: bool = False) -> str:
    """What the verb did, in a sentence naming the command that acts on it next."""
    after = result.after
    return render_template(
        "rollout_verb.txt.j2", verb=result.verb, full=result.full,
        subject=f"disaggregatedset/{result.ds.name} in {result.namespace}", wave=result.before.wave + 1,
        waves=len(result.before.waves), stable=after.position.stable, moving=slice_list(list(after.moves)),
        untouched=slice_list(sorted(after.held)) if after.held else "",
        step="kubectl disagg rollout step" + (" --gitops -f DIR" if gitops else ""),
        suffix=" --gitops -f DIR" if gitops else "", stepper=None if gitops else result.stepper)


class VerbConsole:
    def __init__(self, output: str, gitops: bool = False):
        self.output, self.gitops = output, gitops

    def done(self, result: VerbResult) -> None:
        if self.output != "text":
            document = {"set": result.ds.name, "namespace": result.namespace, "verb": result.verb,
                        "position": position_document(result.after.position)}
            if result.stepper:  # the `rollout step` that holds the Lease: it stops (or turns back) at its next boundary
                document["runningStepper"] = result.stepper
            click.echo(to_yaml(document) if self.output == "yaml" else to_json(document), nl=False)
            return
        click.echo(verb_line(result, self.gitops), nl=False)

    def warn(self, message: str) -> None:
        click.echo(f"Warning: {message}", err=True)

    def error(self, lines: list[str]) -> None:
        for line in lines:
            click.echo(line, err=True)


def verb_pr_description(done) -> str:
    """The pull request text of a --gitops verb (a `gitops.verbs.GitVerb`)."""
    result = done.result
    waves = len(result.before.waves)
    title = f"{result.ds.name}: rollout {result.verb}{' --full' if result.full else ''} at wave " \
            f"{result.before.wave + 1} of {waves}"
    return render_template("rollout_verb_pr.md.j2", title=title, summary=verb_line(result, gitops=True).strip(),
                           set_name=result.ds.name, namespace=result.namespace, revision=result.ds.revision,
                           stable=result.after.position.stable, wave=result.before.wave + 1, waves=waves,
                           by=done.by, path=done.path)
