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

from kubectl_disagg import block_yaml, loader, pyyaml_reader
from kubectl_disagg.output import to_yaml, to_yaml_stream
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

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
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
