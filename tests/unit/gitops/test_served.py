"""The rollout state as an object Argo CD shows: what `cmp generate` emits where the cluster
serves the kind, and the Lua health check's testdata written from it."""

from __future__ import annotations

import pytest

from kubectl_disagg.argocd.contract import generate, read_parameters
from kubectl_disagg.gitops.served import SERVED_RESOURCE
from kubectl_disagg.gitops.state import state_document
from kubectl_disagg.manifests.writer import to_yaml
from kubectl_disagg.rollout.served import served_object
from tests.oracles.argocd_harness import CUSTOMIZATIONS, health
from tests.support.gitops import states
from tests.support.sets import NS


HEALTH = CUSTOMIZATIONS / "kubectl-disagg.x-k8s.io" / "RolloutState"


def test_the_summary_says_where_the_rollout_stands():
    (_, old, rest), (_, new, mid) = states()
    assert served_object(old, rest)["rollout"] == {
        "set": "llm", "revision": old.revision, "phase": "AtRest", "message": f"llm: at rest at revision {old.revision}"}
    assert served_object(new, mid)["rollout"] == {
        "set": "llm", "revision": new.revision, "step": "2/4", "phase": "Rolling",
        "message": "llm: slice 0 step 2 of 4 (old/new: prefill 1/1, decode 1/1); next: rollout step --gitops"}
    assert {k: v for k, v in served_object(new, mid).items() if k != "rollout"} == state_document(mid)


@pytest.mark.parametrize("name", ["healthy", "suspended"])
def test_the_health_testdata_is_what_the_plugin_emits(name, request):
    (_, ds, state), = [s for s in states() if s[0] == name]
    path = HEALTH / "testdata" / f"{name}.yaml"
    text = to_yaml(served_object(ds, state))
    if request.config.getoption("--update-golden"):
        path.write_text(text)
    assert path.read_text() == text, "run pytest --update-golden"


def test_suspended_mid_rollout_healthy_at_rest():
    for name, ds, state in states():
        result = health(HEALTH / "health.lua", served_object(ds, state))
        assert result == {"status": {"healthy": "Healthy", "suspended": "Suspended"}[name],
                          "message": served_object(ds, state)["rollout"]["message"]}


def _generate(tmp_path, api_versions: str | None):
    (_, new, mid) = states()[1]
    files = {"llm.yaml": to_yaml(new.source.data).encode()}
    environ = {"ARGOCD_APP_NAMESPACE": NS}
    if api_versions is not None:
        environ["KUBE_API_VERSIONS"] = api_versions
    from kubectl_disagg.inputs import tree as inputs

    parameters = read_parameters(environ)
    files[parameters.state_file] = to_yaml(state_document(mid)).encode()
    return generate(inputs.walked("", files, parameters.reading), parameters, environ)


def test_cmp_generate_emits_the_state_only_where_the_cluster_serves_it(tmp_path):
    lws = "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"
    served = _generate(tmp_path, f"v1/Service,{lws},{SERVED_RESOURCE}")
    kinds = [o["kind"] for o in served.objects]
    assert kinds.count("RolloutState") == 1 and kinds[-1] == "RolloutState"
    assert served.objects[-1]["rollout"]["phase"] == "Rolling"
    assert not [w for w in served.warnings if "RolloutState" in w]
    unserved = _generate(tmp_path, f"v1/Service,{lws}")
    assert "RolloutState" not in [o["kind"] for o in unserved.objects]
    assert [w for w in unserved.warnings if "RolloutState" in w] == [
        f"the destination cluster does not serve {SERVED_RESOURCE} (KUBE_API_VERSIONS): the rollout state "
        "is not emitted, so Argo CD cannot show where a git rollout stands"]
    assert "RolloutState" not in [o["kind"] for o in _generate(tmp_path, None).objects]
