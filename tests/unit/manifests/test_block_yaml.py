"""The block-YAML reader gives what the PyYAML-based reader gives, or declines.

Everything here compares `block_yaml` with `pyyaml_reader` (PyYAML, LibYAML when present) on the
same text: documents, values, the line of every field, document indices. Declining (None) is
always allowed; a different answer never is. Coverage is asserted too: what this tool, kubectl
and the examples write must not fall back.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_disagg.manifests import block_yaml, reader as loader, pyyaml_reader, source
from kubectl_disagg.manifests.writer import to_yaml, to_yaml_stream
from tests.conftest import EXAMPLES

EXAMPLES_PER_STRATEGY = int(os.environ.get("KUBECTL_DISAGG_FUZZ_EXAMPLES", "40"))
_RESOLVER = yaml.resolver.Resolver()


def reference(text):
    """The PyYAML reader's documents, or None when it reports a problem."""
    documents, problems = pyyaml_reader.read(text, "f.yaml")
    return None if problems else documents


def agrees(text) -> bool:
    """Whether block_yaml declined (False) or answered exactly as PyYAML (True); fails otherwise."""
    ours = block_yaml.read(text)
    if ours is None:
        return False
    assert ours[0] == reference(text), text
    return True


# -- implicit types -------------------------------------------------------------------------

def pyyaml_type(value: str) -> str:
    return _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)).rsplit(":", 1)[1]


@pytest.mark.parametrize("value", [
    "", "~", "null", "Null", "NULL", "nULL", "yes", "Yes", "YES", "yEs", "y", "n", "no", "on", "ON", "off", "true",
    "False", "0", "-0", "+12", "012", "0o17", "0x1F", "0b101", "1_000", "1:20", "-1:20:30", "190:20:30.15", "1.5",
    "1.", ".5", "-.5", "1e3", "1.0e3", "1.0e+3", "1.0E-3", "._", ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "-.nan",
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2001-1-1", "2001-12-14T21:59:43Z",
    "<<", "=", "==", "<", "10Gi", "500m", "1.5Gi", "v1", "0.0.0.0", "127.0.0.1:6443", "-", "+", ".", "1_", "0_7",
    "09", "0b", "0x", "1:60", "1:5", "--1", "+-1", "12:30:00",
])
def test_implicit_types_are_yaml_1_1s(value):
    assert block_yaml.implicit_type(value) == pyyaml_type(value)


@settings(max_examples=EXAMPLES_PER_STRATEGY * 50, deadline=None)
@given(st.text(alphabet="0123456789_.:+-eExXbBoOaAfFiInNtTZz ~<=yYsSlLuU", min_size=1, max_size=14))
def test_implicit_types_of_number_like_text(value):
    assert block_yaml.implicit_type(value) == pyyaml_type(value)


# -- documents written by writers -----------------------------------------------------------

keys = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=10)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
    st.text(max_size=12),
    st.sampled_from(["yes", "off", "~", "null", "1e3", "0x1F", "0755", "1:20", "2024-01-01", ".5", "<<", "=",
                     "a: b", "x #y", "#x", "- a", "-a", "'q'", '"q"', "it's", "[a]", "{a}", "a\nb", "tab\tx",
                     "back\\slash", " lead", "trail ", "10Gi", "500m", "http://x:80/y", "k=v", "%x", "@x"]),
)
values = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)), max_leaves=30)
documents = st.one_of(st.dictionaries(keys, values, min_size=1, max_size=5), st.lists(values, min_size=1, max_size=4))


@settings(max_examples=EXAMPLES_PER_STRATEGY * 10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_what_this_tool_writes_is_read_without_pyyaml(document):
    text = to_yaml(document)
    assert agrees(text), text  # our writer stays inside the block subset: no fallback
    assert block_yaml.read(text)[0][0][1] == document


@settings(max_examples=EXAMPLES_PER_STRATEGY * 5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(keys, values, min_size=1, max_size=4), min_size=1, max_size=4))
def test_streams_this_tool_writes(objects):
    text = to_yaml_stream(objects)
    assert agrees(text), text
    assert [data for _, data, _ in block_yaml.read(text)[0]] == objects


@settings(max_examples=EXAMPLES_PER_STRATEGY * 10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.sampled_from([2, 4]), st.booleans(), st.sampled_from([20, 80, 10_000]),
       st.booleans())
def test_what_pyyaml_writes(document, indent, explicit_start, width, allow_unicode):
    """PyYAML's own layouts: indented lists, wrapped long strings, other quoting."""
    text = yaml.safe_dump(document, indent=indent, explicit_start=explicit_start, width=width,
                          allow_unicode=allow_unicode, default_flow_style=False, sort_keys=False)
    agrees(text)


# -- mutated documents ----------------------------------------------------------------------

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

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
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


@settings(max_examples=EXAMPLES_PER_STRATEGY * 25, deadline=None)
@given(st.sampled_from(SEEDS), st.randoms(use_true_random=False))
def test_mutated_documents_are_read_as_pyyaml_reads_them_or_declined(seed, rng):
    text = mutate(seed, rng)
    ours = block_yaml.read(text)
    if ours is not None:
        assert reference(text) is not None, f"PyYAML refuses this text, we read it:\n{text}"
        assert ours[0] == reference(text), text


# -- what must not fall back ----------------------------------------------------------------

@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_examples_are_read_without_pyyaml(path):
    assert agrees(path.read_bytes())




def test_a_kubectl_kubeconfig_is_read_without_pyyaml():
    assert block_yaml.read(KUBECTL_KUBECONFIG) is not None
    assert loader.load_plain(KUBECTL_KUBECONFIG.encode()) == yaml.safe_load(KUBECTL_KUBECONFIG)


# -- the kubeconfig reader ------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    b"", b"# only a comment\n", b"---\n", b"a: 1\n---\nb: 2\n", b"1: one\n", b"a: 0x1F\n", b"a: [1, 2]\n",
    b"a: &x 1\nb: *x\n", b"a: 1\na: 2\n", b"a: b: c\n", b"when: 2024-01-01\n", b"- 1.5\n", "a: \u00e9\n".encode(),
])
def test_load_plain_is_pyyamls(text):
    try:
        expected = yaml.safe_load(text)
    except yaml.YAMLError:
        with pytest.raises(ValueError):
            loader.load_plain(text)
    else:
        assert loader.load_plain(text) == expected


# -- details of lines and documents ---------------------------------------------------------

def test_lines_and_indices_of_a_stream():
    text = "# lead\n---\n---\nkind: A\nspec:\n  roles:\n  - name: p\n    size: 2\n  -\n    name: d\n"
    (documents, count) = block_yaml.read(text)
    assert count == 2
    ((index, data, lines),) = documents
    assert index == 1
    assert data == {"kind": "A", "spec": {"roles": [{"name": "p", "size": 2}, {"name": "d"}]}}
    assert lines[()] == 4 and lines[("spec", "roles", 0)] == 7 and lines[("spec", "roles", 1)] == 10
    assert lines[("spec", "roles", 0, "size")] == 8
    assert agrees(text)


@pytest.mark.parametrize("text", [
    "a: [[1]]\n", "a: [1,\n  2]\n", "a: [1,]\n", "a: {b: 1}\n", "a: &x b\n", "a: !!str 1\n", "? a\n: b\n",
    "a: 1.5\n", "a: 0755\n", "a: x\n  y\n", "a:\tb\n", "a: 'x\n  y'\n", "a: \"\\N\"\n", "  a: 1\n",
    "a: |2\n   x\n", "a: |\n\n  x\n", "a: |+\n  x\n", "-\n", "a: b\r\n", "a: b\u2028c\n", "\ufeffa: 1\n",
    "<<: {}\n", "1: x\n", "a: 1\na: 2\n", "--- a\n", "%YAML 1.1\n---\na: 1\n",
])
def test_outside_the_subset_it_declines(text):
    assert block_yaml.read(text) is None


# -- text generated from a grammar ----------------------------------------------------------
# The tests above start from data or from valid files; this generator writes YAML text line by
# line from the constructs block_yaml claims to read, and, at a rate chosen per text, their near
# misses: indents off by one, inline `- key:` mappings, empty items, comments everywhere, block
# scalars at EOF, every escape, one-line flow sequences, number-like scalars, odd Unicode, CRLF.

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


def _typed(value):
    """`value` with every scalar tagged by its type: True and 1 are equal in Python, not in YAML."""
    if isinstance(value, dict):
        return ("map", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", [_typed(item) for item in value])
    return (type(value).__name__, value)


def check_text(text) -> str:
    """"read" (as PyYAML reads it), "declined" or "refused" (by PyYAML too); fails on a difference."""
    ours = block_yaml.read(text)
    documents, problems = pyyaml_reader.read(text, "f.yaml")
    if ours is None:
        return "refused" if problems else "declined"
    assert not problems, f"PyYAML refuses this text, block_yaml reads it: {text!r}"
    assert [(index, _typed(data), lines) for index, data, lines in ours[0]] == \
        [(index, _typed(data), lines) for index, data, lines in documents], repr(text)
    if ours[1] <= 1:  # as a kubeconfig: one document, read as yaml.load reads it
        raw = text.encode() if isinstance(text, str) else text
        assert _typed(loader.load_plain(raw)) == _typed(yaml.load(raw, Loader=yaml.CSafeLoader)), repr(text)
    return "read"


@settings(max_examples=EXAMPLES_PER_STRATEGY * 25, deadline=None)
@given(st.integers(min_value=0, max_value=2**64))
def test_generated_text_is_read_as_pyyaml_reads_it_or_declined(seed):
    # A seed rather than hypothesis's randoms: the generator draws hundreds of numbers a text,
    # and recording each would make a text 20 times as slow. The seed replays it.
    rng = random.Random(seed)
    text = yaml_text(rng)
    check_text(text.encode() if rng.random() < 0.1 else text)


@pytest.mark.parametrize("text, outcome", [
    # A clipped block scalar whose last line ends the stream has no final line break.
    ("a: |\n  x", "read"), ("a: >\n  x\n  y", "read"), ("- |\n  x\n\n  y", "read"), ("--- \n- | # c\n \u00e9", "read"),
    ("x.y/z: > # c\n - x", "read"), (" #\n'': > # c\n x  \n # not a comment", "read"), ("a: |\n  x\n  ", "read"),
    ("a: |\n  x\n# c", "read"), ("a: |-\n  x", "read"),
    # PyYAML looks for a key's `:` no further than 1024 characters from the key's start.
    ("k" * 1024 + ": 1\n", "read"), ("k" * 1025 + ": 1\n", "refused"), ("\u00e9" * 1025 + ": 1\n", "refused"),
    ('"' + "k" * 1022 + '": 1\n', "read"), ('"' + "k" * 1023 + '": 1\n', "refused"),
    ("- " + "k" * 1025 + ": 1\n", "refused"), ("a:\n  " + "k" * 1025 + ":\n", "refused"),
])
def test_what_the_text_generator_found(text, outcome):
    assert check_text(text) == outcome


def test_the_loader_limits_are_above_this_readers():
    """A document this reader declines for its size or depth still reaches PyYAML's reader,
    which is the one that reports documents beyond the loader's limits."""
    assert block_yaml.MAX_DEPTH < source.MAX_DEPTH
    assert block_yaml.MAX_VALUES < source.MAX_VALUES_PER_DOCUMENT
