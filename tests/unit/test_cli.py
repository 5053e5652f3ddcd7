"""The command line as people use it: exit codes, stdout/stderr discipline, kubectl habits."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from tests.support.cli import run
from tests.support.paths import EXAMPLES, REPO, copy_without_namespaces, without_namespace


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
    bad.write_text(good.replace("name: llama", "name: llama-2") + "---\n"
                   + good.replace("replicas: 2", "replcas: 2").replace("name: decode", "name: Decode"))
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


def test_ctrl_c_is_one_line_and_exit_130(capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("kubectl_disagg.commands.render.render_files", interrupted)
    code, out, err = run(["render", "-f", str(EXAMPLES / "prefill-decode.yaml")], capsys)
    assert code == 130 and out == "" and err.strip() == "Interrupted."


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_stop_a_command_as_ctrl_c_does(capsys, monkeypatch, signame):
    import os
    import signal

    def killed(*args, **kwargs):
        os.kill(os.getpid(), getattr(signal, signame))
        raise AssertionError("the signal did not interrupt the command")

    before = signal.getsignal(getattr(signal, signame))
    monkeypatch.setattr("kubectl_disagg.commands.render.render_files", killed)
    code, out, err = run(["render", "-f", str(EXAMPLES / "prefill-decode.yaml")], capsys)
    assert code == 128 + getattr(signal, signame) and out == "" and err.strip() == f"Terminated ({signame})."
    assert signal.getsignal(getattr(signal, signame)) is before  # put back once the command ended


def test_console_script_module_entry():
    result = subprocess.run([sys.executable, "-m", "kubectl_disagg", "--version"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0 and "kubectl-disagg" in result.stdout


def test_render_a_directory_recursively_into_a_namespace(capsys, tmp_path):
    directory = copy_without_namespaces(tmp_path)
    code, out, err = run(["render", "-f", str(directory), "-n", "other", "-R"], capsys)
    objects = list(yaml.safe_load_all(out))
    assert code == 0 and err == "" and objects
    assert {o["metadata"]["namespace"] for o in objects} == {"other"}


@pytest.mark.parametrize("content", ["", "# only a comment\n", "---\n# nothing\n---\n"])
def test_render_json_of_nothing_is_an_empty_list(capsys, tmp_path, content):
    empty = tmp_path / "empty.yaml"
    empty.write_text(content)
    code, out, err = run(["render", "-f", str(empty), "-o", "json"], capsys)
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
    assert "cannot decode !!str `llama` as a !!bool" in err and "Traceback" not in err


def _process(argv: list[str], **kwargs) -> subprocess.Popen:
    """The command as a process, through the same entry point as the console script."""
    return subprocess.Popen([sys.executable, "-c", "from kubectl_disagg.cli import main; main()", *argv],
                            cwd=REPO, stderr=subprocess.PIPE, **kwargs)


@pytest.mark.parametrize("argv", [
    ["render", "-f", str(EXAMPLES / "prefill-decode.yaml")],
    ["render", "-f", str(EXAMPLES / "prefill-decode.yaml"), "--output=json", "--namespace", "serving"],
    ["completion", "bash"],
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
    from tests.support.validation import with_env_value
    from kubectl_disagg.manifests.writer import to_yaml

    path = tmp_path / "ds.yaml"
    path.write_text(to_yaml(with_env_value(1 << 20)))
    code, out, err = run([*command, "-f", str(path)], capsys)
    assert code == 1 and out == ""
    assert "spec.roles[0]: Too long: the rendered LeaderWorkerSet my-llm-0-" in err


def test_a_namespace_flag_the_api_server_would_refuse_is_refused(capsys, tmp_path):
    path = tmp_path / "ds.yaml"
    path.write_text(without_namespace(EXAMPLES / "prefill-decode.yaml"))
    code, out, err = run(["render", "-n", "n" * 64, "-f", str(path)], capsys)
    assert code == 1 and out == ""
    assert f'--namespace "{"n" * 64}": must be a lowercase RFC 1123 label' in err and "at most 63 characters" in err


def test_a_set_inside_a_list_is_validated_and_rendered_with_its_lines(capsys, tmp_path):
    """A DisaggregatedSet in a `kind: List` was passed through raw by render and unseen by validate."""
    example = (EXAMPLES / "prefill-decode.yaml").read_text()
    body = "".join(f"  {line}\n" if line.strip() and not line.startswith("#") else "" for line in example.splitlines())
    item = "- " + body[2:]
    listed = tmp_path / "list.yaml"
    listed.write_text("apiVersion: v1\nkind: List\nitems:\n" + item)
    code, out, _ = run(["validate", "-f", str(listed)], capsys)
    _, direct, _ = run(["validate", "-f", str(EXAMPLES / "prefill-decode.yaml")], capsys)
    assert code == 0 and out.split(": ", 1)[1] == direct.split(": ", 1)[1]
    code, out, _ = run(["render", "-f", str(listed)], capsys)
    _, rendered, _ = run(["render", "-f", str(EXAMPLES / "prefill-decode.yaml")], capsys)
    assert code == 0 and out == rendered
    listed.write_text("apiVersion: v1\nkind: List\nitems:\n" + item.replace("replicas: 1", "replicas: 0"))
    code, out, err = run(["validate", "-f", str(listed)], capsys)
    line = next(n for n, text in enumerate(listed.read_text().splitlines(), 1) if text.strip() == "roles:")
    assert code == 1 and err.startswith(f"{listed}:{line}: spec.roles: Invalid value: replicas must be zero")


def test_validate_server_reports_offline_problems_before_the_server_is_asked(capsys, tmp_path):
    """`validate --server` refuses what it can read offline without reading a kubeconfig (this
    never reached a cluster: it was in the integration tier)."""
    path = tmp_path / "ds.yaml"
    path.write_text((EXAMPLES / "prefill-decode.yaml").read_text().replace("namespace: serving", "namespace: x")
                    .replace('nvidia.com/gpu: "1"', 'nvidia.com/gpu: "lots"'))
    code, out, err = run(["validate", "-f", str(path), "--server", "--kubeconfig", str(tmp_path / "missing")], capsys)
    assert code == 1 and out == ""
    assert 'Invalid value: "lots": must be a quantity' in err and "kubeconfig" not in err



def test_a_command_reads_the_time_and_its_cluster_from_the_options_it_is_handed(tmp_path, capsys):
    """Issue 48: one `Options` carries the clock and what opens the session; a test hands in a
    fake clock and the in-memory cluster instead of patching module functions. The flags of a
    run stay in it: the options handed in are the same for the next run."""
    from tests.fakes.clock import FakeClock
    from tests.fakes.cluster import MemorySession
    from tests.support.cli import on

    path = copy_without_namespaces(tmp_path) / "prefill-decode.yaml"
    options = on(MemorySession(watches=False), FakeClock(seconds=5))
    code, out, err = run(["rollout", "restart", "-f", str(path), "--dry-run", "-o", "json"], capsys, options=options)
    stamps = {role["spec"]["leaderWorkerTemplate"][template]["metadata"]["annotations"][
        "kubectl.kubernetes.io/restartedAt"] for role in json.loads(out)["spec"]["roles"]
        for template in ("leaderTemplate", "workerTemplate") if template in role["spec"]["leaderWorkerTemplate"]}
    assert (code, stamps) == (0, {"2026-12-01T12:00:05Z"}), err  # the fake clock's time
    code, out, err = run(["rollout", "status", "-f", str(path), "-n", "elsewhere"], capsys, options=options)
    assert code == 3 and out.startswith("disaggregatedset/llama in "), (out, err)  # the in-memory cluster: empty
    assert options.namespace is None and options.filenames == ()
