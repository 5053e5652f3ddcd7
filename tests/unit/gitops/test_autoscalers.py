"""An autoscaler in the directory that targets the RoleScaler of a set driven through git (which
nothing creates then) is refused by `render` and `cmp generate`, naming the LWS to target."""

from __future__ import annotations

import pytest
import yaml

from kubectl_disagg.argocd import contract as argocd
from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.writer import to_yaml
from tests.support.cli import run
from tests.support.sets import NS, make_set

HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: llm-decode
  namespace: {namespace}
spec:
  minReplicas: 1
  maxReplicas: 8
  scaleTargetRef:
    apiVersion: {api_version}
    kind: {kind}
    name: {name}
"""


def external_set():
    ds = make_set({"prefill": 2, "decode": 1})
    data = ds.source.data
    data["spec"]["roles"][1]["scaling"] = {"mode": "External"}
    return data


def _directory(tmp_path, *, kind="DisaggregatedSetRoleScaler", name="llm-decode", namespace=NS):
    (tmp_path / "llm.yaml").write_text(to_yaml(external_set()))
    api_version = "disaggregatedset.x-k8s.io/v1" if kind == "DisaggregatedSetRoleScaler" else "leaderworkerset.x-k8s.io/v1"
    (tmp_path / "hpa.yaml").write_text(HPA.format(namespace=namespace, api_version=api_version, kind=kind, name=name))
    return tmp_path


def _autoscaled_lws(out: str) -> str:
    (name,) = [o["metadata"]["name"] for o in yaml.safe_load_all(out) if o and o["kind"] == "LeaderWorkerSet"
               and o["metadata"].get("annotations", {}).get("kubectl-disagg/replicas-owner") == "autoscaler"]
    return name


def test_render_refuses_an_hpa_on_the_role_scaler_of_a_set_driven_through_git(tmp_path, capsys):
    directory = _directory(tmp_path)
    assert run(["rollout", "state", "init", "-f", str(directory / "llm.yaml")], capsys)[0] == 0
    hpa_only = tmp_path / "hpa.yaml"
    hpa_only.rename(tmp_path / "hpa.keep")
    code, steady, _ = run(["render", "-f", str(directory)], capsys)
    (tmp_path / "hpa.keep").rename(hpa_only)
    assert code == 0
    code, out, err = run(["render", "-f", str(directory)], capsys)
    assert code == 1 and out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"{hpa_only}:9: spec.scaleTargetRef: HorizontalPodAutoscaler {NS}/llm-decode targets "
                           "DisaggregatedSetRoleScaler llm-decode, which nothing creates while "
                           "disaggregatedset/llm is driven through git")
    assert f"target the LeaderWorkerSet {_autoscaled_lws(steady)} " in line


def test_the_same_hpa_passes_through_where_no_state_drives_the_set(tmp_path, capsys):
    directory = _directory(tmp_path)  # `rollout step` against the cluster (or the controller) creates the scaler
    code, out, _ = run(["render", "-f", str(directory)], capsys)
    assert code == 0 and "kind: HorizontalPodAutoscaler" in out


@pytest.mark.parametrize("change", [{"kind": "LeaderWorkerSet", "name": "llm-0-abc-decode"},
                                    {"name": "other-decode"}, {"namespace": "elsewhere"}])
def test_an_hpa_on_anything_else_passes_through(tmp_path, capsys, change):
    directory = _directory(tmp_path, **change)
    assert run(["rollout", "state", "init", "-f", str(directory / "llm.yaml")], capsys)[0] == 0
    code, out, err = run(["render", "-f", str(directory)], capsys)
    assert code == 0 and "kind: HorizontalPodAutoscaler" in out, err


def test_cmp_generate_refuses_it_too(tmp_path, capsys):
    directory = _directory(tmp_path)
    assert run(["rollout", "state", "init", "-f", str(directory / "llm.yaml")], capsys)[0] == 0
    files = {"llm.yaml": (directory / "llm.yaml").read_bytes(), "hpa.yaml": (directory / "hpa.yaml").read_bytes()}
    state = (directory / "disagg-rollout-state.yaml").read_bytes()
    environ = {"KUBE_API_VERSIONS": "v1,leaderworkerset.x-k8s.io/v1,leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"}
    with pytest.raises(UserError) as refused:
        _generate(files, environ, state)
    (line,) = refused.value.lines()
    assert line.startswith("hpa.yaml:9: spec.scaleTargetRef: HorizontalPodAutoscaler") and "docs/autoscaling.md" in line
    del files["hpa.yaml"]
    assert _generate(files, environ, state).objects


def _generate(files: dict, environ: dict, state: bytes):
    from kubectl_disagg.inputs import tree as inputs

    parameters = argocd.read_parameters(environ)
    tree = inputs.walked("", {**files, parameters.state_file: state}, parameters.reading)
    return argocd.generate(tree, parameters, environ)
