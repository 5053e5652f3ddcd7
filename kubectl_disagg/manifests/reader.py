"""Reading manifests: files, directories and stdin, several documents per stream.

Every value keeps the line it came from, so validation can say `FILE:LINE: path: message`.
A stream is read as kubectl reads a file, document for document and value for value
(`yaml_reader`, after sigs.k8s.io/yaml and go-yaml v2), and a list (`kind: List`, or any
document with `items`) stands for its items, as kubectl's resource builder flattens it.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable

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


def expand_paths(paths: Iterable[str], recursive: bool = False) -> list[str]:
    """Files named on the command line, directories expanded in a stable (byte-wise) order."""
    files: list[str] = []
    missing: list[Problem] = []
    for raw in paths:
        if raw == STDIN:
            files.append(STDIN)
        elif os.path.isdir(raw):
            files.extend(sorted(_manifests_in(raw, recursive), key=os.fsencode))
        elif os.path.isfile(raw):
            files.append(raw)
        else:
            missing.append(Problem(raw, 0, "", _not_a_file(raw)))
    if missing:
        raise UserError(missing)
    return files


_FILE_TYPES = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_a_file(path: str) -> str:
    """Why `path` is no manifest file: missing, or what it is instead (a pipe would block the
    read, a device such as /dev/zero never ends)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file or directory"
    except OSError as err:  # a component is not a directory, permission denied on one
        return (err.strerror or str(err)).lower()
    kind = next((name for test, name in _FILE_TYPES if test(mode)), "not a file or directory")
    return f"not a regular file ({kind}); give a file, a directory or - for stdin"


def _manifests_in(directory: str, recursive: bool) -> list[str]:
    found = []
    for root, dirs, names in os.walk(directory):
        found.extend(os.path.join(root, name) for name in names if name.endswith(MANIFEST_SUFFIXES))
        if not recursive:
            break
        dirs.sort()
    return [path for path in found if os.path.isfile(path)]


def read_documents(paths: Iterable[str], recursive: bool = False) -> list[Document]:
    """All documents of all inputs, in order; every problem of every file reported at once."""
    documents: list[Document] = []
    problems: list[Problem] = []
    for file in expand_paths(paths, recursive):
        try:
            documents.extend(parse_stream(*_read(file)))
        except UserError as err:
            problems.extend(err.problems)
    if problems:
        raise UserError(problems)
    return documents


def _read(file: str) -> tuple[bytes, str]:
    if file == STDIN:
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        return data, STDIN_NAME
    try:
        with open(file, "rb") as handle:
            return handle.read(MAX_INPUT_BYTES + 1), file
    except OSError as err:
        raise UserError([Problem(file, 0, "", err.strerror or str(err))]) from None
