"""Reading manifests: files, directories and stdin, several documents per stream.

Every value keeps the line it came from, so validation can say `FILE:LINE: path: message`.
A stream is read as kubectl reads a file, document for document and value for value
(`yaml_reader`, after sigs.k8s.io/yaml and go-yaml v2).
"""

from __future__ import annotations

import os
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
    if problems:
        raise UserError(problems)
    return [Document(data, file, index, lines) for index, data, lines in documents]


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
            missing.append(Problem(raw, 0, "", "no such file or directory"))
    if missing:
        raise UserError(missing)
    return files


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
