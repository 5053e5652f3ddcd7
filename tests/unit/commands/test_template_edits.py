"""`set image` and `rollout restart` on -f files: rewritten in place, or not at all."""

from __future__ import annotations

import yaml

from kubectl_disagg.core.sets import load_sets
from kubectl_disagg.manifests.reader import parse_stream
from tests.support.cli import run
from tests.support.paths import EXAMPLES

EXAMPLE = (EXAMPLES / "encode-prefill-decode.yaml").read_text()


def revision(path) -> str:
    return load_sets(parse_stream(path.read_text(), str(path)))[0].revision


def test_set_image_rewrites_the_file_and_changes_the_revision(tmp_path, capsys):
    path = tmp_path / "ds.yaml"
    path.write_text(EXAMPLE)
    before = revision(path)
    code, out, err = run(["set", "image", "-f", str(path), "decode=reg/llm:2"], capsys)
    assert (code, out, err) == (0, "disaggregatedset/qwen-vl image updated\n", "")
    changed = [(a, b) for a, b in zip(EXAMPLE.split("\n"), path.read_text().split("\n"), strict=True) if a != b]
    assert changed == [("              image: registry.example.com/qwen-vl-server:1.4.2",
                        "              image: reg/llm:2")]
    assert revision(path) != before


def test_problems_in_any_file_leave_every_file_unwritten(tmp_path, capsys):
    good, bad = tmp_path / "a.yaml", tmp_path / "b.yaml"
    good.write_text(EXAMPLE)
    bad.write_text(EXAMPLE.replace("name: qwen-vl", "name: other").replace("- name: decode", "- name: dec"))
    code, out, err = run(["set", "image", "-f", str(good), "-f", str(bad), "decode=x:2", "encode/nope=y:1"], capsys)
    assert code == 1 and out == ""
    assert err.splitlines() == [
        f"{good}:9: spec.roles[0]: role 'encode' has no container 'nope'",
        f"{bad}:8: spec.roles: no role named 'decode' (roles: encode, prefill, dec)",
        f"{bad}:9: spec.roles[0]: role 'encode' has no container 'nope'",
    ]
    assert good.read_text() == EXAMPLE and "name: dec\n" in bad.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "b.yaml"]  # no temporary file left


def test_dry_run_prints_the_result_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "ds.yaml"
    path.write_text(EXAMPLE)
    code, out, _ = run(["rollout", "restart", "-f", str(path), "--role", "decode", "--dry-run", "-o", "yaml"], capsys)
    assert code == 0 and path.read_text() == EXAMPLE
    decode = yaml.safe_load(out)["spec"]["roles"][2]["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert list(decode["metadata"]["annotations"]) == ["kubectl.kubernetes.io/restartedAt"]


def test_restart_of_one_role_is_a_new_revision_in_place(tmp_path, capsys):
    path = tmp_path / "ds.yaml"
    path.write_text(EXAMPLE)
    before = revision(path)
    code, out, _ = run(["rollout", "restart", "-f", str(path), "--role", "decode"], capsys)
    assert (code, out) == (0, "disaggregatedset/qwen-vl restarted\n")
    assert revision(path) != before
    assert path.read_text().count("kubectl.kubernetes.io/restartedAt") == 1


def test_usage_errors(tmp_path, capsys):
    path = tmp_path / "ds.yaml"
    path.write_text(EXAMPLE)
    assert run(["set", "image", "-f", str(path)], capsys)[0] == 2
    assert run(["set", "image", "-f", str(path), "decode"], capsys)[0] == 2
    assert run(["set", "image", "-f", str(path), "decode=x", "--dry-run=server"], capsys)[0] == 2
    assert run(["rollout", "restart"], capsys)[0] == 2
    assert path.read_text() == EXAMPLE


def test_output_name_prints_the_names_alone_as_kubectl_does(tmp_path, capsys):
    path = tmp_path / "ds.yaml"
    path.write_text(EXAMPLE)
    assert run(["set", "image", "-f", str(path), "decode=x:2", "-o", "name"], capsys)[:2] == (
        0, "disaggregatedset/qwen-vl\n")


def test_stdin_is_refused_unless_a_dry_run(capsys, monkeypatch):
    code, out, err = run(["set", "image", "-f", "-", "decode=x:2"], capsys, stdin=EXAMPLE, monkeypatch=monkeypatch)
    assert (code, out) == (1, "") and "stdin cannot be rewritten in place" in err
    code, out, _ = run(["set", "image", "-f", "-", "decode=x:2", "--dry-run", "-o", "yaml"], capsys, stdin=EXAMPLE,
                       monkeypatch=monkeypatch)
    assert code == 0 and "image: x:2" in out
