"""Parsing manifests: a YAML or JSON stream into its documents (the files are read by `inputs`).

Every value keeps the line it came from, so validation can say `FILE:LINE: path: message`.
A stream is read as kubectl reads a file, document for document and value for value
(`yaml_reader`, after sigs.k8s.io/yaml and go-yaml v2), and a list (`kind: List`, or any
document with `items`) stands for its items, as kubectl's resource builder flattens it.
"""

from __future__ import annotations


from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests import yaml_reader
from kubectl_disagg.manifests.source import Document

MAX_INPUT_BYTES = 10 * 1024 * 1024
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_NAME = "<stdin>"


def parse_stream(text: str | bytes, file: str) -> list[Document]:
    """Every non-empty document of one YAML or JSON stream; raises UserError on bad input."""
    if len(text) > MAX_INPUT_BYTES:
        raise UserError([Problem(file, 0, "", f"input is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")])
    documents, problems = yaml_reader.read(_bytes(text), file)
    flat: list[Document] = []
    for index, data, lines in documents:
        flat.extend(_flattened(Document(data, file, index, lines), problems))
    if problems:
        raise UserError(problems)
    return flat


def _flattened(document: Document, problems: list[Problem]) -> list[Document]:
    """The objects `document` stands for, as kubectl reads them: itself, or, for a list, its items,
    each keeping the lines of its values.

    After apimachinery's unstructured decoding (unstructuredJSONScheme.decode, decodeToList: a
    document with an `items` key is a list; an item naming neither kind nor apiVersion gets the
    list's apiVersion and its kind without the `List` suffix) and cli-runtime's
    FlattenListVisitor (the items' own metadata kept). An item that is a list itself kubectl
    refuses (ExtractList: "*unstructured.Unstructured is not a list"), and so do we.
    """
    data = document.data
    if not (isinstance(data, dict) and "items" in data and isinstance(data.get("kind"), str) and data["kind"]):
        return [document]
    items = data["items"]
    if items is None:
        return []
    if not isinstance(items, list):
        problems.append(Problem(document.file, document.line(("items",)), "items", "must be a list of objects"))
        return []
    by_item: dict[int, dict] = {}  # one pass over the lines, however many items
    for key, line in document.lines.items():
        if len(key) >= 2 and key[0] == "items":
            by_item.setdefault(key[1], {})[key[2:]] = line
    found: list[Document] = []
    for position, item in enumerate(items):
        path = ("items", position)
        if not isinstance(item, dict):
            problems.append(Problem(document.file, document.line(path), f"items[{position}]", "must be an object"))
            continue
        if not item.get("kind") and not item.get("apiVersion"):
            item = {"apiVersion": data.get("apiVersion"), "kind": data["kind"].removesuffix("List"), **item}
        if isinstance(item.get("items"), list):
            problems.append(Problem(document.file, document.line(path), f"items[{position}]",
                                    "a list inside a list, which kubectl does not read: put its items in the outer list"))
        elif not item["kind"]:  # an item of a `kind: List` that names no kind
            problems.append(Problem(document.file, document.line(path), f"items[{position}]",
                                    "kind not set: each item of a List names its apiVersion and kind"))
        else:
            found.append(Document(item, document.file, document.index, by_item.get(position, {(): document.line(path)})))
    return found


def load_plain(text: bytes) -> object:
    """The first YAML document of `text` as plain data, read as client-go reads a kubeconfig
    (the whole text to sigs.k8s.io/yaml, no splitting at `---`); raises ValueError with the
    reader's message when it refuses the text."""
    documents, problems = yaml_reader.read(_bytes(text), "", split_documents=False)
    if problems:
        raise ValueError(problems[0].message)
    return documents[0][1] if documents else None


def _bytes(text: str | bytes) -> bytes:
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
