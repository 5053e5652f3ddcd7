"""Parsing manifests: a YAML or JSON stream into its documents (the files are read by `inputs`).

Every value keeps the line it came from, so validation can say `FILE:LINE: path: message`.
A stream is read as kubectl reads a file, document for document and value for value
(`yaml_reader`, after sigs.k8s.io/yaml and go-yaml v2), and a list (`kind: List`, or any
document with `items`) stands for its items, as kubectl's resource builder flattens it.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests import yaml_reader
from kubectl_disagg.manifests.source import Document, FieldPath

MAX_INPUT_BYTES = 10 * 1024 * 1024
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_NAME = "<stdin>"
# The byte order marks kubectl's file reading heeds (cli-runtime's FileVisitor decodes every -f
# file through x/text's unicode.BOMOverride over UTF-8): a file is UTF-8 unless one says otherwise.
_BYTE_ORDER_MARKS = ((codecs.BOM_UTF8, "utf-8", "UTF-8"), (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16LE"),
                     (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16BE"))


@dataclass(frozen=True)
class Encoding:
    """How a file's bytes hold its text, as kubectl tells it: a byte order mark (kept when the
    file is written back) and the codec it names, else UTF-8."""

    bom: bytes = b""
    codec: str = "utf-8"
    name: str = "UTF-8"

    def encode(self, text: str) -> bytes:
        return self.bom + text.encode(self.codec)


def encoding_of(data: bytes) -> Encoding:
    return next((Encoding(bom, codec, name) for bom, codec, name in _BYTE_ORDER_MARKS if data.startswith(bom)),
                Encoding())


def decoded(data: bytes, file: str) -> tuple[str, Encoding]:
    """The text of a file to be rewritten in place, and its encoding to write it back in;
    refused (UserError) at the line of the first bytes that are not of its encoding: kubectl
    would read them as U+FFFD, and a rewrite could not keep them."""
    encoding = encoding_of(data)
    body = data[len(encoding.bom):]
    bad = yaml_reader.undecodable(body, encoding.codec)
    if bad is not None:
        raise UserError([Problem(file, bad[0] + 1, "", yaml_reader.not_of_encoding(bad[1], encoding.name))])
    return body.decode(encoding.codec), encoding


def parse_stream(text: str | bytes, file: str) -> list[Document]:
    """Every non-empty document of one YAML or JSON stream; raises UserError on bad input."""
    if len(text) > MAX_INPUT_BYTES:
        raise UserError([Problem(file, 0, "", f"input is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")])
    documents, problems = yaml_reader.read(_as_utf8(_bytes(text)), file)
    flat: list[Document] = []
    for index, data, lines, aliases in documents:
        flat.extend(_flattened(Document(data, file, index, lines, aliases), problems))
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
    by_item: dict[str | int, dict[FieldPath, int]] = {}  # one pass over the lines, however many items
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
            aliases = {key[2:]: alias for key, alias in document.aliases.items() if key[:2] == path}
            found.append(Document(item, document.file, document.index, by_item.get(position, {(): document.line(path)}),
                                  aliases))
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


def _as_utf8(data: bytes) -> bytes:
    """A UTF-16 file as the UTF-8 text kubectl reads from it (its byte order mark dropped, a
    bad pair of bytes read as U+FFFD); any other bytes as they are."""
    encoding = encoding_of(data)
    if encoding.codec == "utf-8":
        return data
    return data[len(encoding.bom):].decode(encoding.codec, "replace").encode("utf-8")
