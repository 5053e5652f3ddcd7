"""Completion as kubectl asks for it (`kubectl_complete-disagg WORDS... CURRENT`, Cobra's
protocol), and the scripts of `kubectl-disagg completion SHELL`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kubectl_disagg.commands.root import cli
from kubectl_disagg.views.completion import FILTER_FILE_EXT, NO_FILE_COMP, complete
from tests.support.cli import run
from tests.support.paths import EXAMPLES, REPO

HELPER = Path(sys.executable).parent / "kubectl_complete-disagg"


def names(words):
    result = complete(cli, words)
    return [c.split("\t")[0] for c in result.candidates], result.directive


def test_subcommands():
    assert names([""]) == (["cmp", "completion", "crds", "handover", "render", "rollout", "set", "validate", "version"],
                            NO_FILE_COMP)
    assert names(["r"]) == (["render", "rollout"], NO_FILE_COMP)
    assert names(["rollout", "st"]) == (["state", "status", "step"], NO_FILE_COMP)


def test_flags_of_the_command_typed():
    flags, directive = names(["rollout", "step", "--"])
    assert {"--dry-run", "--until-complete", "--timeout", "--filename", "--kubeconfig", "--context",
            "--namespace", "--output", "--help"} <= set(flags)
    assert directive == NO_FILE_COMP
    assert "--dry-run" not in names(["render", "--"])[0]
    assert names(["render", "-"])[0][:2] == ["-f", "--filename"]


def test_descriptions_follow_a_tab():
    (line,) = complete(cli, ["rollout", "step", "--dry"]).candidates
    assert line.startswith("--dry-run\t") and "change nothing" in line


@pytest.mark.parametrize("words, values", [
    (["render", "-o", ""], ["yaml", "json"]),
    (["rollout", "plan", "--output", "t"], ["table"]),
    (["rollout", "status", "-o", ""], ["text", "wide", "yaml", "json"]),
    (["render", "--output=j"], ["--output=json"]),
])
def test_output_values(words, values):
    assert names(words) == (values, NO_FILE_COMP)


def test_filenames_complete_as_manifests():
    assert names(["render", "-f", ""]) == (["yaml", "yml", "json"], FILTER_FILE_EXT)


def test_set_names_from_the_files_on_the_line():
    words = ["rollout", "status", "-f", str(EXAMPLES / "prefill-decode.yaml"), ""]
    assert names(words) == (["llama"], NO_FILE_COMP)
    words = ["rollout", "step", f"--filename={EXAMPLES}", "q"]
    assert names(words) == (["qwen-vl"], NO_FILE_COMP)


def test_set_names_from_the_current_directory(monkeypatch, tmp_path):
    (tmp_path / "a.yaml").write_text("kind: DisaggregatedSet\nmetadata: {name: alpha}\n---\nkind: Service\n"
                                     "metadata: {name: not-a-set}\n")
    (tmp_path / "broken.yaml").write_text("kind: [unclosed\n")
    monkeypatch.chdir(tmp_path)
    assert names(["rollout", "status", ""]) == (["alpha"], NO_FILE_COMP)


def test_the_executable_speaks_cobra():
    out = subprocess.run([str(HELPER), "rollout", ""], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert [line.split("\t")[0] for line in lines[:-1]] == ["abort", "history", "pause", "plan", "promote", "restart", "resume",
                                                         "retry", "state", "status", "step", "undo"]
    assert lines[-1] == ":4"


def test_the_executable_never_prints_a_traceback():
    out = subprocess.run([str(HELPER), "-f", "\udcff"], capture_output=True, text=True, errors="surrogateescape")
    assert out.returncode == 0 and "Traceback" not in out.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(capsys, shell):
    code, out, err = run(["completion", shell], capsys)
    assert code == 0 and err == ""
    assert "kubectl_complete-disagg" in out and "kubectl-disagg" in out


def test_completion_needs_a_known_shell(capsys):
    code, _, err = run(["completion", "tcsh"], capsys)
    assert code == 2 and "tcsh" in err


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
@pytest.mark.parametrize("line, expected", [
    ("kubectl-disagg ro", "rollout"),
    ("kubectl-disagg rollout status -o ", "json text wide yaml"),
])
def test_the_bash_script_completes(capsys, line, expected):
    _, script, _ = run(["completion", "bash"], capsys)
    words = line.split(" ")
    program = f"""{script}
COMP_WORDS=({" ".join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}
_kubectl_disagg_complete
printf '%s\\n' "${{COMPREPLY[@]}}" | sort | tr '\\n' ' '
"""
    env = {"PATH": f"{HELPER.parent}:/usr/bin:/bin"}
    out = subprocess.run(["bash", "-c", program], capture_output=True, text=True, env=env, cwd=REPO).stdout
    assert out.strip() == expected


class Names:
    """A stand-in for the cluster and the kubeconfig (`ClusterNames`), keeping what it was asked."""

    def __init__(self):
        self.asked = []

    def namespaces(self, kubeconfig, context):
        self.asked.append(("namespaces", kubeconfig, context))
        return ["default", "prod", "serving"]

    def contexts(self, kubeconfig):
        self.asked.append(("contexts", kubeconfig))
        return ["kind-a", "prod-eu"]

    def set_names(self, kubeconfig, context, namespace):
        self.asked.append(("sets", kubeconfig, context, namespace))
        return {"serving": ["llama", "mixtral"], None: ["default-set"]}.get(namespace, [])


def test_namespaces_complete_from_the_cluster():
    cluster = Names()
    assert complete(cli, ["rollout", "status", "-n", "s"], cluster).candidates == ("serving",)
    assert complete(cli, ["rollout", "status", "--context", "prod-eu", "--namespace=p"], cluster).candidates == \
        ("--namespace=prod",)
    assert cluster.asked[-1] == ("namespaces", None, "prod-eu")


def test_contexts_complete_from_the_kubeconfig():
    cluster = Names()
    assert complete(cli, ["rollout", "step", "--kubeconfig", "k.yaml", "--context", ""], cluster).candidates == \
        ("kind-a", "prod-eu")
    assert cluster.asked == [("contexts", "k.yaml")]


def test_set_names_of_the_namespace_typed_earlier(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    cluster = Names()
    assert names_with(cluster, ["rollout", "status", "-n", "serving", ""]) == ["llama", "mixtral"]
    assert names_with(cluster, ["rollout", "plan", ""]) == ["default-set"]  # the context's namespace
    assert names_with(cluster, ["rollout", "plan", "-f", str(EXAMPLES / "prefill-decode.yaml"), ""]) == ["llama"]
    assert [a for a in cluster.asked if a[0] == "sets"] == [("sets", None, None, "serving"), ("sets", None, None, None)]


def names_with(cluster, words):
    return [c.split("\t")[0] for c in complete(cli, words, cluster).candidates]


def test_a_server_that_does_not_answer_costs_a_tab_at_most_its_bound():
    import contextlib
    import threading
    import time

    from kubectl_disagg.commands._options import Options
    from kubectl_disagg.commands.complete import KubeNames

    released = threading.Event()

    class Hanging:
        """Sessions whose connection never answers (the client's retries)."""

        @contextlib.contextmanager
        def session(self, options):
            released.wait(30)
            yield None

    started = time.monotonic()
    try:
        assert KubeNames(Options(sessions=Hanging()))._asked(None, None, lambda s: ["never"], seconds=0.2) == []
    finally:
        released.set()
    assert time.monotonic() - started < 2


def test_the_cluster_names_are_asked_through_the_options_sessions():
    """Completion opens its session as every command does: through the `Options` it is handed,
    with the --kubeconfig and --context typed on the line."""
    import contextlib
    from types import SimpleNamespace

    from kubectl_disagg.commands._options import Options
    from kubectl_disagg.commands.complete import KubeNames

    opened = []

    class Recording:
        @contextlib.contextmanager
        def session(self, options):
            opened.append((options.kubeconfig, options.context))
            yield SimpleNamespace(default_namespace="serving", namespace_names=lambda: ["a", "b"],
                                  set_names=lambda namespace: [f"set-in-{namespace}"])

    handed = Options(sessions=Recording())
    names = KubeNames(handed)
    assert names.namespaces("k.yaml", "prod") == ["a", "b"]
    assert names.set_names(None, "dev", None) == ["set-in-serving"]
    assert opened == [("k.yaml", "prod"), (None, "dev")]
    assert (handed.kubeconfig, handed.context) == (None, None)  # the options handed in are left as they were
