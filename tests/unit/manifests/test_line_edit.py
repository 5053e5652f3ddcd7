"""Rewriting values in place (design §2.1): only the edited lines change, or nothing does."""

from __future__ import annotations

import difflib

import pytest

from kubectl_disagg.core import template_edit as te
from kubectl_disagg.manifests import line_edit
from kubectl_disagg.manifests.reader import parse_stream

TEXT = """\
# the model server, pinned by the platform team
apiVersion: disaggregatedset.x-k8s.io/v1
kind: DisaggregatedSet
metadata:
  name: llm   # do not rename
spec:
  roles:
  - name: prefill
    spec:
      leaderWorkerTemplate:
        workerTemplate:
          metadata:
            labels: {tier: gpu}
          spec:
            containers:
            - name: worker
              image: 'reg/llm:1'  # single-quoted on purpose
              args: ["--prefill"]

  - name: decode
    spec:
      leaderWorkerTemplate:
        workerTemplate:
          spec:
              containers:
                - image: reg/llm:1
                  name: worker
---
kind: ConfigMap   # passes through untouched
apiVersion: v1
metadata: {name: other}
"""


def rewrite(text: str, decide):
    documents = parse_stream(text, "ds.yaml")
    edits = {d.index: decide(d.data)[0] for d in documents if d.data.get("kind") == "DisaggregatedSet"}
    return line_edit.rewrite(text, documents, edits, {d.index: te.applied(d.data, edits[d.index])
                                                      for d in documents if d.index in edits})


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    return [(a, b) for a, b in zip(before.split("\n"), after.split("\n"), strict=True) if a != b]


def test_set_image_changes_the_image_lines_only_keeping_quotes_and_comments():
    assignments, _ = te.parse_assignments(["*=reg/llm:2"])
    result, problems = rewrite(TEXT, lambda data: te.image_edits(data, assignments))
    assert problems == []
    assert changed_lines(TEXT, result) == [
        ("              image: 'reg/llm:1'  # single-quoted on purpose", "              image: 'reg/llm:2'  # single-quoted on purpose"),
        ("                - image: reg/llm:1", "                - image: reg/llm:2")]


def test_restart_inserts_the_annotation_at_the_documents_own_indentation():
    result, problems = rewrite(TEXT, lambda data: te.restart_edits(data, [], "2026-01-02T03:04:05Z"))
    assert problems == []
    added = [line[2:] for line in difflib.ndiff(TEXT.split("\n"), result.split("\n")) if line.startswith("+ ")]
    assert added == ["            annotations:",
                     '              kubectl.kubernetes.io/restartedAt: "2026-01-02T03:04:05Z"',
                     "          metadata:",
                     "            annotations:",
                     '              kubectl.kubernetes.io/restartedAt: "2026-01-02T03:04:05Z"']
    again, _ = rewrite(result, lambda data: te.restart_edits(data, ["decode"], "2026-02-02T00:00:00Z"))
    assert len(changed_lines(result, again)) == 1  # the annotation is there now: its value is replaced


IMAGE_LINES = "            - name: worker\n              image: 'reg/llm:1'  # single-quoted on purpose\n"


def prefill_image(data):
    return te.image_edits(data, te.parse_assignments(["prefill=reg/llm:2"])[0])


def restart_prefill(data):
    return te.restart_edits(data, ["prefill"], "2026-01-02T03:04:05Z")


@pytest.mark.parametrize("text, decide", [
    (TEXT.replace(IMAGE_LINES + '              args: ["--prefill"]\n',
                  "            - {name: worker, image: 'reg/llm:1', args: [--prefill]}\n"), prefill_image),
    (TEXT.replace("image: 'reg/llm:1'  # single-quoted on purpose", "image: reg/llm\n                :1"), prefill_image),
    (TEXT.replace("          metadata:\n            labels: {tier: gpu}\n", "          metadata: {labels: {tier: gpu}}\n"),
     restart_prefill),
], ids=["flow container", "plain scalar over two lines", "flow metadata"])
def test_what_cannot_be_written_in_place_is_refused_with_its_line_and_nothing_changes(text, decide):
    parse_stream(text, "ds.yaml")  # each variant is a readable file
    result, problems = rewrite(text, decide)
    assert result == text
    assert problems and all(p.file == "ds.yaml" and p.line > 1 and "by hand" in p.message for p in problems)
