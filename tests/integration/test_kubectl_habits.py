"""kubectl habits against the real kube-apiserver (issue 39): NAME for a set deployed with -f,
found by its LeaderWorkerSets' labels, and completion of -n and set names from the cluster."""

from __future__ import annotations

import pytest

from kubectl_disagg.commands._options import Options
from kubectl_disagg.commands.complete import KubeNames
from kubectl_disagg.commands.root import cli as root
from kubectl_disagg.views.completion import complete
from tests.support.stepping import SET, cli, write_set


@pytest.mark.parametrize("verb", ["status", "plan", "step"])
def test_name_of_a_set_deployed_with_f_says_so_and_what_runs(stepper, tmp_path, verb):
    path = write_set(tmp_path, stepper.namespace, {"prefill": 2, "decode": 1})
    stepper.drive(path)  # deployed with -f: no DisaggregatedSet object stored
    code, out, err = cli(stepper, "rollout", verb, SET, "-n", stepper.namespace)
    assert (code, out) == (1, "")
    lines = err.splitlines()
    assert lines[0].startswith(f"disaggregatedset/{SET} is not stored in namespace {stepper.namespace}: it was "
                               "deployed with -f (its 2 LeaderWorkerSets carry its name)")
    assert lines[1].startswith("  running: revision ") and lines[1].endswith("decode 1/1 ready, prefill 2/2 ready")
    assert lines[2] == (f"  1 slice; rollout {verb} needs the set's template: "
                        f"kubectl disagg rollout {verb} -f FILE -n {stepper.namespace}")


def test_an_absent_name_lists_the_namespaces_sets(stepper, tmp_path):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    code, _, err = cli(stepper, "rollout", "status", "lama", "-n", stepper.namespace)
    assert code == 1
    assert err == f"disaggregatedset/lama not found in namespace {stepper.namespace}; the sets there: {SET}\n"


def test_completion_offers_namespaces_and_the_sets_of_the_namespace_typed(stepper, tmp_path, monkeypatch):
    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    monkeypatch.chdir(tmp_path / "..")  # no manifests here: the names come from the cluster
    kubeconfig = str(stepper.control_plane.kubeconfig)
    words = ["rollout", "status", "--kubeconfig", kubeconfig, "-n"]
    namespaces = complete(root, [*words, stepper.namespace[:-1]], KubeNames(Options())).candidates
    assert stepper.namespace in namespaces
    assert complete(root, [*words, stepper.namespace, ""], KubeNames(Options())).candidates == (f"{SET}\tDisaggregatedSet",)
    assert complete(root, [*words, "kube-system", ""], KubeNames(Options())).candidates == ()


def test_completion_offers_the_kubeconfigs_contexts(stepper):
    kubeconfig = str(stepper.control_plane.kubeconfig)
    contexts = complete(root, ["rollout", "step", "--kubeconfig", kubeconfig, "--context", ""], KubeNames(Options())).candidates
    assert contexts and all("\t" not in context for context in contexts)


def test_a_verbs_hints_repeat_the_users_f_and_n(stepper, tmp_path):
    from tests.support.progressive import paced
    from tests.support.stepping import model

    old = paced(tmp_path, stepper.namespace, "img:1", {"maxSlicesInFlight": 2})
    stepper.drive(old)
    new = paced(tmp_path, stepper.namespace, "img:2", {"maxSlicesInFlight": 2})
    assert model(new).revision != model(old).revision
    assert stepper(new).code == 0
    code, out, err = cli(stepper, "rollout", "pause", "-f", str(new), "-n", stepper.namespace)
    assert code == 0, err
    assert (f"`kubectl disagg rollout step -f {new} -n {stepper.namespace}` changes nothing until "
            f"`kubectl disagg rollout resume -f {new} -n {stepper.namespace}`") in out


def test_kubectl_tab_completes_namespaces_and_set_names_through_the_plugin(stepper, tmp_path):
    """`kubectl disagg rollout status -n <TAB>` and `... -n NS <TAB>` as kubectl asks the plugin,
    the kubeconfig from $KUBECONFIG as a user's shell has it."""
    import subprocess
    import sys
    from pathlib import Path

    from testenv.controlplane import ensure_binaries

    stepper.drive(write_set(tmp_path, stepper.namespace, {"prefill": 1, "decode": 1}))
    env = {"PATH": f"{Path(sys.executable).parent}:{ensure_binaries()}:/usr/bin:/bin", "HOME": "/nonexistent",
           "KUBECONFIG": str(stepper.control_plane.kubeconfig)}

    elsewhere = tmp_path / "no-manifests-here"  # the names come from the cluster, not from files
    elsewhere.mkdir()

    def tab(*words: str) -> list[str]:
        return subprocess.run(["kubectl", "__complete", "disagg", *words], env=env, cwd=elsewhere, capture_output=True,
                              text=True, timeout=60, check=True).stdout.splitlines()

    assert stepper.namespace in tab("rollout", "status", "-n", "")
    assert tab("rollout", "status", "-n", stepper.namespace, "") == [f"{SET}\tDisaggregatedSet", ":4"]
