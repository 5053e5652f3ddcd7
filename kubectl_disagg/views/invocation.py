"""How the user invoked us, repeated in every hint: a hint that names a command spells it with
the user's own `NAME`, `-f PATH` and `-n NAMESPACE`, so that it can be run as it stands.

`command_line` writes one command; `Invocation` carries what the user typed (made by the
command from its flags, `commands/_options.invocation`) to the views that write hints. Where
nothing is known (a message made below the views), the hint stays generic: `--gitops -f DIR`.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

PROGRAM = "kubectl disagg"


def command_line(verb: str, *, gitops: bool = False, files: Sequence[str] = (), name: str | None = None,
                 namespace: str | None = None, flags: str = "", group: str = "rollout") -> str:
    """`kubectl disagg rollout VERB [NAME] [FLAGS] [--gitops] [-f PATH...] [-n NAMESPACE]`, each
    word shell-quoted where it needs to be; with --gitops and no file, `-f DIR` (the generic hint)."""
    words = [PROGRAM, *([group] if group else []), verb]
    if name:
        words.append(shlex.quote(name))
    if flags:
        words.append(flags.strip())
    if gitops:
        words.append("--gitops")
    for path in files or (("DIR",) if gitops else ()):
        words += ["-f", path if path == "DIR" else shlex.quote(path)]
    if namespace:
        words += ["-n", shlex.quote(namespace)]
    return " ".join(words)


@dataclass(frozen=True)
class Invocation:
    """What the user typed that a hint must repeat: the set's NAME or its files, -n, --gitops."""

    files: tuple[str, ...] = ()
    name: str | None = None
    namespace: str | None = None
    gitops: bool = False

    def command(self, verb: str, flags: str = "", *, gitops: bool | None = None) -> str:
        """The command line of `verb` for the same set, as the user would type it next."""
        gitops = self.gitops if gitops is None else gitops
        return command_line(verb, gitops=gitops, files=self.files, name=None if self.files else self.name,
                            namespace=self.namespace, flags=flags)


GENERIC = Invocation()
