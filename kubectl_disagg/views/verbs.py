"""What `rollout promote|pause|resume|abort` print: a line per set (templates/rollout_verb.txt.j2),
or with -o yaml|json the position written."""

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


class VerbConsole:
    def __init__(self, output: str):
        self.output = output

    def done(self, result: VerbResult) -> None:
        if self.output != "text":
            document = {"set": result.ds.name, "namespace": result.namespace, "verb": result.verb,
                        "position": position_document(result.after.position)}
            click.echo(to_yaml(document) if self.output == "yaml" else to_json(document), nl=False)
            return
        before, after = result.before, result.after
        click.echo(render_template(
            "rollout_verb.txt.j2", verb=result.verb, full=result.full,
            subject=f"disaggregatedset/{result.ds.name} in {result.namespace}", wave=before.wave + 1,
            waves=len(before.waves), stable=after.position.stable, moving=slice_list(list(after.moves)),
            untouched=slice_list(sorted(after.held)) if after.held else ""), nl=False)

    def warn(self, message: str) -> None:
        click.echo(f"Warning: {message}", err=True)

    def error(self, lines: list[str]) -> None:
        for line in lines:
            click.echo(line, err=True)

