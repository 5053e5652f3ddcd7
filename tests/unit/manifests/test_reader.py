"""Reading manifests: documents, lines, and every kind of hostile input."""

from __future__ import annotations

import pytest

from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.source import MAX_DEPTH, dotted


def problems_of(text: str | bytes) -> list[str]:
    with pytest.raises(UserError) as caught:
        parse_stream(text, "in.yaml")
    return caught.value.lines()


def test_several_documents_with_lines():
    docs = parse_stream("a: 1\n---\n# only a comment\n---\nkind: X\nspec:\n  list:\n  - b: 2\n", "f.yaml")
    assert [d.data for d in docs] == [{"a": 1}, {"kind": "X", "spec": {"list": [{"b": 2}]}}]
    assert docs[1].line(("spec", "list", 0, "b")) == 8
    assert docs[1].line(("spec", "list")) == 7
    # A path that does not exist answers with its nearest ancestor's line.
    assert docs[1].line(("spec", "missing", "deeper")) == 6


def test_json_documents_are_read_too():
    docs = parse_stream('{"kind": "X", "spec": {"n": 3}}', "f.json")
    assert docs[0].data == {"kind": "X", "spec": {"n": 3}}


def test_keys_are_strings_as_kubernetes_reads_them():
    # sigs.k8s.io/yaml writes go-yaml's numeric and boolean keys as JSON strings, floats as float32s.
    data = parse_stream("1: a\ny: b\n017: c\n0x1F: d\n.5: e\n1e3: f\n3.14159265358979: g\n", "f")[0].data
    assert data == {"1": "a", "true": "b", "15": "c", "31": "d", "0.5": "e", "1000": "f", "3.1415927": "g"}


def test_keys_kubectl_refuses():
    assert problems_of("~: 1\n") == ["in.yaml:1: unsupported map key of type: %!s(<nil>), key: <nil>: kubectl refuses this key"]
    (line,) = problems_of("18446744073709551615: a\n")
    assert line.startswith("in.yaml:1: unsupported map key of type: uint64")
    (line,) = problems_of("spec:\n  1: a\n  '1': b\n")
    assert line == "in.yaml:3: spec.1: keys '1' (line 2) and '1' both read as '1'"


def test_booleans_and_keys_given_twice():
    # `y` is a boolean to kubectl, so `y:` and `true:` are the same key.
    (line,) = problems_of("true: a\ny: b\n")
    assert line == "in.yaml:2: true: duplicate key 'true' (first at line 1)"


def test_scalars_follow_kubectl():
    data = parse_stream("a: yes\nb: '1'\nc: 1.5\nd: null\ne: 2024-01-01\nf: 1:30\ng: 1e3\nh: 0o17\ni: 08\n"
                        "j: y\nk: N\nl: 1E3\nm: 09\nx: 1.0\no: =\np: <<\n", "f")[0].data
    assert data == {"a": True, "b": "1", "c": 1.5, "d": None, "e": "2024-01-01", "f": "1:30", "g": 1000, "h": 15,
                    "i": 8, "j": True, "k": False, "l": 1000, "m": 9, "x": 1, "o": "=", "p": "<<"}
    assert [type(data[k]) for k in "gix"] == [int, int, int]  # JSON's 1000, as the API server reads it


@pytest.mark.parametrize("digits", [4301, 5000, 100_000])
def test_huge_integers_read_as_kubectl_reads_them(digits):
    """Past float64, go-yaml keeps the text: a string, never a traceback."""
    data = parse_stream(f"a: {'9' * digits}\nb: 0x{'F' * digits}\nc: -{'1' * digits}\n", "f")[0].data
    assert data == {"a": "9" * digits, "b": "0x" + "F" * digits, "c": "-" + "1" * digits}
    assert parse_stream(f"? {'9' * digits}\n: x\n", "f")[0].data == {"9" * digits: "x"}
    assert parse_stream("a: " + "9" * 300 + "\n", "f")[0].data == {"a": float("9" * 300)}


def test_json_numbers_the_api_server_cannot_hold_are_refused():
    assert problems_of('{"a": 1e400}') == ["in.yaml:1: json: number 1e400 is out of range"]
    assert problems_of('{"a": ' + "9" * 5000 + "}") == ["in.yaml:1: json: number " + "9" * 5000 + " is out of range"]


def test_duplicate_keys_are_refused_with_both_lines():
    assert problems_of("spec:\n  slices: 1\n  slices: 2\n") == [
        'in.yaml:3: spec.slices: duplicate key \'slices\' (first at line 2)'
    ]


def test_malformed_yaml_names_the_line():
    lines = problems_of("a: 1\nb: [1, 2\nc: 3\n")
    assert len(lines) == 1 and lines[0].startswith("in.yaml:") and "invalid YAML" in lines[0]


def test_alias_bomb_is_refused_quickly():
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
    prev = "a"
    for name in "bcdefgh":
        bomb += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]\n"
        prev = name
    (line,) = problems_of(bomb)
    assert "alias bomb" in line


def test_deep_nesting_is_refused():
    text = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    (line,) = problems_of(text)
    assert f"nested more than {MAX_DEPTH} levels deep" in line


def test_oversized_input_is_refused():
    (line,) = problems_of(b"a: " + b"x" * (10 * 1024 * 1024 + 1))
    assert "larger than 10 MiB" in line


def test_binary_garbage_is_refused():
    lines = problems_of(b"a: \x80\x81 not utf-8\n")
    assert lines and all(line.startswith("in.yaml") for line in lines)


def test_merge_keys_in_the_order_they_appear():
    # go-yaml merges where `<<` stands: keys after it win, keys before it are overwritten.
    data = parse_stream("base: &b {x: 1, z: 2}\nafter:\n  <<: *b\n  z: 3\nbefore:\n  z: 3\n  <<: *b\n", "f")[0].data
    assert data["after"] == {"x": 1, "z": 3}
    assert data["before"] == {"x": 1, "z": 2}


def test_dotted_paths():
    assert dotted(("spec", "roles", 1, "name")) == "spec.roles[1].name"
    assert dotted(()) == ""


@pytest.mark.parametrize("text, expected", [
    ("name: !!bool llama\n", "in.yaml:1: name: cannot decode !!str `llama` as a !!bool"),
    ("a:\n  b: !!int many\n", "in.yaml:2: a.b: cannot decode !!str `many` as a !!int"),
    ("a: !!float x\n", "in.yaml:1: a: cannot decode !!str `x` as a !!float"),
    ("a: .inf\n", "in.yaml:1: a: .inf is not a number JSON can hold (json: unsupported value: +Inf)"),
    ("a: !!float .nan\n", "in.yaml:1: a: .nan is not a number JSON can hold (json: unsupported value: NaN)"),
    ("a: !!null something\n", "in.yaml:1: a: cannot decode !!str `something` as a !!null"),
    ("a: !!timestamp soon\n", "in.yaml:1: a: cannot decode !!str `soon` as a !!timestamp"),
    ("a: !!binary aGk\n", "in.yaml:1: a: !!binary value contains invalid base64 data"),
    ("a: &x [*x]\n", "in.yaml:1: a[0][0]: anchor 'x' value contains itself"),
    ("a: *x\n", "in.yaml:1: unknown anchor 'x' referenced"),
    ("a: {<<: 1}\n", "in.yaml:1: a: map merge requires map or sequence of maps as the value"),
    ("a: [12:30, 7:]\nb: \"\\/\"\n", "in.yaml:2: invalid YAML: while parsing a quoted scalar found unknown escape"),
    ("--- a: 1\n", "in.yaml:1: invalid YAML: invalid document separator: a: 1"),
    # `!,]` is one tag to go-yaml, and the sequence never ends
    ("a: [!,]\n", "in.yaml:2: invalid YAML: while parsing a flow sequence did not find expected ',' or ']' "
                  "(kubectl reads a `,`, `[` or `]` right after a tag as part of the tag)"),
])
def test_what_kubectl_refuses_is_refused(text, expected):
    lines = problems_of(text.encode())
    assert len(lines) == 1 and lines[0].startswith(expected), lines


def test_tags_read_as_kubectl_reads_them():
    text = ("a: !!bool yes\nb: !!int '12'\nc: !!float 1\nd: !!str 12\ne: !!null ''\n"
            "f: 2001-12-14\ng: !!timestamp 2001-12-14T21:59:43.10-05:00\nh: !!map {x: 1}\ni: !!seq [1]\nj: <<\n"
            "k: !!binary aGk=\nl: !foo bar\nm: !!set {x, y}\nr: !!str [1]\no: ! 12\n"
            'q: "it\\\'s"\n')
    assert parse_stream(text, "f")[0].data == {
        "a": True, "b": 12, "c": 1, "d": "12", "e": None, "f": "2001-12-14",
        "g": "2001-12-14T21:59:43.10-05:00", "h": {"x": 1}, "i": [1], "j": "<<",
        "k": "hi", "l": "bar", "m": {"x": None, "true": None}, "r": [1], "o": "12", "q": "it's",
    }


def test_every_problem_of_a_document_is_reported_at_once():
    assert len(problems_of(b"a: !!bool x\nb: !!int y\nc: .inf\n")) == 3


def test_lines_of_a_stream_split_as_kubectl_splits_it():
    docs = parse_stream("# lead\n---\n---\nkind: A\nspec:\n  roles:\n  - name: p\n    size: 2\n  -\n    name: d\n", "f")
    (doc,) = docs
    assert doc.data == {"kind": "A", "spec": {"roles": [{"name": "p", "size": 2}, {"name": "d"}]}}
    assert doc.line(()) == 4 and doc.line(("spec", "roles", 0)) == 7 and doc.line(("spec", "roles", 1)) == 10
    assert doc.line(("spec", "roles", 0, "size")) == 8


def test_load_plain_reads_the_first_document_as_client_go_does():
    from kubectl_disagg.manifests.reader import load_plain

    assert load_plain(b"a: 1\n---\nb: 2\n") == {"a": 1}
    assert load_plain(b"") is None
    assert load_plain(b"a: y\nb: 0x1F\n") == {"a": True, "b": 31}
    with pytest.raises(ValueError, match="invalid YAML"):
        load_plain(b"a: b: c\n")


def test_a_control_character_is_one_line_with_its_line_number():
    (line,) = problems_of(b"a: 1\nb: \x00\n")
    assert line.startswith("in.yaml:2: invalid YAML: unacceptable character #x0000") and "\n" not in line


def test_an_unpaired_surrogate_in_json_is_what_the_api_server_stores():
    # kubectl sends a JSON file as it is; Go's decoder on the server reads `\ud800` as U+FFFD.
    assert parse_stream(b'{"a": "x\\ud800y\\ud83d\\ude00"}', "f")[0].data == {"a": "x\ufffdy\U0001F600"}


LIST = """\
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a}
- apiVersion: v1
  kind: Secret
  metadata:
    name: inner
---
apiVersion: example.com/v1
kind: WidgetList
items:
- metadata: {name: w}
  spec: {size: 3}
- apiVersion: v1
  kind: ConfigMap
"""


def test_a_list_stands_for_its_items_as_kubectl_flattens_it():
    """A DisaggregatedSet inside a `kind: List` was never seen (validate: "no DisaggregatedSet found");
    tests/integration/test_render_apply.py reads the same lists with kubectl."""
    docs = parse_stream(LIST, "l.yaml")
    assert [(d.data.get("apiVersion"), d.data["kind"]) for d in docs] == [
        ("v1", "ConfigMap"), ("v1", "Secret"), ("example.com/v1", "Widget"), ("v1", "ConfigMap")]
    assert docs[2].data == {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                            "spec": {"size": 3}}  # kind and apiVersion from the list, as decodeToList does
    assert docs[1].line(("metadata", "name")) == 11 and docs[0].line(()) == 5
    assert docs[2].line(("spec", "size")) == 17 and docs[2].line(("kind",)) == 16


@pytest.mark.parametrize("text, expected", [
    ("kind: List\napiVersion: v1\nitems: 3\n", ["in.yaml:3: items: must be a list of objects"]),
    ("kind: List\napiVersion: v1\nitems:\n- a\n- kind: X\n", ["in.yaml:4: items[0]: must be an object"]),
    ("kind: List\napiVersion: v1\nitems:\n- kind: List\n  apiVersion: v1\n  items: []\n",
     ["in.yaml:4: items[0]: a list inside a list, which kubectl does not read: put its items in the outer list"]),
    ("kind: List\napiVersion: v1\nitems:\n- metadata: {name: x}\n",
     ["in.yaml:4: items[0]: kind not set: each item of a List names its apiVersion and kind"]),
])
def test_a_list_whose_items_are_not_objects_is_refused(text, expected):
    assert problems_of(text) == expected


def test_an_empty_list_is_no_document_and_items_without_a_kind_are_data():
    assert parse_stream("kind: List\napiVersion: v1\nitems: null\n", "l.yaml") == []
    assert [d.data for d in parse_stream("items: [1]\n", "l.yaml")] == [{"items": [1]}]


@pytest.mark.parametrize("codec, bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_a_utf16_file_with_a_byte_order_mark_reads_as_kubectl_reads_it(codec, bom):
    """kubectl decodes a file through unicode.BOMOverride (cli-runtime's FileVisitor): a
    UTF-16 byte order mark makes it UTF-16, every line where it is in UTF-8."""
    text = "# é\nkind: ConfigMap\nmetadata:\n  name: café\n---\ndata: {a: b}\n"
    assert parse_stream(bom + text.replace("\n", "\r\n").encode(codec), "f") == parse_stream(text.encode(), "f")


def test_each_value_that_comes_through_an_alias_names_it_and_its_anchor():
    """(the anchor's name, the alias's line, the anchor's line), at the outermost alias; a key
    given after a merge is the mapping's own."""
    (document,) = parse_stream("a: &x\n  k: {m: 1}\nb: *x\nc:\n  <<: *x\n  j: 2\nd:\n  <<: *x\n  k: 3\n"
                               "e: [*x]\n", "f")
    assert document.aliases == {("b",): ("x", 3, 1), ("c", "k"): ("x", 5, 1), ("e", 0): ("x", 10, 1)}
    assert document.alias(("b", "k", "m")) == ("b",) and document.alias(("d", "k")) is None


def test_bytes_that_are_not_utf8_are_named_at_their_line():
    """A Latin-1 `é` read as "unacceptable character #x000a: control characters are not allowed"."""
    assert problems_of(b"a: 1\n# caf\xe9\nb: 2\n") == [
        "in.yaml:2: not UTF-8 (byte 0xE9), nor UTF-16 with a byte order mark: kubectl would read this byte as "
        "U+FFFD; save the file as UTF-8"]
    assert problems_of(b"a: 1\n---\nb: caf\xe9\n")[0].startswith("in.yaml:3: not UTF-8 (byte 0xE9)")
