"""What kubectl-disagg refuses offline, the API server refuses too: each input of
tests.unit.core.test_validation.REFUSED_BY_THE_CLUSTER goes to the local control plane (the
upstream CRDs under CI, the project's otherwise), and the server's own verdict is a refusal.

Who judges depends on where the cluster checks it: the DisaggregatedSet's CRD (list-map keys,
int32, enums), pod validation on the Pod the LWS controller would create from the template (a
probe's port; a CRD does not check it), or the Namespace the objects would live in. An object
too large to store is judged by a real write: a dry run never reaches etcd.
"""

from __future__ import annotations

import copy
import urllib.error

import pytest

from kubectl_disagg.core.controller.render import MAX_OBJECT_BYTES, leader_worker_set, object_bytes
from kubectl_disagg.core.delivery.sets import load_sets
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from tests.support.validation import REFUSED_BY_THE_CLUSTER, SERVER_SAYS, base, errors_of


def refusal(control_plane, method: str, path: str, body: dict) -> str:
    """The API server's answer to a dry run that must fail: its error message."""
    try:
        control_plane.request(method, path + "?dryRun=All&fieldValidation=Strict", body)
    except urllib.error.HTTPError as error:
        assert error.code == 422, error.code
        return error.read().decode()
    raise AssertionError(f"the API server accepted {body}")


def server_verdict(control_plane, namespace: str, doc: dict, judge: str) -> str:
    if judge == "set":
        doc = copy.deepcopy(doc)
        doc["metadata"].pop("namespace", None)
        result = control_plane.kubectl("create", "--dry-run=server", "--validate=strict", "-n", namespace,
                                       "-f", "-", input=to_yaml(doc), check=False)
        assert result.returncode != 0, result.stdout
        return result.stderr
    if judge == "pod":
        (role, *_) = doc["spec"]["roles"]
        template = role["spec"]["leaderWorkerTemplate"]["workerTemplate"]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "worker"}, "spec": template["spec"]}
        return refusal(control_plane, "POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    assert judge == "namespace"
    name = doc["metadata"]["namespace"]
    return refusal(control_plane, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})




@pytest.mark.parametrize("case", REFUSED_BY_THE_CLUSTER, ids=lambda case: case[0])
def test_the_api_server_refuses_what_we_refuse(control_plane, namespace, case):
    name, doc, ours, judge = case
    assert errors_of(doc) == [ours]
    assert SERVER_SAYS[name] in server_verdict(control_plane, namespace, doc, judge)


def lws_of_size(namespace: str, name: str, size: int) -> dict:
    """A LeaderWorkerSet rendered from the base set, its env value grown to `size` bytes of JSON."""
    (ds,) = load_sets(parse_stream(to_yaml(base()), "ds.yaml"))
    lws = leader_worker_set(ds, ds.roles[0], 0, namespace)
    lws["metadata"]["name"] = name
    container = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    container["env"] = [{"name": "BIG", "value": ""}]
    container["env"][0]["value"] = "x" * (size - object_bytes(lws))
    assert object_bytes(lws) == size
    return lws


def test_the_cluster_cannot_store_what_we_refuse_as_too_large(control_plane, namespace):
    # Over etcd's 1.5 MiB: a dry run accepts it (it never reaches etcd), the write is refused.
    apply = ("apply", "--server-side", "--field-manager=kubectl-disagg", "-f", "-")
    too_large = to_yaml(lws_of_size(namespace, "too-large", 1_600_000))
    assert control_plane.kubectl(*apply, "--dry-run=server", input=too_large, check=False).returncode == 0
    refused = control_plane.kubectl(*apply, input=too_large, check=False)
    assert refused.returncode != 0 and "request is too large" in refused.stderr, refused.stderr
    # At our limit, with the managedFields server-side apply adds, it is stored.
    at_limit = control_plane.kubectl(*apply, input=to_yaml(lws_of_size(namespace, "at-limit", MAX_OBJECT_BYTES)),
                                     check=False)
    assert at_limit.returncode == 0, at_limit.stderr
