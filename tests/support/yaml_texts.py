"""YAML texts for the reader's differential test: seeds, mutations and a grammar of YAML text.

`yaml_text(rng)` writes one random YAML stream line by line: block mappings and sequences,
indentless and inline sequences, empty values, comments at odd indents, document markers,
literal and folded blocks with blank and more-indented lines, every double-quoted escape, quoted
keys, flow lists and their near misses, number-, bool- and null-like plain scalars, odd Unicode,
CRLF; at a rate chosen per text it writes near misses (indents off by one, scalars continued on
the next line, stray tabs). `mutate(text, rng)` damages a valid text a few edits at a time.
"""

from __future__ import annotations

import random

from tests.support.paths import EXAMPLES, GOLDEN

KUBECTL_KUBECONFIG = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=
    server: https://127.0.0.1:6443
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    namespace: serving
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - eks
      - get-token
      - --cluster-name
      - prod
      command: aws
      env: null
      interactiveMode: IfAvailable
      provideClusterInfo: false
    token: "abc.def"
"""

SEEDS = [path.read_text() for path in sorted(EXAMPLES.glob("*.yaml")) + sorted(GOLDEN.glob("*.yaml"))[:2]] + [
    KUBECTL_KUBECONFIG,
    "a: 1\n---\nb:\n- x\n- y: |\n    text\n    more\n  z: >-\n    folded\n    line\n...\n",
    "# c\nk: 'q''s' # c\nl: \"e\\u00e9\\n\"\nm: []\nn: {}\no:\np: ~\n---\n---\n- - 1\n-\n  - 2\n",
]
_FRAGMENTS = [" ", "  ", "\n", "-", "- ", ":", ": ", "#", " #", "'", '"', "|", "|-", ">", "[", "]", "{", "}", "&a",
              "*a", "!!str ", "---", "...", "\t", "\\", "\\u", "1", "0x", ".5", "yes", "~", "<<", "%", "?", ",", "\r"]


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        lines = text.split("\n")
        at = rng.randrange(len(lines))
        choice = rng.randrange(6)
        if choice == 0:  # a fragment dropped in
            line = lines[at]
            cut = rng.randint(0, len(line))
            lines[at] = line[:cut] + rng.choice(_FRAGMENTS) + line[cut:]
        elif choice == 1:  # characters cut
            line = lines[at]
            cut = rng.randint(0, len(line))
            lines[at] = line[:cut] + line[cut + rng.randint(1, 3):]
        elif choice == 2:  # indentation moved
            lines[at] = " " * rng.randint(0, 3) + lines[at] if rng.random() < 0.5 else lines[at][rng.randint(1, 2):]
        elif choice == 3:  # a line repeated elsewhere (duplicate keys, misplaced items)
            lines.insert(rng.randrange(len(lines) + 1), lines[at])
        elif choice == 4:  # a line removed
            del lines[at]
        else:  # lines swapped
            other = rng.randrange(len(lines))
            lines[at], lines[other] = lines[other], lines[at]
        text = "\n".join(lines)
    return text


_PLAIN = ["a", "b", "name", "v1", "x y", "a:b", "http://h:80/p?q=1#f", "a#b", "10Gi", "500m", "it's", 'say "hi"',
          "a,b", "a[0]", "{x}", "x]", "0", "-0", "+1", "-1", "12", "012", "0o17", "0x1F", "0b11", "1_000", "1:20",
          "-1:20", "1.5", "1.", ".5", "1e3", "1.0e+3", "2024-01-01", "2024-1-1 1:02:03",
          "2024-01-01T00:00:00Z", "yes", "No", "ON", "off", "y", "n", "true", "False", "~", "null", "NULL", "nul",
          "<<", "=", "a'b", "-a", "--a", "-1a", "\u00e9t\u00e9", "a\u00a0b", "\u00a0", "\U0001F600", "\u4e2d", "a  b",
          "a#", "---", "..."]
_PLAIN_MISSES = ["a:", "a: b", "-", "- a", ":x", "?x", "? x", ": x", "%x", "@x", "`x", "!x", "&x", "*x", "|", ">",
                 "#", "\u2028x", "x\u0085y", "\ufeffx", "a\tb", "a\rb", "--- a", "'", '"', "[a]", "[]", ".inf",
                 ".NaN", "{}", "a ", " a", "a #b", "x\x7fy", "x\x01"]
_FLOW_PLAIN = [word for word in _PLAIN if not any(c in word for c in ",[]{}#:")]
_KEYS = ["a", "b", "c", "name", "key with spaces", "a:b", "http://h:80/x", "a#b", "x.y/z", "\u00e9", "a[0]", "k" * 1022]
_KEY_MISSES = ["-k", "1", "0x1", "yes", "~", "null", "<<", "=", "?k", ":k", "k:", "a b ", "[k]", "{k}", "k" * 1025,
               "a #b", "&a k", "!t k", "*a", "", "- k"]
_ESCAPES = ["\\\\", '\\"', "\\/", "\\n", "\\t", "\\r", "\\0", "\\b", "\\f", "\\a", "\\v", "\\e", "\\ ", "\\x41",
            "\\u00e9", "\\U0001F600", "\\N", "\\_", "\\L", "\\P"]
_ESCAPE_MISSES = ["\\q", "\\x4", "\\ud800", "\\U00110000", "\\", "\\'", "\\\t", "\\x4g"]


class _TextWriter:
    """Writes one random YAML stream; `miss` is the chance of each near miss."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.miss = rng.choice([0.0, 0.005, 0.02, 0.08])

    def missed(self) -> bool:
        return self.rng.random() < self.miss

    def pick(self, good: list, bad: list):
        return self.rng.choice(bad if self.missed() else good)

    # -- scalars --------------------------------------------------------------------------
    def plain(self) -> str:
        if self.missed():  # a random word from characters that matter to YAML
            return "".join(self.rng.choice("ab01 :#-.,'\"[]{}~\u00e9\u00a0") for _ in range(self.rng.randint(1, 6)))
        return self.pick(_PLAIN, _PLAIN_MISSES)

    def quoted(self) -> str:
        rng = self.rng
        if rng.random() < 0.5:
            body = "".join(rng.choice(["a", " ", "''", '"', "\\", "#", " #", ": ", "\u00e9"] + ["'"] * self.missed())
                           for _ in range(rng.randint(0, 5)))
            return "'" + body + ("" if self.missed() else "'")
        body = "".join(self.pick(["a", " ", "'", "#", " #", ": "] + _ESCAPES, _ESCAPE_MISSES)
                       for _ in range(rng.randint(0, 5)))
        return '"' + body + ("" if self.missed() else '"')

    def flow(self, depth: int = 0) -> str:
        rng = self.rng
        items = [self.flow(depth + 1) if depth < 2 and self.missed() else
                 rng.choice([self.pick(_FLOW_PLAIN, _PLAIN + _PLAIN_MISSES), self.quoted()])
                 for _ in range(rng.randint(0, 4))]
        separator = self.pick([", ", ", ", ",", " , "], [" ", ",,", ": "])
        close = self.pick(["]", "]", " ]"], [",]", "", "]]", "] x", "]#c"])
        return rng.choice(["[", "[ "]) + separator.join(items) + close

    def scalar(self) -> str:
        roll = self.rng.random()
        if roll < 0.5:
            text = self.plain()
        elif roll < 0.8:
            text = self.quoted()
        elif roll < 0.92:
            text = self.flow()
        else:
            text = self.pick(["{}", "[]", "[] # c"], ["{ }", "{}x", "{a: 1}", "&a x", "*a", "!!str x", "? x"])
        return text + self.comment()

    def comment(self) -> str:
        if self.rng.random() < 0.85:
            return ""
        return self.pick([" # c", "  #c", " #", " # a: b", "   # - x"], ["#c", "\t# c"])

    def key(self) -> str:
        if self.rng.random() < 0.1:
            return self.quoted()
        key = self.pick(_KEYS, _KEY_MISSES)
        return key + str(self.rng.randrange(100)) if self.rng.random() < 0.5 else key  # few duplicates

    def block_scalar(self, parent: int) -> tuple[str, list[str]]:
        """A `|` or `>` header and its lines, for content deeper than the column `parent`."""
        rng = self.rng
        header = rng.choice(["|", "|-", ">", ">-"]) + self.pick(["", "", " # c"], ["#c", "+", "2", " x", "-"])
        indent = max(0, parent + self.pick([1, 2, 2, 2, 3], [0, -1]))
        lines = []
        for number in range(rng.randint(1, 4)):
            roll = rng.random()
            if roll < 0.6 or not (number or self.missed()):  # leading blank lines: a near miss
                lines.append(" " * indent + rng.choice(["text", "more words", "# not a comment", "a: b", "- x",
                                                        "x  ", "'q", "\u00e9"]))
            elif roll < 0.75:
                lines.append("")
            elif roll < 0.85:
                lines.append(" " * rng.randint(0, indent + 2))  # spaces only
            else:
                lines.append(" " * (indent + rng.randint(1, 3)) + "deeper")
        return header, lines

    # -- collections ----------------------------------------------------------------------
    def column(self, indent: int) -> int:
        return max(0, indent + self.rng.choice([-2, -1, 1, 2])) if self.missed() else indent

    def value(self, indent: int, depth: int, item: bool) -> tuple[str, list[str]]:
        """What follows `key:` or `-` (`item`): the rest of the line, and the lines after it."""
        roll = self.rng.random()
        if roll < 0.45 or depth > 4:
            if self.missed():  # a plain or quoted scalar continued on the next line
                opening = self.rng.choice(["a", "'a", '"a', "a #c", "[a,", "|", "'a\\"])
                closing = self.rng.choice(["b", "b'", 'b"', "b]", "- b", "b: c", "#c"])
                return " " + opening, [" " * (indent + self.rng.choice([0, 1, 2, 4])) + closing]
            return " " + self.scalar(), []
        if roll < 0.55:
            header, lines = self.block_scalar(indent)
            return " " + header, lines
        if roll < 0.6 and not (item and not self.missed()):
            return self.comment(), []  # an empty value (an empty item is a mistake)
        if not item and self.rng.random() < 0.2:  # a list at its key's column
            return self.comment(), self.sequence(indent, depth + 1)
        child = max(0, indent + self.pick([1, 2, 2, 2, 4, 6], [0, -1]))
        return self.comment(), self.node(child, depth + 1)

    def node(self, indent: int, depth: int, inline: bool = False) -> list[str]:
        """A collection; `inline`: its first line goes after a `- `, so it starts with content."""
        if self.rng.random() < 0.5:
            return self.mapping(indent, depth, inline)
        return self.sequence(indent, depth, inline)

    def mapping(self, indent: int, depth: int, inline: bool = False) -> list[str]:
        lines: list[str] = []
        for number in range(self.rng.randint(1, 4)):
            inline_first = inline and not number
            lines.extend([] if inline_first else self.noise(indent))
            column = indent if inline_first else self.column(indent)
            rest, after = self.value(column, depth, item=False)
            lines.append(" " * column + self.key() + self.pick([":"], [" :", "::", ":\u00a0"]) + rest)
            lines.extend(after)
        return lines

    def sequence(self, indent: int, depth: int, inline: bool = False) -> list[str]:
        lines: list[str] = []
        for number in range(self.rng.randint(1, 4)):
            inline_first = inline and not number
            lines.extend([] if inline_first else self.noise(indent))
            column = indent if inline_first else self.column(indent)
            if self.rng.random() < 0.35 and depth <= 4:
                # `- key: v` or `- - x`: a collection opened on the dash's line, further right
                gap = self.rng.choice([1, 1, 1, 2, 3])
                inner = self.node(column + 1 + gap, depth + 1, inline=True)
                lines.append(" " * column + "-" + " " * gap + inner[0].lstrip(" "))
                lines.extend(inner[1:])
            else:
                rest, after = self.value(column, depth, item=True)
                lines.append(" " * column + "-" + rest)
                lines.extend(after)
        return lines

    def noise(self, indent: int) -> list[str]:
        if self.rng.random() < 0.85:
            return []
        return [self.pick(["", " " * self.rng.randint(1, 4), " " * self.rng.randint(0, indent + 3) + "# c",
                           " " * self.rng.randint(0, 3) + "#"], ["#no space", "\t", "--- x"])]

    # -- the stream -----------------------------------------------------------------------
    def stream(self) -> str:
        rng = self.rng
        lines: list[str] = []
        if rng.random() < 0.1:
            lines.append(self.pick(["# head", ""], ["%YAML 1.1"]))
        for number in range(rng.choice([1, 1, 1, 2, 3])):
            if number or rng.random() < 0.3:
                lines.append(self.pick(["---", "--- # c", "--- "], ["---#c", "--- a: 1", "...\n---", "----"]))
            if rng.random() < 0.95:
                lines.extend(self.node(self.pick([0], [1, 2]), 0))
            if self.missed():
                lines.append(rng.choice(["...", "... # c"]))
        text = "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")
        if self.missed():
            text = text.replace("\n", "\r\n")
        if self.missed() and text:
            at = rng.randrange(len(text))
            text = text[:at] + rng.choice(["\t", "\ufeff", "\u2028", "\u0085", "\x00", " ", "\u00a0"]) + text[at:]
        return text


def yaml_text(rng: random.Random) -> str:
    return _TextWriter(rng).stream()
