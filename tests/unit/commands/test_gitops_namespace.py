"""One namespace rule for every `--gitops` command (issue 47 item 9): a set that names no
namespace is placed as kubectl places it, by -n, else the kubeconfig context's namespace, else
`default`, read without connecting (`kube.client.context_namespace`)."""

from __future__ import annotations

import json

import pytest

from kubectl_disagg.errors import UserError
from kubectl_disagg.kube.client import context_namespace
from tests.support.cli import run
from tests.support.policy import POLICY, SET

KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: ops
contexts:
- name: ops
  context: {cluster: c, user: u, namespace: serving}
- name: bare
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: not-used}
"""


@pytest.fixture
def kubeconfig(tmp_path, monkeypatch):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return path


def test_the_context_s_namespace_else_default(kubeconfig, tmp_path, monkeypatch):
    assert context_namespace(None, None) == "serving"
    assert context_namespace(None, "bare") == "default"
    assert context_namespace(str(kubeconfig), "bare") == "default"
    with pytest.raises(UserError, match='context "nope" not found'):
        context_namespace(None, "nope")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert context_namespace(None, None) == "default"  # no kubeconfig at all: kubectl's default


@pytest.fixture
def app(tmp_path, kubeconfig, capsys):
    """A set and its policy that name no namespace, their state written for `serving`."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "ds.yaml").write_text((SET + POLICY).replace(", namespace: serving}", "}"))
    code, _, err = run(["rollout", "state", "init", "-f", str(app), "-n", "serving"], capsys)
    assert code == 0, err
    return app


def test_a_verb_places_a_set_without_a_namespace_in_the_context_s(app, capsys):
    # Before: pause fell back to `default` while step and status took the context's namespace, and
    # refused the state ("this state is for namespace 'serving', not 'default'").
    code, out, err = run(["rollout", "pause", "--gitops", "-f", str(app)], capsys)
    assert (code, err) == (0, "")
    assert out.startswith("disaggregatedset/llama in serving paused at wave ")
    code, _, err = run(["rollout", "resume", "--gitops", "-f", str(app), "--context", "bare"], capsys)
    assert code == 1 and "this state is for namespace 'serving', not 'default'" in err  # the context named
    code, _, err = run(["rollout", "resume", "--gitops", "-f", str(app), "--context", "bare", "-n", "serving"], capsys)
    assert (code, err) == (0, "")  # -n first


def test_plan_places_a_set_without_a_namespace_in_the_context_s(app, capsys):
    code, out, err = run(["rollout", "plan", "--gitops", "-f", str(app), "-o", "json"], capsys)
    assert (code, err) == (0, "")
    assert [fleet["set"] for fleet in json.loads(out)["fleets"]] == ["llama"]
    code, _, err = run(["rollout", "plan", "--gitops", "-f", str(app), "--context", "bare"], capsys)
    assert code == 1 and "this state is for namespace 'serving', not 'default'" in err
