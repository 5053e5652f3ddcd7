"""Our YAML reader against kubectl's own reading (hack/yaml: apimachinery + sigs.k8s.io/yaml).

Every text here goes to both, and any difference fails: where kubectl reads documents we read
the same documents, value for value and type for type (True is not 1); where kubectl refuses a
text we refuse it. We may refuse more only for our declared reasons (a key given twice, keys
that read alike, a byte order mark inside a document, absurd depth or size). The texts: every YAML and JSON file in the repository,
what the writer writes of rendered sets and of generated data, a corpus of the scalars and
keys where YAML readers disagree, and generated texts (a grammar of YAML text, and mutations of
valid files).
"""

from __future__ import annotations

import os
import random
import subprocess

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_disagg.manifests import yaml_reader
from kubectl_disagg.manifests.writer import to_yaml, to_yaml_stream
from tests.oracles.yaml_oracle import Refused, as_read, kubectl_reads, typed
from tests.support.paths import EXAMPLES, GOLDEN, REPO
from tests.support.yaml_texts import SEEDS, mutate, yaml_text

EXAMPLES_PER_STRATEGY = int(os.environ.get("KUBECTL_DISAGG_FUZZ_EXAMPLES", "40"))
# The default run is the same every time (a random find must not fail CI); `make fuzz`, which sets
# KUBECTL_DISAGG_FUZZ_EXAMPLES, explores anew on every run. Finds go in the corpus, not a database.
EXPLORING = "KUBECTL_DISAGG_FUZZ_EXAMPLES" in os.environ
GENERATED = {"deadline": None, "derandomize": not EXPLORING, "database": None}
# Ours alone: kubectl keeps the last of a key given twice (or, for `1` and "1", either one).
# And a document that starts with an empty flow sequence followed by more on its line (`[]: a`,
# `[]0: a`, `[ ] x: y`): go-yaml reads it as `[]` and ignores the rest (elsewhere it refuses the
# same text, and it never takes a collection for a key).
OUR_REFUSALS = ("duplicate key", "both read as", "levels deep", "values (a YAML alias bomb?)", "byte order mark",
                "too many to read", "mapping keys must be scalars", "starts with an empty list `[]`")


def ours(text: str | bytes) -> list | Refused:
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    documents, problems = yaml_reader.read(raw, "f.yaml")
    if problems:
        return Refused("; ".join(str(problem) for problem in problems))
    return [data for _, data, *_ in documents]


def differences(texts: list[str | bytes]) -> list[str]:
    """Every text where our reading is not kubectl's, described."""
    found = []
    for text, theirs in zip(texts, kubectl_reads(texts)):
        mine = ours(text)
        if isinstance(theirs, Refused):
            if not isinstance(mine, Refused):
                found.append(f"{text!r}: kubectl refuses ({theirs.message}), we read {typed(mine)}")
        elif isinstance(mine, Refused):
            if not all(any(reason in part for reason in OUR_REFUSALS) for part in mine.message.split("; ")):
                found.append(f"{text!r}: kubectl reads {typed(theirs)}, we refuse ({mine.message})")
        elif typed(mine) != typed(theirs):
            found.append(f"{text!r}: kubectl reads {typed(theirs)}, we read {typed(mine)}")
    return found


def assert_same(texts: list[str | bytes]) -> None:
    found = differences(texts)
    assert not found, f"{len(found)} of {len(texts)} texts read differently:\n" + "\n".join(found[:30])


# -- the repository's files -----------------------------------------------------------------

def repository_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z", "*.yaml", "*.yml", "*.json"], cwd=REPO,
                            capture_output=True, check=True).stdout.split(b"\0")
    return sorted(name.decode() for name in listed if name)


def test_every_yaml_and_json_file_of_the_repository():
    files = repository_files()
    assert len(files) > 30 and any(name.startswith("examples/") for name in files)
    assert_same([(REPO / name).read_bytes() for name in files])


# -- what we write reads back, through kubectl, as what we meant -----------------------------

def rendered_examples() -> list[list[dict]]:
    from kubectl_disagg.core.controller.render import render_set
    from tests.support.paths import load_sets

    return [[obj for ds in load_sets([str(path)]).sets for obj in render_set(ds)]
            for path in sorted(EXAMPLES.glob("*.yaml"))]


def test_what_the_writer_writes_of_every_golden_and_rendered_file():
    golden = sorted((GOLDEN).glob("*.yaml")) + sorted(EXAMPLES.glob("*.yaml"))
    streams = [[data for _, data, *_ in yaml_reader.read(path.read_bytes(), str(path))[0]] for path in golden]
    streams += rendered_examples()
    texts = [to_yaml_stream(objects) for objects in streams]
    for objects, theirs in zip(streams, kubectl_reads(texts)):
        assert typed(theirs) == typed(as_read(objects))
    assert_same(texts)


WORDS = st.one_of(
    st.text(max_size=12),
    st.text(alphabet="0123456789_.:+-eExXbBoOaAfFiInNtTZz ~<=yYsSlLuU", max_size=10),
    st.sampled_from(["yes", "no", "on", "off", "y", "n", "Y", "N", "~", "null", "1e3", "1E3", "0x1F", "0o17", "08",
                     "09", "1:20", "1:0", "12:30", "-", "- a", "a: b", "#x", "x #y", "&a", "*a", "!t", "%x", "@x",
                     "`x", "'q'", '"q"', "{a}", "[a]", " lead", "trail ", "", "2024-01-01", ".5", "+1", "=", "<<",
                     ".inf", "-.Inf", ".nan", "multi\nline", "tab\there", "\u2028", "\x85", "\ufeffx"]),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**64 - 1),  # what Go holds
                    st.floats(allow_nan=False, allow_infinity=False), WORDS)
values = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(WORDS, children, max_size=4)), max_leaves=20)


@settings(max_examples=max(1, EXAMPLES_PER_STRATEGY // 8), **GENERATED,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(values, min_size=20, max_size=20))
def test_what_the_writer_writes_of_generated_data(batch):
    texts = [to_yaml(value) for value in batch]
    for value, theirs, text in zip(batch, kubectl_reads(texts), texts):
        expected = [] if value is None else [as_read(value)]
        assert typed(theirs) == typed(expected), text
    assert_same(texts)


# -- scalars and keys where YAML readers part ways -------------------------------------------

TRICKY = [
    # base 60, octal, hexadecimal, binary, exponents, underscores
    "1:0", "1:30", "12:30", "-1:20", "190:20:30.15", "1:60", "017", "0o17", "0O17", "0x1F", "0X1f", "0b101", "-0b101",
    "08", "09", "0_8", "09.5", "00", "0", "-0", "+0", "-0.0", "0x", "0o", "0b", "0x_1F", "+0x1F", "-0o17", "1_000",
    "1__0", "_1", "-_1", "+_", "1_", "1e3", "1E3", "1e+3", "1.0e-3", "1e3_0", "1_e3", "1.", ".5", "+.5", "-.5", "._5",
    ".5_", ".5_5", "1_000.5", "0x1p3", "1e-400", ".5e-400", "1e400", "1e21", "1e20", "123456789.0",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "+9223372036854775808", "18446744073709551615", "18446744073709551616", "9" * 400, "9" * 5000,
    "0x" + "F" * 5000, "0b" + "1" * 70, "0o" + "7" * 30, "-" + "9" * 4400, "1" + "0" * 4300 + ".5",
    # booleans and nulls of YAML 1.1, and words that are not
    "y", "Y", "n", "N", "yes", "Yes", "YES", "yEs", "no", "on", "On", "ON", "off", "Off", "true", "True", "TRUE",
    "tRUE", "false", "~", "null", "Null", "NULL", "nULL", "nul",
    # special floats, merge, value, timestamps
    ".inf", ".Inf", ".INF", "+.inf", "-.inf", ".iNf", ".nan", ".NaN", ".NAN", "inf", "Infinity", "nan", "<<", "=",
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2001-1-1", "2001-13-01",
    "2001-02-29", "2000-02-29", "2001-12-14T21:59:43Z", "2001-12-14 21:59:43,10",
    # ordinary Kubernetes values
    "10Gi", "500m", "1.5Gi", "v1", "0.0.0.0", "127.0.0.1:6443", "-", "+", ".", "a b", "\u00e9t\u00e9", ".\u0665",
]
CONTEXTS = ["a: {}\n", "{}: a\n", "- {}\n", "a: [{}]\n", "{{{}: 1}}\n", "a: '{}'\n", 'a: "{}"\n', "a: !!str {}\n",
            "a: !!int {}\n", "a: !!float {}\n", "a: !!bool {}\n", "a: !!null {}\n", "a: !!timestamp {}\n", "a: ! {}\n",
            "'{}': a\n", "!!str {}: a\n", "? {}\n: a\n"]

DOCUMENTS = [
    # mapping keys: numeric, boolean and null keys, and keys that read alike
    "017: a\n0x1F: b\n.5: c\n1e3: d\n1e7: e\n3.14159265358979: f\n1.0: g\n-0.0: h\n1e40: i\n", "~: 1\n", "null: 1\n",
    "? \n: 1\n", "y: a\nn: b\n", "true: a\nyes: b\n", "1: a\n'1': b\n", "1: a\n0x1: b\n", "1: a\n1.0: b\n",
    ".nan: a\n.nan: b\n", "18446744073709551615: a\n", "9223372036854775807: a\n", "? [a]\n: b\n", "? {a: 1}\n: b\n",
    "2001-12-14: a\n", "<<: 1\n", "'<<': {a: 1}\n", "=: a\n", "a: 1\na: 2\n",
    # anchors, aliases, merge keys
    "a: &x 1\nb: *x\n", "a: *x\n", "a: &x [*x]\n", "a: &x 1\na2: &x 2\nb: *x\n", "&x a: *x\n",
    "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n", "base: &b {x: 1, y: 2}\nother:\n  y: 3\n  <<: *b\n",
    "a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc:\n  <<: [*a, *b]\n", "a: {<<: {x: 1}, x: 2}\n", "a: {x: 2, <<: {x: 1}}\n",
    "a: {<<: [{x: 1}, {x: 2}]}\n", "a: {<<: 1}\n", "a: {<<: [1]}\n", "a: {<<: ~}\n", "a: &s x\nb: {<<: *s}\n",
    "a: &l [1]\nb: {<<: *l}\n", "a: {! <<: {x: 1}}\n", "a: {!!merge <<: {x: 1}}\n", "a: {'<<': {x: 1}}\n",
    "a: &m {<<: {x: 1}, y: 2}\nb: {<<: *m}\n", "a: &a {b: *a}\n",
    # tags
    "a: !!binary aGk=\n", "a: !!binary aGk\n", "a: !!binary |\n  aGk=\n", "a: !!binary /w==\n", "a: !!binary 7aCA\n",
    "a: !foo bar\n", "a: !foo {x: 1}\n", "a: !!set {x, y}\n", "a: !!omap [x: 1]\n", "a: !!str [1]\n",
    "a: !!map [1]\n", "a: !<tag:yaml.org,2002:int> '7'\n", "%TAG !e! tag:yaml.org,2002:\n---\na: !e!int '7'\n",
    "a: !!python/none x\n", "a: !!merge x\n", "a: !!value x\n",
    # quoted, block and flow scalars
    "a: 'it''s'\nb: \"\\u00e9\\x41\\/\\t\"\nc: \"\\N\\_\\L\\P\"\n", "a: |\n  x\n  y\n", "a: >-\n  x\n\n  y\n   z\n",
    "a: |+\n  x\n\n", "a: |2\n   x\n", "a: |\n  x", "a: >\n  x\n  y", "- |\n  x\n\n  y", "a: [1, [2, {b: c}], {}]\n",
    "{a: 1, b: [x, y]}\n", "[1, 2]\n", "a: {b: 1, c}\n", "a: [b: 1]\n", "a: [a:b, 'c']\n", "a: {x:1}\n", "a: [x:1]\n",
    # documents and streams
    "", "\n", "# only a comment\n", "---\n", "--- # c\na: 1\n", "a: 1\n---\nb: 2\n", "a: 1\n---\n\n---\nb: 2\n",
    "--- a\n", "---a\n", "----\na: 1\n", "a: 1\n...\n", "a: 1\n...\nb: ]\n", "a: 1\n--- |\n  x\n",
    "%YAML 1.1\n---\na: 1\n", "~\n", "null\n", "x\n", "1\n", "- 1\n- 2\n", "a: 1\r\nb: 2\r\n", "\ufeffa: 1\n",
    "\ufeffa: [7:]\n", "\ufeffa: \"\\'\"\n", "\ufeffa: \"\\/\"\n", "\ufeffa: !x,\n",  # LibYAML's marks do not count the BOM
    '{"a": 1e3, "b": [1.0, -0, 12345678901234567890.5], "c": null}\n', '{"a": 1}\n{"b": 2}\n', '{"a": 1}\n---\nb: 2\n', "{}: a\n", '{"a": 1}\n: b\n',
    "a: b\u2028c\n", "a: \u0085\n", "a:\tb\n", "a: b\n\tc: d\n", "[]: a\n", "x:\n  []: b\n", "- []: b\n",
    "a: 1\n...\n\x7f\n", "a: 1\n...\n" + "x\n" * 3000 + "\x7f", "a: 1\n... # c\n# c\n\n", "a: |\n  x\n...\n",
    *("a: 1\n...\n" + "x" * n + "\x7f\n" for n in (400, 500, 505, 510, 1000, 1020, 1030, 5000)),
    *("a: " + "\u00e9" * n + "\n...\n" + "x" * 600 + "\x7f\n" for n in (250, 251, 252, 253)),
    "x\n- a\n" + "b\n" * 300 + "\x7f\n",
]


# A tag directly followed by a flow indicator: go-yaml takes `,[]` into the tag (`[!,]` is a tag
# `!,]` in a sequence never closed), LibYAML ends the tag at a `,` in a flow collection and
# refuses `[]` or a block `,` there; `}` ends the tag for neither, and both refuse it.
TAG_PROPERTIES = ["!", "!!", "!x", "!!str", "!x!", "!<x>", "&a !x", "!x &a", "!x,y"]
AFTER_A_TAG = [",", "]", "}", "[", ",,", ",]", ",}", "]]", ",b", ",@", ",'", ",#", ",:", ", b", ",\n  b", "%2C"]
TAG_CONTEXTS = ["a: @\n", "- @\n", "@: a\n", "? @\n", "a: [@]\n", "a: [@] ]\n", "a: [@ ]\n", "a: [@, b]\n",
                "a: [@, b]]\n", "[@]\n", "[@] ]\n", "a: {@: 1}\n", "a: {k: @}\n", "a: {k: @} }\n", "a: {@}\n",
                "a: [k: @]\n", "- [@] ]\n", "[@]: 1\n", "a: [[@]]\n", "a: {k: [@]}\n", "\ufeffa: [@]\n", "\ufeffa: @\n"]


def test_a_tag_followed_by_a_flow_indicator():
    texts = [context.replace("@", tag + after) for tag in TAG_PROPERTIES for after in AFTER_A_TAG
             for context in TAG_CONTEXTS]
    texts.append("a: [" + "".join(f"!x{',' * n}] " for n in range(1, 120)) + "]\n")
    assert_same(texts)


def test_tricky_scalars_in_every_context():
    assert_same([context.replace("{}", scalar) for scalar in TRICKY for context in CONTEXTS])


def test_tricky_documents():
    assert_same(DOCUMENTS)


def test_a_document_that_starts_with_an_empty_list_then_more_on_its_line():
    # Found by test_generated_scalars_in_every_context: `[]0: a` in the context `{}: a`. kubectl
    # reads `[]` and ignores the rest; we refuse it, saying so (ours), as we refuse `[]: a`.
    texts = ["[]0: a: a\n", "[]0: a\n", "[ ]0: a\n", " []0: a\n", "[] 0: a\nb: c\n", "[]a: b: c\n",
             "x: 1\n---\n[]0: a\n", "# c\n[]0: a\n", "[]: a: b\n", "[]0: a\n---\nb: 1\n"]
    assert_same(texts)
    for text in texts:
        assert isinstance(ours(text), Refused) and "starts with an empty list `[]`" in ours(text).message, text
    # Where kubectl refuses, or reads the same, nothing changes.
    assert_same(["[1]0: a\n", "[[]]0: a\n", "&x []0: a\n", "!!seq []0: a\n", "[]x\n", "[]\n", "a: []0: a\n"])


def test_bytes_that_are_not_utf8():
    assert_same([b"a: \x80\x81\n", b"a: '\xff'\n", b"\xff\xfea\x00:\x00 \x001\x00\n\x00", b"a: b\x00\n", b"\xef\xbb\xbfa: 1\n",
                 "a: 1\n---\n\ufeffb: 2\n", "a: 1\n\ufeffb: 2\n", "- x\n\ufeff  - y\n", "--- \n\ufeff  - |- # c\n"])


def test_an_alias_bomb_is_refused_as_kubectl_refuses_it():
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
    previous = "a"
    for name in "bcdefgh":
        bomb += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 10) + "]\n"
        previous = name
    (theirs,) = kubectl_reads([bomb])
    assert isinstance(theirs, Refused) and "excessive aliasing" in theirs.message
    assert isinstance(ours(bomb), Refused)
    # Aliases short of a bomb are read, as kubectl reads them.
    assert_same(["a: &a [" + ",".join(["x"] * 50) + "]\n" + "".join(f"b{i}: *a\n" for i in range(n))
                 for n in (5, 19, 20, 21, 40, 200)])


# -- generated texts --------------------------------------------------------------------------

@settings(max_examples=max(1, EXAMPLES_PER_STRATEGY // 4), **GENERATED, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=0, max_value=2**64), min_size=200, max_size=200))
def test_generated_text(seeds):
    # Seeds rather than hypothesis's randoms: a text draws hundreds of numbers; the seed replays it.
    texts = []
    for seed in seeds:
        rng = random.Random(seed)
        text = yaml_text(rng)
        texts.append(text.encode() if rng.random() < 0.1 else text)
    assert_same(texts)


@settings(max_examples=max(1, EXAMPLES_PER_STRATEGY // 4), **GENERATED, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=0, max_value=2**64), min_size=200, max_size=200))
def test_mutated_files(seeds):
    texts = []
    for seed in seeds:
        rng = random.Random(seed)
        texts.append(mutate(rng.choice(SEEDS), rng))
    assert_same(texts)


@settings(max_examples=max(1, EXAMPLES_PER_STRATEGY // 4), **GENERATED, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.text(alphabet="0123456789_.:+-eExXbBoO aAfFiInNtTyYsSlLuU~<=!&*'\"[]{},#|>\\", max_size=12),
                          st.sampled_from(CONTEXTS)), min_size=200, max_size=200))
def test_generated_scalars_in_every_context(pairs):
    assert_same([context.replace("{}", scalar) for scalar, context in pairs])
