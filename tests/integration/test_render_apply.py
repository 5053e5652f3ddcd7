"""`render`'s output against the real API server: accepted, findable by label, RBAC-guarded."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from tests.support.paths import EXAMPLES, without_namespace
from tests.support.sets import set_selector

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


def render(example, namespace: str) -> str:
    """The example rendered into `namespace` (its own namespace removed: -n may not contradict it)."""
    result = subprocess.run([sys.executable, "-m", "kubectl_disagg", "render", "-f", "-", "-n", namespace],
                            input=without_namespace(example), capture_output=True, text=True, check=True)
    return result.stdout


def names(manifests: str) -> set[tuple[str, str]]:
    return {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(manifests)}


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.name)
def test_server_side_dry_run_accepts_the_rendered_objects(control_plane, namespace, example):
    out = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                                input=render(example, namespace)).stdout
    assert out.count("serverside-applied (server dry run)") == len(names(render(example, namespace)))
    listed = json.loads(control_plane.kubectl("get", "leaderworkersets", "-n", namespace, "-o", "json").stdout)
    assert listed["items"] == []


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.name)
def test_server_side_apply_then_list_by_label_finds_exactly_the_rendered_objects(control_plane, namespace, example):
    manifests = render(example, namespace)
    control_plane.kubectl("apply", "--server-side", "--field-manager=kubectl-disagg", "-f", "-", input=manifests)
    set_name = yaml.safe_load(example.read_text())["metadata"]["name"]
    selector = set_selector(set_name)
    listed = json.loads(control_plane.kubectl("get", "leaderworkersets,services", "-n", namespace,
                                              "-l", selector, "-o", "json").stdout)
    found = {(item["kind"], item["metadata"]["name"]) for item in listed["items"]}
    assert found == names(manifests)
    # The server kept what we rendered: a second apply changes nothing.
    again = control_plane.kubectl("apply", "--server-side", "--field-manager=kubectl-disagg", "-f", "-",
                                  input=manifests).stdout
    assert "configured" not in again and again.count("serverside-applied") == len(found)


@pytest.mark.parametrize("example", EXAMPLE_FILES, ids=lambda p: p.name)
def test_the_examples_themselves_are_valid_disaggregatedsets(control_plane, namespace, example):
    # The examples name their own namespace; the server checks the object, not where it goes.
    document = yaml.safe_load(example.read_text())
    document["metadata"]["namespace"] = namespace
    out = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                                input=yaml.safe_dump(document)).stdout
    assert "serverside-applied (server dry run)" in out


def test_viewer_cannot_apply_rendered_objects(control_plane):
    manifests = render(EXAMPLES / "prefill-decode.yaml", "default")
    refused = control_plane.kubectl("apply", "--server-side", "-f", "-", input=manifests, user="viewer", check=False)
    assert refused.returncode != 0
    assert "forbidden" in refused.stderr.lower()
    # The viewer may read what is there (nothing), but not write.
    listed = control_plane.kubectl("get", "leaderworkersets", "-n", "default", user="viewer", check=False)
    assert listed.returncode == 0



LISTED = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: first}
- apiVersion: v1
  kind: Secret
  metadata: {name: second}
- apiVersion: disaggregatedset.x-k8s.io/v1
  kind: DisaggregatedSet
  metadata: {name: listed}
  spec:
    roles:
    - name: prefill
      spec: {leaderWorkerTemplate: {workerTemplate: {spec: {containers: [{name: c, image: i:1}]}}}}
    - name: decode
      spec: {leaderWorkerTemplate: {workerTemplate: {spec: {containers: [{name: c, image: i:1}]}}}}
---
apiVersion: v1
kind: ConfigMapList
items:
- metadata: {name: kind-from-the-list}
---
apiVersion: v1
kind: ServiceList
items: []
"""
NESTED = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  - apiVersion: v1\n" \
         "    kind: Secret\n    metadata: {name: nested}\n"


def _object_names(text: str) -> list[str]:
    from kubectl_disagg.manifests.reader import parse_stream
    return [f"{d.data['kind'].lower()}.{d.data['apiVersion'].split('/')[0]}/{d.data['metadata']['name']}"
            if "/" in d.data["apiVersion"] else f"{d.data['kind'].lower()}/{d.data['metadata']['name']}"
            for d in parse_stream(text, "list.yaml")]


def test_a_list_is_read_into_the_objects_kubectl_reads_from_it(control_plane, namespace):
    """kubectl's resource builder (the oracle) reads a list as its items; so does our reader, and
    render renders the set among them."""
    from kubectl_disagg.errors import UserError
    theirs = control_plane.kubectl("create", "--dry-run=client", "-n", namespace, "-o", "name", "-f", "-",
                                   input=LISTED).stdout.split()
    assert _object_names(LISTED) == theirs == ["configmap/first", "secret/second",
                                               "disaggregatedset.disaggregatedset.x-k8s.io/listed",
                                               "configmap/kind-from-the-list"]
    rendered = subprocess.run([sys.executable, "-m", "kubectl_disagg", "render", "-f", "-", "-n", namespace],
                              input=LISTED, capture_output=True, text=True, check=True).stdout
    assert [kind for kind, _ in names(rendered)].count("LeaderWorkerSet") == 2  # the set inside, rendered
    # A list inside a list: kubectl refuses it, and so do we.
    nested = control_plane.kubectl("create", "--dry-run=client", "-o", "name", "-f", "-", input=NESTED, check=False)
    assert nested.returncode != 0 and "is not a list" in nested.stderr
    with pytest.raises(UserError, match="a list inside a list"):
        _object_names(NESTED)
