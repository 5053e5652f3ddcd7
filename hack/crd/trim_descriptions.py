"""Drops the descriptions k8s.io/api brings into a CRD with its pod and claim templates, and keeps
every other: the ones written for this project in hack/crd/api, which `kubectl explain` and
docs/reference/fields.md show.

Why: with every description the DisaggregatedSet CRD is 0.64 MB as JSON, past the 256 KiB the API
server allows for all of an object's annotations together, so a client-side `kubectl apply` (and
Argo CD's default sync, which applies the same way) of it is refused on its
last-applied-configuration annotation; without the templates' descriptions it is 0.14 MB, as good
as without any (the project's own are 6 KB of it). The templates' fields are `kubectl explain
pod.spec`'s, described there.

The text is controller-gen's block-style YAML and is edited line by line, so the files keep its
layout: inside the schema of a property named in TEMPLATES, each `description:` entry (its line
and the more-indented lines that continue its value) is left out.

    python3 hack/crd/trim_descriptions.py FILE...   # rewrites each file in place
"""

from __future__ import annotations

import pathlib
import re
import sys

# Properties typed by k8s.io/api's PodTemplateSpec and PersistentVolumeClaim.
TEMPLATES = frozenset({"leaderTemplate", "workerTemplate", "volumeClaimTemplates"})

_KEY = re.compile(r"^(?P<indent> *)(?P<dash>- )?(?P<key>[A-Za-z0-9_$.-]+):(?P<rest>.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def trim(text: str) -> str:
    """``text`` without the descriptions inside the schemas of the TEMPLATES properties."""
    out: list[str] = []
    lines = text.split("\n")
    ancestors: list[tuple[int, str]] = []  # (indent, key) of the mapping keys enclosing a line
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _KEY.match(line)
        if match:
            indent = len(match["indent"]) + (2 if match["dash"] else 0)
            while ancestors and ancestors[-1][0] >= indent:
                ancestors.pop()
            inside = any(key in TEMPLATES and parent == "properties"
                         for (_, parent), (_, key) in zip(ancestors, ancestors[1:]))
            if inside and match["key"] == "description" and match["rest"].strip():
                # the value goes on while lines are indented deeper than its key
                i += 1
                while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
                    i += 1
                continue
            ancestors.append((indent, match["key"]))
        out.append(line)
        i += 1
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: hack/crd/trim_descriptions.py FILE...", file=sys.stderr)
        return 2
    for name in argv:
        path = pathlib.Path(name)
        path.write_text(trim(path.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
