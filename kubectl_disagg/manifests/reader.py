"""Reading manifests: files, directories and stdin, several documents per stream.

Every value keeps the line it came from, so validation can say `FILE:LINE: path: message`.
Block-style YAML, what nearly every manifest is, is read by `block_yaml`; anything else, and
every error, by PyYAML (`pyyaml_reader`), which a command then imports: it costs 25 ms.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from kubectl_disagg.manifests import block_yaml
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.manifests.source import Document

MAX_INPUT_BYTES = 10 * 1024 * 1024
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_NAME = "<stdin>"


def parse_stream(text: str | bytes, file: str) -> list[Document]:
    """Every non-empty document of one YAML or JSON stream; raises UserError on bad input."""
    if len(text) > MAX_INPUT_BYTES:
        raise UserError([Problem(file, 0, "", f"input is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")])
    block = block_yaml.read(text)
    if block is not None:
        documents = block[0]
    else:
        from kubectl_disagg.manifests import pyyaml_reader

        documents, problems = pyyaml_reader.read(text, file)
        if problems:
            raise UserError(problems)
    return [Document(data, file, index, lines) for index, data, lines in documents]


def load_plain(text: bytes) -> object:
    """One YAML document as plain data, without positions or our checks (a kubeconfig);
    raises ValueError with the reader's message when the text is not YAML."""
    block = block_yaml.read(text)
    if block is not None and block[1] <= 1:
        documents = block[0]
        return documents[0][1] if documents else None
    from kubectl_disagg.manifests import pyyaml_reader

    return pyyaml_reader.load_plain(text)


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
