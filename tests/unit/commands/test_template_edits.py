"""`set image` and `rollout restart` on -f files: rewritten in place, or not at all."""

from __future__ import annotations

import pytest
import yaml

from kubectl_disagg.core.delivery.sets import load_sets
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
    assert (code, out) == (0, "disaggregatedset/qwen-vl restarted: decode's pod templates annotated, a new revision; "
                              "its rollout replaces the groups of every role (encode, prefill, decode), not only "
                              "decode's\n")
    assert revision(path) != before
    assert path.read_text().count("kubectl.kubernetes.io/restartedAt") == 1
    code, out, _ = run(["rollout", "restart", "-f", str(path)], capsys)
    assert (code, out) == (0, "disaggregatedset/qwen-vl restarted: every role's pod templates annotated, a new "
                              "revision; its rollout replaces the groups of every role (encode, prefill, decode)\n")


def test_restart_help_says_every_roles_groups_are_replaced(capsys):
    """Issue 47: "Restart this role only" was false: the set's revision covers every role, so
    any template change replaces every role's groups, as the upstream controller's does."""
    code, out, _ = run(["rollout", "restart", "--help"], capsys)
    text = " ".join(out.split())
    assert code == 0 and "this role only" not in text
    reference = " ".join((EXAMPLES.parent / "docs" / "reference" / "cli" / "set-image.md").read_text().split())
    assert "replacing the groups of every role, not only of the roles whose image changed" in reference
    assert "--role ROLE Annotate this role's pod templates (repeatable; default every role): the set's revision " \
           "covers every role, so the rollout replaces every role's groups all the same." in text


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


EDITS = {"set image": ["set", "image", "decode=reg/llm:2"],
         "rollout restart": ["rollout", "restart", "--role", "decode"]}
ENCODINGS = {"UTF-8": ("utf-8", b""), "UTF-8 with BOM": ("utf-8", b"\xef\xbb\xbf"),
             "UTF-16LE": ("utf-16-le", b"\xff\xfe"), "UTF-16BE": ("utf-16-be", b"\xfe\xff")}


@pytest.mark.parametrize("edit", sorted(EDITS))
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_an_edit_keeps_the_files_encoding_line_endings_and_mode(tmp_path, capsys, edit, encoding, ending):
    """A CRLF file lost the `\\r` of each rewritten line (`set image`) or was refused as "a flow
    mapping" (`rollout restart`); a UTF-16 file was a traceback. kubectl reads a file with a
    byte order mark in its encoding (cli-runtime's FileVisitor): the edit writes it back so."""
    codec, bom = ENCODINGS[encoding]
    path = tmp_path / "ds.yaml"
    path.write_bytes(bom + EXAMPLE.replace("\n", ending).encode(codec))
    path.chmod(0o640)
    code, out, err = run([*EDITS[edit][:2], "-f", str(path), *EDITS[edit][2:]], capsys)
    assert (code, err) == (0, "")
    data = path.read_bytes()
    assert data.startswith(bom) and not (bom and data[len(bom):].startswith(bom))
    text = data[len(bom):].decode(codec)
    lines = text.split("\n")
    assert all(line.endswith("\r") for line in lines[:-1]) if ending == "\r\n" else "\r" not in text
    assert lines[-1] == "" and path.stat().st_mode & 0o777 == 0o640
    (document,) = [d for d in parse_stream(data, str(path)) if d.data["kind"] == "DisaggregatedSet"]
    decode = document.data["spec"]["roles"][2]["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert decode["spec"]["containers"][0]["image"] == "reg/llm:2" if edit == "set image" else \
        "kubectl.kubernetes.io/restartedAt" in decode["metadata"]["annotations"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds.yaml"]


def test_a_file_that_is_not_utf8_is_refused_at_the_line_of_its_first_bad_byte(tmp_path, capsys):
    """A Latin-1 file was a traceback (UnicodeDecodeError). kubectl would read its `é` as
    U+FFFD: the rewrite would change it, so the file is refused, naming the line and the cause."""
    path = tmp_path / "ds.yaml"
    latin = EXAMPLE.replace("\n", "\n# owned by the équipe plateforme\n", 3).encode("latin-1")
    path.write_bytes(latin)
    code, out, err = run(["set", "image", "-f", str(path), "decode=reg/llm:2"], capsys)
    line = latin[:latin.index(b"\xe9")].count(b"\n") + 1
    assert (code, out) == (1, "")
    assert err.splitlines() == [f"{path}:{line}: not UTF-8 (byte 0xE9), nor UTF-16 with a byte order mark: "
                                "kubectl would read this byte as U+FFFD; save the file as UTF-8"]
    assert path.read_bytes() == latin


SHARED = """\
apiVersion: disaggregatedset.x-k8s.io/v1
kind: DisaggregatedSet
metadata:
  name: llm
spec:
  roles:
  - name: prefill
    spec:
      replicas: 1
      leaderWorkerTemplate: &server  # one template for both roles
        workerTemplate:
          spec:
            containers:
            - name: worker
              image: reg/llm:1
  - name: decode
    spec:
      replicas: 1
      leaderWorkerTemplate: *server
"""


@pytest.mark.parametrize("text, line", [(SHARED, 19), (SHARED.replace(
    "      leaderWorkerTemplate: *server\n", "      leaderWorkerTemplate:\n        size: 1\n        <<: *server\n"), 21)],
    ids=["alias", "merge"])
def test_an_edit_under_an_alias_names_it_and_an_edit_of_every_sharer_keeps_it(tmp_path, capsys, text, line):
    """Roles sharing a template through an alias were refused as "a flow mapping or a value over
    several lines": the refusal names the alias, its line and its anchor's. Giving every role
    sharing it the same change edits the anchor once, and the alias stays."""
    path = tmp_path / "ds.yaml"
    path.write_text(text)
    code, out, err = run(["set", "image", "-f", str(path), "decode=reg/llm:2"], capsys)
    assert (code, out) == (1, "") and path.read_text() == text
    assert err.splitlines() == [
        f"{path}:{line}: spec.roles[1].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].image: comes "
        "through the alias *server, whose text is the anchor &server at line 10: editing it there would change "
        "every role sharing it; give them all the same change, or write this one out in full in place of *server"]
    assert run(["rollout", "restart", "-f", str(path), "--role", "decode"], capsys)[0] == 1
    code, out, err = run(["set", "image", "-f", str(path), "prefill=reg/llm:2"], capsys)  # the anchor's own role
    assert (code, out) == (1, "") and path.read_text() == text
    assert err.splitlines() == [
        f"{path}:15: spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].image: is in the "
        f"anchor &server at line 10, which the alias *server at line {line} shares: editing it would change every "
        "role sharing it; give them all the same change, or write the other out in full in place of *server"]
    code, out, err = run(["set", "image", "-f", str(path), "*=reg/llm:2"], capsys)
    assert (code, err) == (0, "") and "*server" in path.read_text()
    assert changed_lines(text, path.read_text()) == [("              image: reg/llm:1", "              image: reg/llm:2")]
    assert run(["rollout", "restart", "-f", str(path)], capsys)[0] == 0
    (document,) = parse_stream(path.read_text(), str(path))
    prefill, decode = (role["spec"]["leaderWorkerTemplate"]["workerTemplate"] for role in document.data["spec"]["roles"])
    assert prefill == decode and "kubectl.kubernetes.io/restartedAt" in decode["metadata"]["annotations"]


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    return [(a, b) for a, b in zip(before.split("\n"), after.split("\n"), strict=True) if a != b]


def test_a_write_that_fails_puts_back_the_files_written_before_it(tmp_path, capsys, monkeypatch):
    """Two files: the second could not be written (a full disk), and the first stayed edited."""
    import errno

    from kubectl_disagg.gitops import files
    from kubectl_disagg.manifests.writer import write_atomically

    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(EXAMPLE)
    second.write_text(EXAMPLE.replace("name: qwen-vl", "name: other"))

    def full(path, data):
        if path == str(second):
            raise OSError(errno.ENOSPC, "No space left on device")
        write_atomically(path, data)

    monkeypatch.setattr(files, "write_atomically", full)
    code, out, err = run(["set", "image", "-f", str(first), "-f", str(second), "decode=reg/llm:2"], capsys)
    assert (code, out) == (1, "") and "No space left on device" in err
    assert first.read_text() == EXAMPLE and "qwen-vl-server" in second.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "b.yaml"]
