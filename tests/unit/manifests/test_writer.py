"""The YAML writer: whatever it writes reads back as the same data, in every reader we care about."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_disagg.manifests.writer import format_objects, to_json, to_yaml, to_yaml_stream

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["yes", "no", "on", "off", "y", "n", "~", "null", "1e3", "0x1F", "0o17", "1:20", "-", "- a",
                     "a: b", "#x", "x #y", "&a", "*a", "!t", "%x", "@x", "`x", "'q'", '"q"', "{a}", "[a]",
                     " lead", "trail ", "", "2024-01-01", ".5", "+1", "=", "<<", "multi\nline", "tab\there"]),
)
values = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)), max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(values)
def test_yaml_round_trip(value):
    assert yaml.safe_load(to_yaml(value)) == value


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=8), values, min_size=1, max_size=4), min_size=1, max_size=4))
def test_yaml_stream_round_trip(objects):
    assert list(yaml.safe_load_all(to_yaml_stream(objects))) == objects


def test_kubectl_style_layout():
    text = to_yaml({"spec": {"containers": [{"name": "a", "args": ["x", "z"]}], "empty": {}, "none": []},
                    "apiVersion": "v1"})
    assert text == (
        "apiVersion: v1\n"
        "spec:\n"
        "  containers:\n"
        "  - args:\n"
        "    - x\n"
        "    - z\n"
        "    name: a\n"
        "  empty: {}\n"
        "  none: []\n"
    )


def test_numbers_that_look_like_strings_are_quoted():
    assert to_yaml({"revision": "12345678", "hexish": "1e345678", "word": "on"}) == (
        'hexish: "1e345678"\nrevision: "12345678"\nword: "on"\n')


def test_json_output_is_a_list_for_several_objects():
    assert json.loads(format_objects([{"a": 1}, {"b": 2}], "json"))["kind"] == "List"
    assert json.loads(format_objects([{"a": 1}], "json")) == {"a": 1}
    assert to_json({"b": 1, "a": 2}).index('"a"') < to_json({"b": 1, "a": 2}).index('"b"')


@pytest.mark.parametrize("value", ["a \u2028", "\u2028 b", "a \u2029 b", "x \x85 y"])
def test_unicode_line_separators_are_escaped_not_folded(value):
    """Found by the fuzz campaign: raw U+2028 next to a space was folded away by YAML readers."""
    assert yaml.safe_load(to_yaml({"a": value})) == {"a": value}


def test_write_atomically_keeps_the_mode_and_a_symbolic_link(tmp_path):
    """The one writer of files: a linked file stays linked (the file it names rewritten), its
    mode kept, nothing left beside it."""
    from kubectl_disagg.manifests.writer import write_atomically

    target, link = tmp_path / "real.yaml", tmp_path / "ds.yaml"
    target.write_bytes(b"a: 1\r\n")
    target.chmod(0o640)
    link.symlink_to(target.name)
    write_atomically(str(link), b"a: 2\r\n")
    assert link.is_symlink() and target.read_bytes() == b"a: 2\r\n" and target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds.yaml", "real.yaml"]
