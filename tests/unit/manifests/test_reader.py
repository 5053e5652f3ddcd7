"""Reading manifests: documents, lines, and every kind of hostile input."""

from __future__ import annotations

import pytest

from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.reader import expand_paths, parse_stream, read_documents
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
    assert parse_stream("1: a\ntrue: b\n", "f")[0].data == {"1": "a", "true": "b"}


def test_scalars_follow_yaml_1_1_like_kubernetes():
    data = parse_stream("a: yes\nb: '1'\nc: 1.5\nd: null\ne: 2024-01-01\n", "f")[0].data
    assert data == {"a": True, "b": "1", "c": 1.5, "d": None, "e": "2024-01-01"}


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


def test_merge_keys_explicit_wins():
    data = parse_stream("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n", "f")[0].data
    assert data["other"] == {"x": 1, "y": 3}


def test_directories_expand_sorted_and_recursive(tmp_path):
    (tmp_path / "b.yaml").write_text("kind: B\n")
    (tmp_path / "a.yml").write_text("kind: A\n")
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.json").write_text('{"kind": "C"}')
    assert [p.rsplit("/", 1)[-1] for p in expand_paths([str(tmp_path)])] == ["a.yml", "b.yaml"]
    assert [d.data["kind"] for d in read_documents([str(tmp_path)], recursive=True)] == ["A", "B", "C"]


def test_missing_files_are_all_reported(tmp_path):
    with pytest.raises(UserError) as caught:
        read_documents([str(tmp_path / "nope.yaml"), str(tmp_path / "nada.yaml")])
    assert len(caught.value.problems) == 2


def test_dotted_paths():
    assert dotted(("spec", "roles", 1, "name")) == "spec.roles[1].name"
    assert dotted(()) == ""


@pytest.mark.parametrize("text, expected", [
    ("name: !!bool llama\n", "in.yaml:1: name: cannot read 'llama' as !!bool"),
    ("a:\n  b: !!int many\n", "in.yaml:2: a.b: cannot read 'many' as !!int"),
    ("a: !!float x\n", "in.yaml:1: a: cannot read 'x' as !!float"),
    ("a: .inf\n", "in.yaml:1: a: cannot read '.inf' as !!float"),
    ("a: !!float .nan\n", "in.yaml:1: a: cannot read '.nan' as !!float"),
    ("a: !!null something\n", "in.yaml:1: a: cannot read 'something' as !!null"),
    ("a: !!timestamp soon\n", "in.yaml:1: a: cannot read 'soon' as !!timestamp"),
    ("a: !!binary aGk=\n", "in.yaml:1: a: unsupported YAML tag !!binary"),
    ("a: !!set {x, y}\n", "in.yaml:1: a: unsupported YAML tag !!set"),
    ("a: !!omap [x: 1]\n", "in.yaml:1: a: unsupported YAML tag !!omap"),
    ("a: !!pairs [x: 1]\n", "in.yaml:1: a: unsupported YAML tag !!pairs"),
    ("a: !foo bar\n", "in.yaml:1: a: unsupported YAML tag !foo"),
    ("a: !foo {x: 1}\n", "in.yaml:1: a: unsupported YAML tag !foo"),
    ("a: !!str [1]\n", "in.yaml:1: a: unsupported YAML tag !!str"),
])
def test_tags_a_kubernetes_reader_cannot_read_are_refused(text, expected):
    lines = problems_of(text.encode())
    assert len(lines) == 1 and lines[0].startswith(expected)


def test_core_schema_tags_read_as_kubernetes_reads_them():
    text = ("a: !!bool yes\nb: !!int '12'\nc: !!float 1\nd: !!str 12\ne: !!null ''\n"
            "f: 2001-12-14\ng: !!timestamp 2001-12-14T21:59:43.10-05:00\nh: !!map {x: 1}\ni: !!seq [1]\nj: <<\n")
    assert parse_stream(text, "f")[0].data == {
        "a": True, "b": 12, "c": 1.0, "d": "12", "e": None, "f": "2001-12-14",
        "g": "2001-12-14T21:59:43.10-05:00", "h": {"x": 1}, "i": [1], "j": "<<",
    }


def test_every_bad_tag_of_a_document_is_reported_at_once():
    assert len(problems_of(b"a: !!bool x\nb: !!int y\nc: !x z\n")) == 3


def test_a_control_character_is_one_line_with_its_line_number():
    (line,) = problems_of(b"a: 1\nb: \x00\n")
    assert line.startswith("in.yaml:2: invalid YAML: unacceptable character #x0000") and "\n" not in line
