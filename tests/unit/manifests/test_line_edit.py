"""Rewriting values in place (design §2.1): only the edited lines change, or nothing does."""

from __future__ import annotations

import codecs
import difflib
import os
import re
import tempfile

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from kubectl_disagg.core.delivery.history import templates_of
from kubectl_disagg.core.delivery.sets import set_from_object
from kubectl_disagg.core.delivery.undo import undo_edits

from kubectl_disagg.core.api import template_edit as te
from kubectl_disagg.manifests import line_edit
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml

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


def test_a_scalar_over_two_lines_is_refused_with_its_line_and_nothing_changes():
    text = TEXT.replace("image: 'reg/llm:1'  # single-quoted on purpose", "image: reg/llm\n                :1")
    parse_stream(text, "ds.yaml")  # a readable file
    result, problems = rewrite(text, prefill_image)
    assert result == text
    assert problems and all(p.file == "ds.yaml" and p.line > 1 and "by hand" in p.message for p in problems)


@pytest.mark.parametrize("text, decide, lines", [
    (TEXT.replace(IMAGE_LINES + '              args: ["--prefill"]\n',
                  "            - {name: worker, image: 'reg/llm:1', args: [--prefill]}\n"), prefill_image,
     ["-            - {name: worker, image: 'reg/llm:1', args: [--prefill]}", "+            - args:",
      '+              - "--prefill"', "+              image: reg/llm:2", "+              name: worker"]),
    (TEXT.replace("          metadata:\n            labels: {tier: gpu}\n", "          metadata: {labels: {tier: gpu}}\n"),
     restart_prefill,
     ["-          metadata: {labels: {tier: gpu}}", "+          metadata:", "+            annotations:",
      '+              kubectl.kubernetes.io/restartedAt: "2026-01-02T03:04:05Z"', "+            labels:",
      "+              tier: gpu"]),
], ids=["flow container", "flow metadata"])
def test_an_edit_inside_a_flow_collection_rewrites_that_collection_whole_in_block_style(text, decide, lines):
    result, problems = rewrite(text, decide)
    assert problems == [] and diff_of(text, result) == lines


def diff_of(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.split("\n"), after.split("\n"), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


PREFILL = ("spec", "roles", 0, "spec", "leaderWorkerTemplate")
DECODE = ("spec", "roles", 1, "spec", "leaderWorkerTemplate")


def test_a_value_that_is_not_text_replaces_its_block_and_only_its_block():
    """`rollout undo`'s structural edits: a list of another length written whole at its key
    (block style, items at the key's column), a number added under the nearest key there, a
    flow mapping removed, a block list replaced; every other line, comment and quote stays."""
    text = TEXT.replace("                  name: worker\n",
                        "                  name: worker\n                  args:  # tuned\n"
                        "                  - --decode\n                  - --fast\n\n  # between the roles\n")
    edits = [
        (PREFILL + ("workerTemplate", "spec", "containers", 0, "args"), ["--prefill", "--chunked"]),
        (PREFILL + ("workerTemplate", "metadata"), te.REMOVED),
        (PREFILL + ("size",), 2),
        (DECODE + ("workerTemplate", "spec", "containers", 0, "args"), ["--decode"]),
    ]
    result, problems = rewrite(text, lambda data: (edits, []))
    assert problems == []
    assert diff_of(text, result) == ["+        size: 2", "-          metadata:", "-            labels: {tier: gpu}",
                    '-              args: ["--prefill"]', "+              args:", '+              - "--prefill"',
                    '+              - "--chunked"', "-                  - --decode", "-                  - --fast",
                    '+                  - "--decode"']
    assert "  # between the roles" in result and "# single-quoted on purpose" in result and "# do not rename" in result
    (document, _) = parse_stream(result, "ds.yaml")
    assert document.data == te.applied(parse_stream(text, "ds.yaml")[0].data, edits)


def test_removing_the_first_key_of_a_list_item_hands_its_dash_to_the_next():
    edits = [(DECODE + ("workerTemplate", "spec", "containers", 0, "image"), te.REMOVED)]
    result, problems = rewrite(TEXT, lambda data: (edits, []))
    assert problems == [] and diff_of(TEXT, result) == [
        "-                - image: reg/llm:1", "-                  name: worker", "+                - name: worker"]


def test_each_rewritten_line_keeps_its_own_line_ending():
    """A CRLF file lost the `\r` of every rewritten line (mixed endings), and a restart was
    refused as "a flow mapping" (the `\r` after `metadata:` read as a value). Each line keeps
    its ending; a line added takes the ending of the line it follows."""
    mixed = "".join(line + ("\r\n" if n % 3 else "\n") for n, line in enumerate(TEXT.split("\n")[:-1]))
    result, problems = rewrite(mixed, lambda data: te.image_edits(data, te.parse_assignments(["*=reg/llm:2"])[0]))
    assert problems == [] and diff_of(mixed, result) == [
        "-              image: 'reg/llm:1'  # single-quoted on purpose\r",
        "+              image: 'reg/llm:2'  # single-quoted on purpose\r",
        "-                - image: reg/llm:1\r", "+                - image: reg/llm:2\r"]
    crlf = TEXT.replace("\n", "\r\n")
    result, problems = rewrite(crlf, restart_prefill)
    assert problems == [] and "\n" not in result.replace("\r\n", "")
    assert diff_of(crlf, result) == [
        "+            annotations:\r", '+              kubectl.kubernetes.io/restartedAt: "2026-01-02T03:04:05Z"\r']
    flow = crlf.replace("          metadata:\r\n            labels: {tier: gpu}\r\n", "          metadata: {labels: {tier: gpu}}\r\n")
    result, problems = rewrite(flow, restart_prefill)  # a flow mapping written whole, in block style
    assert problems == [] and diff_of(flow, result) == [
        "-          metadata: {labels: {tier: gpu}}\r", "+          metadata:\r", "+            annotations:\r",
        '+              kubectl.kubernetes.io/restartedAt: "2026-01-02T03:04:05Z"\r', "+            labels:\r",
        "+              tier: gpu\r"]


def _template(draw):
    """A role's template as people write them: an image, maybe arguments, environment,
    resources, a group size; each present or not."""
    container = {"name": "server", "image": draw(st.sampled_from(["img:1", "img:2"]))}
    if draw(st.booleans()):
        container["args"] = draw(st.lists(st.sampled_from(["--fast", "--tp=2", "--max-len", "8192"]), max_size=3))
    if draw(st.booleans()):
        container["env"] = [{"name": f"V{n}", "value": draw(st.sampled_from(["1", "on", "x y"]))}
                            for n in range(draw(st.integers(0, 2)))]
    if draw(st.booleans()):
        container["resources"] = {"limits": {"nvidia.com/gpu": draw(st.sampled_from(["1", "8"]))}}
    template = {"workerTemplate": {"spec": {"containers": [container]}}}
    if draw(st.booleans()):
        template["size"] = draw(st.integers(1, 4))
    return template


@st.composite
def _document(draw):
    return {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
            "metadata": {"name": "llm", "namespace": "serving"},
            "spec": {"roles": [{"name": role, "spec": {"replicas": 1, "leaderWorkerTemplate": _template(draw)}}
                               for role in ("prefill", "decode")]}}


class _IndentedLists(yaml.SafeDumper):
    """PyYAML writing lists indented under their key, as many people do."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


STYLES = {  # how people's files are written: kubectl's style (our writer), PyYAML's block, its flow
    # leaves, lists indented under their keys, and a comment on every line
    "kubectl": to_yaml,
    "block": lambda data: yaml.safe_dump(data, sort_keys=False, default_flow_style=False),
    "flow leaves": lambda data: yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=1000),
    "indented lists": lambda data: yaml.dump(data, Dumper=_IndentedLists, sort_keys=False, default_flow_style=False),
    "commented": lambda data: "".join(f"{line}  # {n}\n" for n, line in enumerate(to_yaml(data).splitlines())),
}


ENCODINGS = {"UTF-8": ("utf-8", b""), "UTF-8 with BOM": ("utf-8", codecs.BOM_UTF8),
             "UTF-16LE": ("utf-16-le", codecs.BOM_UTF16_LE), "UTF-16BE": ("utf-16-be", codecs.BOM_UTF16_BE)}
OTHER = "# passes through untouched\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: other}  # flow\n"


@st.composite
def _file(draw):
    """A file as people write one: a set (`_document`) in one of the `STYLES`, comments and
    blank lines between its lines, maybe a comment above it and another document after it, LF, CRLF or mixed line endings, a line break at the
    end or none, in UTF-8 (with or without a byte order mark) or UTF-16 with one."""
    text = STYLES[draw(st.sampled_from(sorted(STYLES)))](draw(_document()))
    lines = text.split("\n")
    for at in sorted(draw(st.lists(st.integers(1, len(lines) - 1), max_size=3)), reverse=True):
        lines.insert(at, draw(st.sampled_from(["", "# a note between lines", "    # indented"])))
    text = "\n".join(lines)
    if draw(st.booleans()):
        text = "# owned by the platform team\n" + text
    if draw(st.booleans()):
        text += "---\n" + OTHER
    ending = draw(st.sampled_from(["\n", "\r\n", "mixed"]))
    lines = text.split("\n")
    ends = [draw(st.sampled_from(["\n", "\r\n"])) if ending == "mixed" else ending for _ in lines[:-1]]
    codec, bom = ENCODINGS[draw(st.sampled_from(sorted(ENCODINGS)))]
    text = "".join(map(str.__add__, lines, ends)) + lines[-1]
    if draw(st.booleans()):  # no line break at the end
        text = text.removesuffix(ends[-1])
    return bom + text.encode(codec), codec, bom, ending


@st.composite
def _edit(draw):
    """One of the template edits, as its command decides it: (its name, the decision, the set
    an undo goes back to)."""
    kind = draw(st.sampled_from(["set image", "rollout restart", "rollout undo"]))
    if kind == "set image":
        assignments = te.parse_assignments([draw(st.sampled_from(
            ["prefill=img:9", "decode=img:9", "*=img:9", "prefill/server=reg/llm:9"]))])[0]
        return kind, lambda data: te.image_edits(data, assignments), None
    if kind == "rollout restart":
        roles = draw(st.sampled_from([[], ["prefill"], ["decode"], ["prefill", "decode"]]))
        return kind, lambda data: te.restart_edits(data, roles, "2026-01-02T03:04:05Z"), None
    back = set_from_object(draw(_document()))
    return kind, lambda data: undo_edits(data, templates_of(back), whole=False), back


def _touched(document, edits, lines: list[str]) -> set[int]:
    """The 0-based lines an edit may rewrite: from the line of the edited value (or of its
    nearest ancestor in the file; for a removed key, its mapping's; for a value inside a flow
    collection, the key above the outermost one, which is written whole) to the last line of
    anything under it."""
    touched: set[int] = set()
    for path, value in edits:
        path = path[:-1] if value is te.REMOVED else path
        while path and path not in document.lines:
            path = path[:-1]
        flow = next((depth for depth in range(1, len(path) + 1)
                     if _opens_flow(lines[document.lines[path[:depth]] - 1], path[depth - 1])), None)
        if flow is not None:
            path = path[:flow]
            while isinstance(path[-1], int):
                path = path[:-1]
        under = [line for key, line in document.lines.items() if key[:len(path)] == path]
        touched.update(range(document.lines[path] - 1, max(under)))
    return touched


def _kept(old: list[str], new: list[str], touched: set[int]) -> bool:
    """Whether the lines of `old` not `touched` are in `new` byte for byte, in order, each run
    of them whole (what an edit writes goes between runs), the first at the start and the last
    at the end."""
    runs: list[tuple[int, list[str]]] = []  # (first line, lines)
    for index, line in enumerate(old):
        if index in touched:
            continue
        if runs and runs[-1][0] + len(runs[-1][1]) == index:
            runs[-1][1].append(line)
        else:
            runs.append((index, [line]))
    at = 0
    for first, run in runs:
        if first + len(run) == len(old):  # the last lines: at the end
            found = len(new) - len(run) if new[len(new) - len(run):] == run and len(new) - len(run) >= at else None
        else:
            found = next((j for j in range(at, len(new) - len(run) + 1) if new[j:j + len(run)] == run), None)
        if found is None or (first == 0 and found != 0):
            return False
        at = found + len(run)
    return True


def _opens_flow(line: str, key) -> bool:
    """Whether the value of `key` (a list item's when a number) starts a flow collection on `line`."""
    if isinstance(key, int):
        return line.lstrip(" -").startswith(("{", "["))
    return re.search(rf"(?:^|[\s{{,])['\"]?{re.escape(key)}['\"]?:\s*[\[{{]", line) is not None


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(shape=_file(), edit=_edit(), mode=st.sampled_from([0o600, 0o640, 0o664]))
def test_every_template_edit_rewrites_any_file_shape_in_place(shape, edit, mode):
    """`set image`, `rollout restart` and `rollout undo -f` (the one shell, `rewrite_file`) over
    random file shapes: the file reads back as the edited data (after an undo, the set names
    the revision gone back to), every line no edit touches stays byte for byte, each line keeps
    its ending (a CRLF file stays CRLF), the encoding and its byte order mark stay, and the
    file written keeps its mode with nothing left beside it."""
    from kubectl_disagg.commands._template_edit import rewrite_file
    from kubectl_disagg.manifests.writer import write_atomically

    raw, codec, bom, ending = shape
    kind, decide, back = edit
    before = parse_stream(raw, "ds.yaml")
    edits = decide(before[0].data)[0]
    data, sets, problems = rewrite_file("ds.yaml", raw, decide)
    assert problems == [] and data is not None
    after = parse_stream(data, "ds.yaml")
    assert [d.data for d in after] == [te.applied(before[0].data, edits), *(d.data for d in before[1:])]
    assert sets == [after[0].data]
    if back is not None:
        assert set_from_object(after[0].data).revision == back.revision
    assert data.startswith(bom) and not (bom and data[len(bom):].startswith(bom))
    old, new = raw[len(bom):].decode(codec).split("\n"), data[len(bom):].decode(codec).split("\n")
    assert _kept(old, new, _touched(before[0], edits, old)), (kind, edits)
    if ending != "mixed":
        assert all(line.endswith("\r") == (ending == "\r\n") for line in new[:-1]) and not new[-1].endswith("\r")
    assert (new[-1] == "") == (old[-1] == "")  # a line break at the end, or none, as before
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "ds.yaml")
        with open(path, "wb") as out:
            out.write(raw)
        os.chmod(path, mode)
        write_atomically(path, data)
        assert os.listdir(directory) == ["ds.yaml"] and os.stat(path).st_mode & 0o777 == mode
        with open(path, "rb") as written:
            assert written.read() == data
