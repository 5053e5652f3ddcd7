"""The command line as people use it: exit codes, stdout/stderr discipline, kubectl habits."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys

import pytest
import yaml

from kubectl_disagg.cli import main
from tests.conftest import EXAMPLES, REPO, copy_without_namespaces, without_namespace


def run(argv: list[str], capsys, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        import io
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def test_render_yaml(capsys):
    code, out, err = run(["render", "-f", str(EXAMPLES / "prefill-decode.yaml")], capsys)
    assert code == 0 and err == ""
    kinds = [d["kind"] for d in yaml.safe_load_all(out)]
    assert kinds == ["LeaderWorkerSet", "Service", "LeaderWorkerSet", "Service"]


def test_render_json_and_namespace(capsys, tmp_path):
    example = copy_without_namespaces(tmp_path) / "prefill-decode.yaml"
    code, out, _ = run(["render", "-f", str(example), "-n", "prod", "-o", "json"], capsys)
    listed = json.loads(out)
    assert code == 0 and listed["kind"] == "List"
    assert {item["metadata"]["namespace"] for item in listed["items"]} == {"prod"}


@pytest.mark.parametrize("command", [["render"], ["validate"], ["render", "-o", "json"]])
def test_namespace_flag_may_not_contradict_a_document(capsys, command):
    """kubectl's rule, for every command: -n fills in a missing namespace, never overrides one."""
    example = EXAMPLES / "prefill-decode.yaml"  # namespace: serving
    code, out, err = run([*command, "-f", str(example), "-n", "prod"], capsys)
    line = next(n for n, text in enumerate(example.read_text().splitlines(), 1) if "namespace:" in text)
    assert code == 1 and out == ""
    assert err == (f'{example}:{line}: metadata.namespace: disaggregatedset/llama is in namespace '
                   '"serving", which does not match --namespace "prod"; pass --namespace=serving or leave it out\n')
    code, out, _ = run([*command, "-f", str(example), "-n", "serving"], capsys)
    assert code == 0 and out


def test_render_from_stdin(capsys, monkeypatch):
    text = (EXAMPLES / "prefill-decode.yaml").read_text()
    code, out, _ = run(["render", "-f", "-"], capsys, stdin=text, monkeypatch=monkeypatch)
    assert code == 0 and out.count("kind: LeaderWorkerSet") == 2


def test_invalid_input_prints_nothing_on_stdout(capsys, tmp_path):
    good = (EXAMPLES / "prefill-decode.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(good + "---\n" + good.replace("replicas: 2", "replcas: 2").replace("name: decode", "name: Decode"))
    code, out, err = run(["render", "-f", str(EXAMPLES / "prefill-decode.yaml"), "-f", str(bad)], capsys)
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2  # every problem of the file, in file order
    assert lines[0].startswith(f"{bad}:") and "spec.roles[0].spec.replcas: unknown field" in lines[0]
    assert 'spec.roles[1].name: Invalid value: "Decode"' in lines[1]
    assert "Traceback" not in err


@pytest.mark.parametrize("content, expected", [
    ("a: [1, 2\n", "invalid YAML"),
    ("apiVersion: disaggregatedset.x-k8s.io/v2\nkind: DisaggregatedSet\nmetadata: {name: x}\nspec: {roles: []}\n",
     "apiVersion: Unsupported value"),
    ("kind: DisaggregatedSet\n", "apiVersion: Unsupported value"),
    ("just a string\n", "not a Kubernetes object"),
])
def test_bad_input_is_one_line_per_error(capsys, tmp_path, content, expected):
    path = tmp_path / "in.yaml"
    path.write_text(content)
    code, out, err = run(["render", "-f", str(path)], capsys)
    assert code == 1 and out == "" and expected in err and "Traceback" not in err


def test_missing_file(capsys):
    code, out, err = run(["render", "-f", "does-not-exist.yaml"], capsys)
    assert code == 1 and out == "" and "does-not-exist.yaml: no such file or directory" in err


def test_validate_verdicts(capsys):
    code, out, err = run(["validate", "-f", str(EXAMPLES)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 4 and all(": valid (revision " in line for line in lines)
    assert "disaggregatedset/deepseek in inference" in out


def test_validate_invalid(capsys, tmp_path):
    path = tmp_path / "ds.yaml"
    path.write_text((EXAMPLES / "prefill-decode.yaml").read_text().replace("replicas: 1", "replicas: 0"))
    code, out, err = run(["validate", "-f", str(path)], capsys)
    assert code == 1 and out == ""
    assert err.startswith(f"{path}:") and "spec.roles: Invalid value: replicas must be zero" in err


def test_usage_errors_exit_2(capsys):
    code, _, err = run(["render"], capsys)
    assert code == 2 and "Missing option '-f'" in err


def test_render_and_validate_do_not_import_the_kubernetes_client_or_pyyaml():
    script = ("import sys\nfrom kubectl_disagg.cli import main\n"
              "try:\n    main(['render', '-f', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
              "try:\n    main(['validate', '-f', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
              "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'jinja2', 'urllib3', 'ssl', 'http', '_hashlib', 'yaml'))\n"
              "print(loaded, file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", script, str(EXAMPLES)], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0
    assert result.stderr.strip() == "[]"


# What the status fast path may not load: each costs milliseconds at every start (dataclasses
# pulls inspect, ast and dis; concurrent.futures pulls logging, traceback and queue; http.client
# pulls the email package and urllib; contextlib ~1 ms for one decorator; PyYAML compiles a dozen
# regular expressions, and with them datetime ~2 ms). Value types there are named tuples,
# side-by-side reads are plain threads, HTTP is transport.py's own, block-style YAML is block_yaml's.
SLOW_TO_IMPORT = ("dataclasses", "typing", "concurrent", "logging", "inspect", "http", "email", "urllib",
                  "contextlib", "yaml", "datetime")
_WHO_IMPORTS = """
import json
import sys

importers = {}

class Watch:  # the first module to import each slow one, named
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in sys.argv[1].split(","):
            frame = sys._getframe(1)
            while frame.f_globals.get("__name__", "").startswith(("importlib", "_frozen_importlib")):
                frame = frame.f_back
            importers.setdefault(name.split(".")[0], frame.f_globals.get("__name__"))

sys.meta_path.insert(0, Watch)
from kubectl_disagg.cli import main
try:
    main(["rollout", "status", "-f", sys.argv[2], "-o", "json", "--kubeconfig", sys.argv[3]])
except SystemExit:
    pass
print(json.dumps(importers), file=sys.stderr)
"""


def test_rollout_status_fast_path_imports_nothing_slow(tmp_path):
    """The whole fast path, against an API server that is not there: the imports all happen."""
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    # -S: no site hooks (an editable install's finder imports contextlib before any of ours);
    # the dependencies are found on PYTHONPATH instead, as in a regular install.
    result = subprocess.run([sys.executable, "-S", "-c", _WHO_IMPORTS, ",".join(SLOW_TO_IMPORT),
                             str(EXAMPLES / "prefill-decode.yaml"), str(kubeconfig)],
                            capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *site.getsitepackages()])})
    importers = json.loads(result.stderr.strip().splitlines()[-1])
    assert importers == {}


def test_console_script_module_entry():
    result = subprocess.run([sys.executable, "-m", "kubectl_disagg", "--version"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0 and "kubectl-disagg" in result.stdout


@pytest.mark.parametrize("argv, expected", [
    (["render", "-f", "a.yaml"], {"filenames": ["a.yaml"], "recursive": False, "namespace": None, "output": "yaml"}),
    (["render", "--filename=a.yaml", "-fb.yaml", "-R", "-n", "ns", "-ojson"],
     {"filenames": ["a.yaml", "b.yaml"], "recursive": True, "namespace": "ns", "output": "json"}),
    (["render", "-f", "-", "--namespace=x", "--output", "yaml"],
     {"filenames": ["-"], "recursive": False, "namespace": "x", "output": "yaml"}),
])
def test_fast_render_arguments(argv, expected):
    from kubectl_disagg.fastpath import parse_args
    assert parse_args(argv) == ("render", expected)


@pytest.mark.parametrize("argv, expected", [
    (["rollout", "status", "-f", "a.yaml"],
     {"filenames": ["a.yaml"], "recursive": False, "namespace": None, "output": "text", "kubeconfig": None,
      "context": None}),
    (["rollout", "status", "-fa.yaml", "-o", "json", "--kubeconfig=k", "--context", "c", "-n", "ns"],
     {"filenames": ["a.yaml"], "recursive": False, "namespace": "ns", "output": "json", "kubeconfig": "k",
      "context": "c"}),
])
def test_fast_status_arguments(argv, expected):
    from kubectl_disagg.fastpath import parse_args
    assert parse_args(argv) == ("rollout status", expected)


@pytest.mark.parametrize("argv", [
    ["render"], ["render", "-h"], ["render", "--help"], ["render", "-f"], ["render", "-f", "a", "-o", "xml"],
    ["render", "-f", "a", "--unknown"], ["render", "-Rf", "a"], ["render", "-f", "a", "-n"],
    ["render", "-f", "a", "--output="], ["validate", "-f", "a"], [], ["render", "-f", "a", "--kubeconfig", "k"],
    ["rollout", "status", "name"], ["rollout", "status", "-f", "a", "-w"], ["rollout", "status", "-f", "a", "-o", "xml"],
    ["rollout", "status", "-f", "a", "--timeout", "1s"], ["rollout", "status"], ["rollout", "step", "-f", "a"],
    ["rollout", "status", "-f", "a", "-o", "text", "extra"],
])
def test_unusual_arguments_go_to_click(argv):
    from kubectl_disagg.fastpath import parse_args
    assert parse_args(argv) is None


@pytest.mark.parametrize("flags", [[], ["-o", "json"], ["-n", "other", "-R"]])
def test_fast_path_and_click_render_the_same(capsys, flags, tmp_path):
    from kubectl_disagg.cli import _run_click
    argv = ["render", "-f", str(copy_without_namespaces(tmp_path)), *flags]
    code, fast, _ = run(argv, capsys)
    assert code == 0
    assert _run_click(argv) == 0
    assert capsys.readouterr().out == fast


@pytest.mark.parametrize("content", ["", "# only a comment\n", "---\n# nothing\n---\n"])
@pytest.mark.parametrize("path", ["fast", "click"])
def test_render_json_of_nothing_is_an_empty_list(capsys, tmp_path, content, path):
    from kubectl_disagg.cli import _run_click
    empty = tmp_path / "empty.yaml"
    empty.write_text(content)
    argv = ["render", "-f", str(empty), "-o", "json"]
    if path == "fast":
        code, out, err = run(argv, capsys)
    else:
        code, (out, err) = _run_click(argv), capsys.readouterr()
    assert code == 0 and err == ""
    assert json.loads(out) == {"apiVersion": "v1", "kind": "List", "items": [], "metadata": {}}


def test_render_yaml_of_nothing_is_an_empty_stream(capsys, tmp_path):
    (tmp_path / "empty.yaml").write_text("# only a comment\n")
    assert run(["render", "-f", str(tmp_path / "empty.yaml")], capsys) == (0, "", "")


def test_a_bad_tag_is_an_error_not_a_traceback(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((EXAMPLES / "prefill-decode.yaml").read_text().replace("name: prefill", "name: !!bool llama", 1))
    code, out, err = run(["render", "-f", str(bad)], capsys)
    assert code == 1 and out == ""
    assert "cannot read 'llama' as !!bool" in err and "Traceback" not in err


def _process(argv: list[str], **kwargs) -> subprocess.Popen:
    """The command as a process, through the same entry point as the console script."""
    return subprocess.Popen([sys.executable, "-c", "from kubectl_disagg.cli import main; main()", *argv],
                            cwd=REPO, stderr=subprocess.PIPE, **kwargs)


@pytest.mark.parametrize("argv", [
    ["render", "-f", str(EXAMPLES / "prefill-decode.yaml")],  # the fast path
    ["render", "-f", str(EXAMPLES / "prefill-decode.yaml"), "--output=json", "--namespace", "serving"],
    ["completion", "bash"],  # click
])
def test_a_process_exits_with_its_whole_output(argv):
    in_process = subprocess.run([sys.executable, "-c", "import sys\nfrom kubectl_disagg.cli import main\n"
                                 "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    sys.exit(e.code)\n", *argv],
                                cwd=REPO, capture_output=True)
    proc = _process(argv, stdout=subprocess.PIPE)
    out, err = proc.communicate()
    assert proc.returncode == in_process.returncode == 0 and err == b""
    assert out == in_process.stdout and len(out) > 1000


def test_a_full_disk_is_one_line_and_exit_1():
    with open("/dev/full", "wb") as full:
        proc = _process(["render", "-f", str(EXAMPLES / "prefill-decode.yaml")], stdout=full)
        _, err = proc.communicate()
    assert proc.returncode == 1
    assert err.decode() == "error: No space left on device\n"


def test_a_reader_closing_the_pipe_early_is_not_an_error(tmp_path):
    big = yaml.safe_load((EXAMPLES / "prefill-decode.yaml").read_text())
    big["spec"]["slices"] = 100  # far more than a pipe buffers
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(big))
    proc = _process(["render", "-f", str(path)], stdout=subprocess.PIPE)
    assert proc.stdout.read(100).startswith(b"apiVersion:")
    proc.stdout.close()
    assert proc.wait() == 0 and proc.stderr.read() == b""


def test_control_characters_from_a_manifest_are_escaped_in_errors(capsys, tmp_path):
    path = tmp_path / "red.yaml"
    path.write_text('apiVersion: disaggregatedset.x-k8s.io/v1\nkind: DisaggregatedSet\n'
                    'metadata:\n  name: "\\e[31mred"\nspec: {roles: []}\n')
    code, out, err = run(["render", "-f", str(path)], capsys)
    assert code == 1 and out == "" and "\x1b" not in err
    assert f'{path}:4: metadata.name: Invalid value: "\\x1b[31mred"' in err


@pytest.mark.parametrize("command", [["render"], ["validate"], ["rollout", "plan"]])
def test_an_object_too_large_to_store_is_refused_by_every_command(command, capsys, tmp_path):
    # Before anything is printed or written (rollout step loads its sets the same way first).
    from tests.unit.core.test_validation import _with_env_value
    from kubectl_disagg.manifests.writer import to_yaml

    path = tmp_path / "ds.yaml"
    path.write_text(to_yaml(_with_env_value(1 << 20)))
    code, out, err = run([*command, "-f", str(path)], capsys)
    assert code == 1 and out == ""
    assert "spec.roles[0]: Too long: the rendered LeaderWorkerSet my-llm-0-" in err


def test_a_namespace_flag_the_api_server_would_refuse_is_refused(capsys, tmp_path):
    path = tmp_path / "ds.yaml"
    path.write_text(without_namespace(EXAMPLES / "prefill-decode.yaml"))
    code, out, err = run(["render", "-n", "n" * 64, "-f", str(path)], capsys)
    assert code == 1 and out == ""
    assert f'--namespace "{"n" * 64}": must be a lowercase RFC 1123 label' in err and "at most 63 characters" in err
